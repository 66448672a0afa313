"""The stability check (issue 19): the same write, run after run, every run reported.

A median hides a writer that is fast in some runs and half as fast in others (two
threads convoying on the GIL did exactly that). Here each writer writes the issue's
mixed workload (JPEG 200 to 320 px, 1 s of WAV, a caption, 0 to 6 boxes, a label)
``stability_runs`` times, the writers alternating run by run, and every run's
records/s is kept, with the minimum and the median. Three writers: recordkit with
``durable=False`` (what TFRecordWriter guarantees), recordkit's default (durable) with
shards small enough that several are completed (each fsync overlapping the next
shard's encoding), and the hand-written ``tf.train.Example`` writer.

The raw-image workload (the write suite's raw arrays, encoded as JPEG by each writer)
runs the same way, recordkit with ``durable=False`` against the hand-written writer:
there the image encoder dominates, and the issue asks that the writer's changes cost
it nothing, run after run.
"""

from __future__ import annotations

import dataclasses
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks import _data, _handwritten, _recordkit
from benchmarks._config import Size

if TYPE_CHECKING:
    import numpy as np

__all__ = ["STABILITY_SIDES", "StabilityRow", "run_stability_suite"]

#: The sides of the issue's JPEGs, in pixels.
STABILITY_SIDES = (200, 320)
#: Shard size of the durable run: several shards at the full size (1,500 records of ~60 KB).
DURABLE_SHARD_BYTES = 16 << 20


@dataclasses.dataclass
class StabilityRow:
    """One writer's runs (JSON-ready through ``asdict``)."""

    contender: str
    records: int
    #: ``mixed`` (the issue's workload) or ``raw-jpeg`` (encoder-bound).
    workload: str = "mixed"
    records_per_s: list[float] = dataclasses.field(default_factory=list)
    min_records_per_s: float = 0.0
    median_records_per_s: float = 0.0
    shards: int = 0


def _writers(mixed: list[_data.MixedRecord]) -> dict[str, Callable[[Path], list[Path]]]:
    schema = _recordkit.mixed_schema()

    def recordkit(out: Path, durable: bool, shard_bytes: int | None) -> list[Path]:
        records = (_recordkit.mixed_record(r) for r in mixed)
        return _recordkit.write(records, schema, out, durable=durable, shard_bytes=shard_bytes)

    return {
        "recordkit (durable=False)": lambda out: recordkit(out, False, None),
        "recordkit (durable, 16 MB shards)": lambda out: recordkit(out, True, DURABLE_SHARD_BYTES),
        "hand-written": lambda out: _handwritten.write_mixed(mixed, out),
    }


def _raw_writers(raw: list[tuple[np.ndarray, int]]) -> dict[str, Callable[[Path], list[Path]]]:
    schema = _recordkit.raw_schema("jpeg")

    def recordkit(out: Path) -> list[Path]:
        records = ({"image": image, "label": label} for image, label in raw)
        return _recordkit.write(records, schema, out, durable=False)

    return {
        "recordkit (durable=False)": recordkit,
        "hand-written": lambda out: _handwritten.write_raw(raw, out, "jpeg"),
    }


def run_stability_suite(size: Size, scratch: Path, log: Callable[[str], None]) -> list[StabilityRow]:
    """Each workload (mixed, then raw-jpeg): every writer once untimed (warm-up), then
    ``size.stability_runs`` rounds of one timed run each, alternating."""
    mixed = _data.mixed_records(size.stability_records, seed=19, sides=STABILITY_SIDES)
    raw = _data.raw_image_records(size.raw_records, size.raw_side)
    rows = _alternate("mixed", len(mixed), _writers(mixed), size.stability_runs, scratch / "stability")
    rows += _alternate("raw-jpeg", len(raw), _raw_writers(raw), size.stability_runs, scratch / "stability")
    for row in rows:
        runs = " ".join(f"{v:,.0f}" for v in row.records_per_s)
        log(
            f"  stability {row.workload:8} {row.contender:34} runs {runs} rec/s; "
            f"min {row.min_records_per_s:,.0f}"
        )
    return rows


def _alternate(
    workload: str, records: int, writers: dict[str, Callable[[Path], list[Path]]], runs: int, scratch: Path
) -> list[StabilityRow]:
    """One workload's rows: a warm-up of each writer, then ``runs`` rounds of one timed
    run of each, in turn."""
    rows = {name: StabilityRow(name, records, workload) for name in writers}
    for name, write in writers.items():  # warm-up
        out = scratch / workload / "warm-up" / name.replace(" ", "_")
        out.mkdir(parents=True)
        rows[name].shards = len(write(out))
    for run in range(runs):
        for name, write in writers.items():
            out = scratch / workload / str(run) / name.replace(" ", "_")
            out.mkdir(parents=True)
            start = time.perf_counter()
            write(out)
            rows[name].records_per_s.append(records / (time.perf_counter() - start))
            shutil.rmtree(out)
    for row in rows.values():
        row.min_records_per_s = min(row.records_per_s)
        row.median_records_per_s = statistics.median(row.records_per_s)
    return list(rows.values())
