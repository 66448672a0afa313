"""``recordkit ingest KIND INPUT OUT``: a source (a folder, COCO, VOC, a CSV ...) written
as a dataset in one command.

The source's proposed schema is used unless ``--schema`` gives one, and is saved as
``OUT/schema.yaml`` to edit and pass back. Records go to one split (``--split``) or are
spread over several by ``--split-ratio train=0.9,validation=0.1``: each record's split
follows from a hash of the seed and the record's key (its file name, its COCO image
id ...), so the same input and seed give the same splits on every run and machine, and
adding inputs does not move the others. A progress bar runs while writing (on a
terminal); a summary closes: records and bytes per split, bytes per field, rejects.

OUT (and ``--schema``) may be a remote URL (``s3://``, ``gs://`` ..., with
``--storage-option``); INPUT is read by the source through local files, so it must be
local.

The command cannot destroy its inputs: an OUT that is INPUT (or a path given as an
option), holds it, or lies inside it is refused before anything is written. An ingest
into a place that holds no dataset either finishes or leaves nothing behind, so that the
same command runs again as it was (:mod:`recordkit.tools._output`). ``--append`` and
``--resume`` are the writer's ``append=True`` and ``resume=True``; errors give the
writer's advice in these options' words (:data:`INGEST_WORDS`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import click
import yaml

from recordkit._cli._card import card_options
from recordkit._cli._common import (
    FILE_OR_URL,
    PATH_OR_URL,
    local_input,
    output_at,
    parse_storage_options,
    storage_option,
    table,
)
from recordkit._cli.inspect import field_bytes, sample_records
from recordkit._units import human_bytes
from recordkit.codec._plugins import default_registry
from recordkit.dataset._manifest import Manifest, read_manifest
from recordkit.errors import DatasetError
from recordkit.read._open import bind_to_read
from recordkit.schema._card import card_with
from recordkit.schema._schema import Schema
from recordkit.sources._base import Source
from recordkit.sources._registry import default_sources
from recordkit.storage import Location, is_remote
from recordkit.tools._output import FreshOutput, refuse_overlap
from recordkit.write._writer import DatasetWriter

__all__ = ["INGEST_WORDS", "ingest_command", "make_source", "parse_options", "parse_ratios", "split_of"]

#: The writer's advice (Python keywords) as ``recordkit ingest`` says it.
INGEST_WORDS = {
    "append=True": "--append",
    "resume=True": "--resume",
    "overwrite=True": "--overwrite",
    "or pass wait=True to wait for the lock": "then run the command again",
}

#: Rejects listed in the summary (the rest are counted, and in the rejects files).
SHOWN_REJECTS = 10
#: Records whose bytes the summary measures field by field: every record up to this
#: many, else a sample this size (the first records of evenly spread shards), said so.
MEASURED_RECORDS = 2000


def parse_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs as keyword options; values are read as YAML (``true``, ``3``,
    ``[a, b]``), paths and other text stay strings."""
    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE", param_hint="--opt")
        options[name.strip()] = yaml.safe_load(value) if value.strip() else ""
    return options


def make_source(kind: str, input: Path, options: dict[str, Any], on_error: str = "raise") -> Source:
    """The source ``kind`` of the registered ones, made from ``input`` and ``options``."""
    factory = default_sources().info(kind).factory
    try:
        return factory(input, on_error=on_error, **options)
    except TypeError as exc:
        raise click.UsageError(f"source {kind!r}: {exc} (pass its options as --opt NAME=VALUE)") from None


def parse_ratios(text: str) -> dict[str, float]:
    """``train=0.9,validation=0.1`` as split names and their shares (summing to 1)."""
    ratios: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        try:
            share = float(value)
        except ValueError:
            share = -1.0
        if not sep or not name.strip() or share < 0:
            raise click.BadParameter(
                f"{part!r} is not NAME=SHARE (e.g. train=0.9)", param_hint="--split-ratio"
            )
        ratios[name.strip()] = share
    total = sum(ratios.values())
    if total <= 0:
        raise click.BadParameter("the shares must add up to more than 0", param_hint="--split-ratio")
    return {name: share / total for name, share in ratios.items()}


def split_of(key: str, ratios: dict[str, float], seed: int) -> str:
    """The split of the record with ``key``: a point in [0, 1) from the sha256 of the seed
    and the key, placed among the splits' cumulative shares."""
    digest = hashlib.sha256(f"{seed}\0{key}".encode()).digest()
    point = int.from_bytes(digest[:8], "big") / 2**64
    total = 0.0
    for name, share in ratios.items():
        total += share
        if point < total:
            return name
    return next(reversed(ratios))


@click.command("ingest", short_help="Write a folder, COCO, VOC, CSV ... as a dataset.")
@click.argument("kind")
@click.argument("input", type=PATH_OR_URL)
@click.argument("out")
@storage_option
@click.option(
    "--opt", "options", multiple=True, metavar="NAME=VALUE", help="An option of the source (repeatable)."
)
@click.option(
    "--schema",
    "schema_file",
    type=FILE_OR_URL,
    help="The schema to write with (default: the source's proposal, saved as OUT/schema.yaml).",
)
@click.option("--split", default="train", show_default=True, help="The split to write every record to.")
@click.option(
    "--split-ratio",
    metavar="NAME=SHARE,...",
    help="Spread records over splits, e.g. train=0.9,validation=0.1.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --split-ratio's assignment.")
@click.option(
    "--workers", type=click.IntRange(min=0), default=0, show_default=True, help="Encoding processes."
)
@click.option(
    "--on-error",
    type=click.Choice(["raise", "skip"]),
    default="raise",
    show_default=True,
    help="skip: leave bad inputs and bad records out, and list them.",
)
@click.option(
    "--overwrite", is_flag=True, help="Replace a dataset already at OUT (the old one stays until done)."
)
@click.option("--append", is_flag=True, help="Add the records (or new splits) to the dataset already at OUT.")
@click.option(
    "--resume",
    is_flag=True,
    help="Finish an interrupted ingest into OUT: run the same command (same INPUT) with --resume.",
)
@click.option("--progress/--no-progress", default=None, help="Show a progress bar (default: on a terminal).")
@card_options
def ingest_command(
    kind: str,
    input: str,
    out: str,
    storage_options: tuple[str, ...],
    options: tuple[str, ...],
    schema_file: str | None,
    split: str,
    split_ratio: str | None,
    seed: int,
    workers: int,
    on_error: str,
    overwrite: bool,
    append: bool,
    resume: bool,
    progress: bool | None,
    card: dict[str, Any],
) -> None:
    """Read INPUT with the source KIND (built in: image_folder, audio_folder, coco,
    pascal_voc, jsonl, csv, parquet, hf; plugins add more, and an unknown KIND lists them all) and
    write its records as the dataset OUT (a local folder, or a remote URL: s3://,
    gs:// ...; INPUT is local).

    Bad inputs (a missing file, a box outside its image, a malformed row) stop the
    ingest with an error naming the file and the line or entry; with --on-error skip
    they are left out and listed in the summary.

    The card options (--license, --citation, --homepage, --author, --description,
    --version-notes) each replace that entry of the dataset's card: the one the schema
    file declares, or with --append or --resume the one OUT has; the others are kept.
    """
    if overwrite and (append or resume):
        raise click.UsageError(
            "--overwrite replaces the dataset at OUT: it cannot be combined with --append or --resume"
        )
    source_options = parse_options(options)
    input_path = local_input(input, "INPUT")
    where = output_at(out, storage_options)
    refuse_overlap(where, {"INPUT": input_path, **_option_paths(source_options)})
    source = make_source(kind, input_path, source_options, on_error)
    registry = default_registry()
    if schema_file:
        file_options = parse_storage_options(storage_options)
        schema = Schema.load(schema_file, registry=registry, storage_options=file_options)
    else:
        schema = source.schema(name=where.name)
    ratios = parse_ratios(split_ratio) if split_ratio else None
    keys: dict[int, str] = {}

    def key_of(record: Any) -> str:
        return keys.get(id(record), "?")

    fresh = FreshOutput.at(where)  # (an overwrite of nothing in a bucket is written in place)
    existing = None if fresh is not None or overwrite else read_manifest(where)
    before = 0 if existing is None else _records(existing)
    # The entries given, over the card the dataset would get without them; checked here,
    # before anything is written.
    stored_card = existing.card if existing is not None else None
    given_card = card_with(stored_card or schema.card, card) if card else None
    try:
        writer = DatasetWriter(
            where.url,
            schema,
            storage_options=where.storage_options or None,
            workers=workers,
            on_error="skip" if on_error == "skip" else "raise",
            key=key_of,
            overwrite=overwrite,
            append=append,
            resume=resume,
            progress=progress,
            registry=registry,
            card=given_card,
        )
    except ValueError as exc:  # a refused option (overwriting a bucket's root ...): the user's to fix
        raise DatasetError(str(exc), file=str(where)) from exc
    try:
        with writer:
            for item in source.items():
                keys[id(item.record)] = item.key
                writer.write(item.record, split_of(item.key, ratios, seed) if ratios else split)
                del keys[id(item.record)]
    except BaseException:
        if fresh is not None:
            fresh.undo()
        raise
    manifest = writer.manifest
    saved = None
    if schema_file is None and not append:
        saved = where.join("schema.yaml")
        saved.write_bytes(schema.dumps().encode("utf-8"))
    _summary(where, manifest, source, saved, registry, _records(manifest) - before)


def _option_paths(options: dict[str, Any]) -> dict[str, Path]:
    """The source's options that name local files or folders (``images_dir`` ...)."""
    return {
        f"--opt {name}": Path(value)
        for name, value in options.items()
        if isinstance(value, str) and value and not is_remote(value) and Path(value).exists()
    }


def _records(manifest: Manifest) -> int:
    """The records the complete shards of every split hold."""
    return sum(shard.records for info in manifest.splits.values() for shard in info.shards)


def _summary(
    out: Location, manifest: Any, source: Source, saved: Location | None, registry: Any, ingested: int
) -> None:
    splits = list(manifest.splits)
    rows = [["split", "records", "shards", "bytes", "rejected"]]
    for name in splits:
        info = manifest.splits[name]
        rows.append(
            [
                name,
                str(sum(s.records for s in info.shards)),
                str(len(info.shards)),
                human_bytes(sum(s.bytes for s in info.shards)),
                str(info.rejected),
            ]
        )
    total = sum(int(row[1]) for row in rows[1:])
    click.echo(f"ingested {ingested} records into {out} ({source.kind} source)")
    click.echo(table(rows, right={1, 2, 3, 4}))
    bound = bind_to_read(manifest, registry)
    breakdown = field_bytes(bound, sample_records(out, manifest, splits, min(total, MEASURED_RECORDS)))
    if breakdown["records"]:
        click.echo("")
        measured = breakdown["records"]
        if measured == total:
            click.echo(f"bytes per field, over all {total} records:")
        else:
            click.echo(
                f"bytes per field, over a sample of {measured} of {total} records "
                "(the first records of evenly spread shards):"
            )
        field_rows = [["field", "bytes", "share"]]
        for part, size in breakdown["fields"].items():
            share = f"{100 * size / breakdown['bytes']:.1f}%" if breakdown["bytes"] else "-"
            field_rows.append([part, human_bytes(size), share])
        click.echo(table(field_rows, right={1, 2}))
    skipped = source.skipped
    written_rejects = sum(manifest.splits[name].rejected for name in splits)
    if skipped or written_rejects:
        click.echo("")
        click.echo(
            f"rejected: {len(skipped)} input(s) by the source, {written_rejects} record(s) by the codecs"
        )
        for item in skipped[:SHOWN_REJECTS]:
            click.echo(f"  - {item}")
        if len(skipped) > SHOWN_REJECTS:
            click.echo(f"  ... and {len(skipped) - SHOWN_REJECTS} more")
        for name in splits:
            if manifest.splits[name].rejects_file:
                click.echo(f"  records the codecs refused: {out.join(manifest.splits[name].rejects_file)}")
    if saved is not None:
        click.echo(f"schema: {saved} (the source's proposal; edit it and pass --schema to change it)")
