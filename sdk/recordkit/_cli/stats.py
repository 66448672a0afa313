"""``recordkit stats``: value statistics per field (:mod:`recordkit.tools._field_stats`), as a
table, a JSON file and PNG histograms. Reads with the numpy reader, no TensorFlow, in
one streaming pass with a progress bar on a terminal.

JSON has no NaN or infinity, and the writer accepts both in numbers: a min, max or mean
that is not finite is written as the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``
(:func:`~recordkit.tools._field_stats.json_safe`), so the file stays valid JSON;
histograms draw the finite values."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import numpy as np
from PIL import Image, ImageDraw

from recordkit._cli._common import (
    FILE_TO_WRITE,
    FOLDER_TO_WRITE,
    PATH_OR_URL,
    dataset_at,
    reader_path,
    storage_option,
    table,
)
from recordkit.codec._plugins import default_registry
from recordkit.dataset._manifest import read_manifest
from recordkit.dataset._shards import selected_records
from recordkit.errors import RecordkitError
from recordkit.read._open import bind_to_read, open_dataset
from recordkit.read._shortcuts import iter_records
from recordkit.storage import Location
from recordkit.tools._field_stats import FieldStats, json_safe

__all__ = ["bar_chart", "gather", "stats_command"]


def gather(root: Location, split: str, progress: bool | None = None) -> dict[str, FieldStats]:
    """Every field's statistics over the records of ``split`` of the dataset at ``root``
    (a local folder or a remote dataset's Location)."""
    manifest = read_manifest(root)
    bound = bind_to_read(manifest, default_registry(), split=split)  # with its field groups
    stats = {field.name: FieldStats(field) for field in bound.fields}
    path, options = reader_path(root)
    opened = open_dataset(path, split, storage_options=options, check_sizes=False)  # iter_records checks
    total = selected_records(opened.shards) or 0
    from tqdm.auto import tqdm

    enabled = sys.stderr.isatty() if progress is None else progress
    with tqdm(total=total, desc=f"stats {split}", unit=" rec", disable=not enabled) as bar:
        for position, record in enumerate(iter_records(path, split, storage_options=options)):
            try:
                for name, value in record.items():
                    stats[name].add(value)
            except RecordkitError as exc:
                raise exc.with_context(record=position, split=split) from exc.__cause__
            bar.update(1)
    return stats


def _rows(stats: dict[str, FieldStats]) -> list[list[str]]:
    rows = [["field", "statistic", "value"]]
    for name, field in stats.items():
        data = field.to_json()
        first = True
        for key, value in data.items():
            if key in ("codec", "records"):
                continue
            if isinstance(value, dict) and "count" in value:
                shown = "no values"
                if value["count"]:
                    shown = f"min {value['min']:.4g}  max {value['max']:.4g}  mean {value['mean']:.4g}"
                    shown += f"  (n={value['count']})"
                if value.get("nan"):
                    shown += f"  ({value['nan']} NaN)"
            elif isinstance(value, dict):
                items = list(value.items())
                shown = ", ".join(f"{k}: {v}" for k, v in items[:8]) + (
                    f" ... ({len(items)} in all)" if len(items) > 8 else ""
                )
            else:
                shown = f"{value} of {field.records} records" if key == "present" else str(value)
            rows.append([f"{name} ({field.codec})" if first else "", key, shown])
            first = False
        if first:
            rows.append([f"{name} ({field.codec})", "records", str(field.records)])
    return rows


def bar_chart(title: str, labels: list[str], counts: list[float], width: int = 640) -> Image.Image:
    """A bar chart drawn with Pillow: one bar per label, its count above it."""
    height = 260
    picture = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(picture)
    draw.text((8, 4), title, fill=(20, 20, 20))
    top = max(counts) if counts else 1
    slot = (width - 20) / max(len(counts), 1)
    for i, (label, count) in enumerate(zip(labels, counts, strict=True)):
        bar = 0 if not top else (height - 70) * count / top
        x0 = 10 + i * slot
        draw.rectangle((x0 + 1, height - 30 - bar, x0 + max(slot - 2, 1), height - 30), fill=(0, 110, 190))
        if slot >= 28:
            draw.text((x0 + 2, height - 26), label[: int(slot // 6)], fill=(20, 20, 20))
            draw.text((x0 + 2, height - 44 - bar), f"{count:g}", fill=(20, 20, 20))
    return picture


def _plots(stats: dict[str, FieldStats], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, field in stats.items():
        for key, counter in field.counters.items():
            items = counter.most_common(40)
            path = folder / f"{name}-{key}.png"
            bar_chart(f"{name}: {key}", [k for k, _ in items], [float(v) for _, v in items]).save(path)
            written.append(path)
        for key, summary in field.summaries.items():
            if not summary.sample:
                continue
            values = np.asarray(summary.sample)
            values = values[np.isfinite(values)]
            if not values.size:
                continue
            bins = min(30, max(1, len(np.unique(values))))
            counts, edges = np.histogram(values, bins=bins)
            labels = [f"{edges[i]:.3g}" for i in range(len(counts))]
            path = folder / f"{name}-{key}.png"
            bar_chart(f"{name}: {key} (histogram)", labels, [float(c) for c in counts]).save(path)
            written.append(path)
    return written


@click.command("stats", short_help="Value statistics per field: table, JSON, histograms.")
@click.argument("dataset", type=PATH_OR_URL)
@storage_option
@click.option(
    "-s", "--split", default="train", show_default=True, help="The split (or a slice: train[:10%])."
)
@click.option(
    "--json",
    "json_file",
    type=FILE_TO_WRITE,
    help="Also write the statistics as JSON.",
)
@click.option(
    "--plots",
    type=FOLDER_TO_WRITE,
    help="Also draw PNG histograms into this folder.",
)
@click.option("--progress/--no-progress", default=None, help="Show a progress bar (default: on a terminal).")
def stats_command(
    dataset: str,
    storage_options: tuple[str, ...],
    split: str,
    json_file: Path | None,
    plots: Path | None,
    progress: bool | None,
) -> None:
    """Print value statistics of every field of DATASET's split: class histograms, image
    sizes and channels, audio durations, text lengths, boxes per record and box sizes,
    mask pixels per class, optional-field presence, and min, max and mean of numbers.
    DATASET is a dataset folder (or its dataset.json), or a remote URL (s3://, gs:// ...);
    the JSON file and the plots are written locally."""
    root = dataset_at(dataset, storage_options)
    stats = gather(root, split, progress)
    records = next(iter(stats.values())).records if stats else 0
    click.echo(f"{root} split {split!r}: {records} records")
    click.echo(table(_rows(stats)))
    if json_file is not None:
        report: dict[str, Any] = {"dataset": str(root), "split": split, "records": records}
        report["fields"] = {name: field.to_json() for name, field in stats.items()}
        json_file.write_text(
            json.dumps(json_safe(report), indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        click.echo(f"json: {json_file}")
    if plots is not None:
        written = _plots(stats, plots)
        click.echo(f"plots: {len(written)} PNG files in {plots}")
