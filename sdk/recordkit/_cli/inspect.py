"""``recordkit inspect``: what a dataset holds, and where its bytes go.

The summary comes from ``dataset.json`` alone (schema, codecs, splits, shards, records,
bytes). The per-field byte breakdown reads a sample of records, spread over the shards,
and charges each record's bytes to its fields with :func:`recordkit.byte_breakdown`;
it needs the dataset's codecs installed, and is left out (with the reason) when they
are not. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

import click

from recordkit._cli._common import dataset_at, split_option, storage_option, table
from recordkit._units import human_bytes
from recordkit.codec._plugins import default_registry
from recordkit.dataset._breakdown import byte_breakdown
from recordkit.dataset._detect import load_manifest
from recordkit.dataset._manifest import Manifest, ShardInfo
from recordkit.dataset._paths import member
from recordkit.errors import ManifestError, RecordkitError
from recordkit.format._tfrecord import FRAMING_BYTES, Compression, iter_tfrecords
from recordkit.read._open import bind_to_read
from recordkit.schema._schema import BoundSchema
from recordkit.storage import Location, PathOrUrl, location

__all__ = ["dataset_summary", "field_bytes", "inspect_command", "sample_records"]


def _selected_splits(manifest: Manifest, splits: Sequence[str]) -> list[str]:
    for name in splits:
        manifest.split(name)  # ManifestError listing the splits there are
    return list(dict.fromkeys(splits)) if splits else list(manifest.splits)


def dataset_summary(root: Location, manifest: Manifest, splits: Sequence[str]) -> dict[str, Any]:
    """What the manifest says about the dataset at ``root``, as JSON-ready data."""
    schema = manifest.schema
    split_rows = {}
    for name in splits:
        info = manifest.splits[name]
        split_rows[name] = {
            "shards": len(info.shards),
            "records": info.num_records,
            "bytes": info.num_bytes,
            "rejected": info.rejected,
            "unfinished": info.unfinished is not None,
        }
    return {
        "path": str(root),
        "format": manifest.format,
        "recordkit_version": manifest.recordkit_version,
        "created": manifest.created,
        "schema": {
            "name": schema.name,
            "version": schema.version,
            "fingerprint": manifest.fingerprint,
            "fields": {name: spec.codec for name, spec in schema.fields.items()},
        },
        "compression": manifest.compression or "none",
        "codecs": {name: prov.model_dump(exclude_none=True) for name, prov in manifest.codecs.items()},
        "splits": split_rows,
        "card": manifest.card.model_dump(mode="json", exclude_defaults=True) if manifest.card else None,
    }


def sample_records(
    root: PathOrUrl | Location, manifest: Manifest, splits: Sequence[str], limit: int
) -> Iterator[bytes]:
    """Up to ``limit`` serialized records, taken from the start of evenly spread shards
    of the dataset at ``root`` (a path or URL, or its Location): every record when the
    splits hold no more than ``limit``.

    Each shard gives an equal share, and what a short shard cannot give is taken from
    the others. Reading stops as soon as enough records are read: the shards' heads,
    not the whole dataset. CRCs are checked as the records are read.
    """
    shards: list[ShardInfo] = [s for name in splits for s in manifest.splits[name].shards if s.records]
    if limit <= 0 or not shards:
        return
    if len(shards) > limit:
        shards = [shards[i * len(shards) // limit] for i in range(limit)]
    compression = Compression.parse(manifest.compression)
    root = location(root)
    for shard, quota in zip(shards, _quotas([s.records for s in shards], limit), strict=True):
        path = member(root, shard.file)
        if not path.is_file():
            raise ManifestError("listed in the manifest but missing on disk", shard=shard.file)
        for _, data in itertools.islice(iter_tfrecords(path, compression), quota):
            yield data


def _quotas(sizes: Sequence[int], limit: int) -> list[int]:
    """How many records to take from each shard of ``sizes`` records: ``limit`` in all
    (or every record, when they hold fewer), spread as evenly as the sizes allow."""
    quotas = [0] * len(sizes)
    left = limit
    for done, i in enumerate(sorted(range(len(sizes)), key=lambda i: sizes[i])):
        quotas[i] = min(sizes[i], -(-left // (len(sizes) - done)))
        left -= quotas[i]
    return quotas


def field_bytes(bound: BoundSchema, records: Iterator[bytes]) -> dict[str, Any]:
    """The byte breakdown summed over ``records``: per field (and framing), in total."""
    totals: dict[str, int] = {}
    count = 0
    for data in records:
        for part, size in byte_breakdown(bound, data).items():
            totals[part] = totals.get(part, 0) + size
        count += 1
    return {"records": count, "bytes": sum(totals.values()), "fields": totals}


def _breakdown(root: Location, manifest: Manifest, splits: Sequence[str], sample: int) -> dict[str, Any]:
    try:
        bound = bind_to_read(manifest, default_registry())
    except RecordkitError as exc:  # a codec is not installed: the summary still helps
        return {"error": f"no byte breakdown: {exc}"}
    return field_bytes(bound, sample_records(root, manifest, splits, sample))


def _print_summary(summary: dict[str, Any]) -> None:
    schema = summary["schema"]
    click.echo(f"dataset      {summary['path']}")
    click.echo(f"schema       {schema['name']}, version {schema['version']}")
    click.echo(f"fingerprint  {schema['fingerprint']}")
    click.echo(f"written by   recordkit {summary['recordkit_version']}, {summary['created']}")
    click.echo(f"compression  {summary['compression']}")
    _print_card(summary["card"])
    click.echo("")
    codec_rows = [["codec", "version", "distribution", "fields"]]
    for name, prov in summary["codecs"].items():
        dist = prov.get("distribution") or "(in-process)"
        if prov.get("distribution_version"):
            dist = f"{dist} {prov['distribution_version']}"
        fields = ", ".join(f for f, codec in schema["fields"].items() if codec == name)
        codec_rows.append([name, prov["version"], dist, fields])
    click.echo(table(codec_rows))
    click.echo("")
    split_rows = [["split", "shards", "records", "bytes", "rejected"]]
    for name, info in summary["splits"].items():
        label = f"{name} (unfinished write)" if info["unfinished"] else name
        split_rows.append(
            [
                label,
                str(info["shards"]),
                str(info["records"]),
                human_bytes(info["bytes"]),
                str(info["rejected"]),
            ]
        )
    if len(summary["splits"]) > 1:
        totals = [sum(info[k] for info in summary["splits"].values()) for k in ("shards", "records", "bytes")]
        rejected = sum(info["rejected"] for info in summary["splits"].values())
        split_rows.append(["total", str(totals[0]), str(totals[1]), human_bytes(totals[2]), str(rejected)])
    if len(split_rows) == 1:
        click.echo("no splits")
    else:
        click.echo(table(split_rows, right={1, 2, 3, 4}))


#: The card's entries as ``inspect`` shows them, one line each (citation and notes: their first line).
_CARD_LABELS = {
    "license": "license",
    "homepage": "homepage",
    "authors": "authors",
    "description": "description",
    "version_notes": "version notes",
    "citation": "citation",
}


def _print_card(card: dict[str, Any] | None) -> None:
    if not card:
        return
    click.echo("")
    for key, label in _CARD_LABELS.items():
        value = card.get(key)
        if not value:
            continue
        text = ", ".join(value) if isinstance(value, list) else str(value)
        lines = text.strip().splitlines()
        more = f" (+{len(lines) - 1} lines; --json shows all)" if len(lines) > 1 else ""
        click.echo(f"{label:<12} {lines[0]}{more}")


def _print_breakdown(breakdown: dict[str, Any]) -> None:
    click.echo("")
    if "error" in breakdown:
        click.echo(breakdown["error"])
        return
    count = breakdown["records"]
    if not count:
        click.echo("no records to break down")
        return
    total = breakdown["bytes"]
    click.echo(f"bytes per field, over a sample of {count} record{'s' * (count != 1)}:")
    rows = [["field", "per record", "share"]]
    for part, size in breakdown["fields"].items():
        rows.append([part, human_bytes(size / count), f"{100 * size / total:.1f}%" if total else "-"])
    rows.append(["total", human_bytes(total / count), "100.0%"])
    click.echo(table(rows, right={1, 2}))
    click.echo(f"(each record also takes {FRAMING_BYTES} bytes of TFRecord framing in its shard)")


@click.command("inspect", short_help="Summarise a dataset and show its bytes per field.")
@click.argument("dataset")  # a folder or URL: the manifest says what is wrong
@split_option
@storage_option
@click.option(
    "--sample",
    type=click.IntRange(min=0),
    default=100,
    show_default=True,
    help="How many records the per-field byte breakdown reads (0: none).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def inspect_command(
    dataset: str, splits: tuple[str, ...], storage_options: tuple[str, ...], sample: int, as_json: bool
) -> None:
    """Summarise DATASET: schema, codecs, splits, shards, records, bytes per field.

    DATASET is a dataset folder (or its dataset.json), or a remote URL (s3://, gs:// ...).
    The byte breakdown charges every
    byte of a sample of records to the field that owns it, so you can see which field
    to shrink (for example, images stored as raw pixels instead of encoded bytes).
    """
    root = dataset_at(dataset, storage_options)
    manifest = load_manifest(root)
    chosen = _selected_splits(manifest, splits)
    summary = dataset_summary(root, manifest, chosen)
    breakdown = _breakdown(root, manifest, chosen, sample) if sample else None
    if as_json:
        click.echo(json.dumps({**summary, "breakdown": breakdown}, indent=2))
        return
    _print_summary(summary)
    if breakdown is not None:
        _print_breakdown(breakdown)
