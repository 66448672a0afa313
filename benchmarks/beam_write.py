"""The Beam writer on the DirectRunner against the local writer, on the mixed workload.

    python benchmarks/beam_write.py --records 1500 --repeats 5 --out benchmarks/out/beam_write.json

Both write the same mixed records (JPEG of varying size, 1 s WAV, caption, boxes,
label) into a fresh dataset with the same shard size target:

* ``local (workers=2)``: ``rk.write_dataset(..., workers=2)``, two encoding processes;
* ``beam DirectRunner (2 processes)``: ``rk.beam.WriteDataset`` on the DirectRunner with
  ``direct_num_workers=2, direct_running_mode=multi_processing``;
* ``beam DirectRunner (in memory)``: the same pipeline in the calling process (one
  worker), which shows what the runner itself costs apart from its processes.

Each timed repetition starts from nothing (the dataset deleted untimed after it), so
the Beam figures include starting the pipeline and its worker processes, as a user
pays them. Every repetition is reported, with the fastest and the median.

The DirectRunner is Beam's local test runner, not a production runner: it runs every
bundle through Beam's portability machinery on one machine, and is much slower than
Dataflow, Flink or Spark spread over many. These figures say what the Beam path costs
on one machine (a lower bound on its overhead per record), not what a cluster does.
Timing on a busy machine is noise: the figures for docs/performance.md come from a
quiet one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import recordkit as rk
from benchmarks._data import MixedRecord, mixed_records
from benchmarks._provenance import stamped
from benchmarks._recordkit import mixed_schema
from benchmarks._timing import Case, measure

LOCAL = "local (workers=2)"
BEAM_PROCESSES = "beam DirectRunner (2 processes)"
BEAM_IN_MEMORY = "beam DirectRunner (in memory)"


def save_inputs(records: list[MixedRecord], folder: Path) -> list[str]:
    """Each record as the files a real pipeline reads: ``N.jpg``, ``N.wav`` and ``N.json``
    (caption, boxes, labels); returns the records' path stems. ``beam.Create`` of the
    records themselves would pickle (and bz2-compress) all 68 MB of them into the
    pipeline's graph, which measured most of a DirectRunner run."""
    folder.mkdir(parents=True, exist_ok=True)
    stems = []
    for i, record in enumerate(records):
        stem = folder / str(i)
        stem.with_suffix(".jpg").write_bytes(record.jpeg)
        stem.with_suffix(".wav").write_bytes(record.wav)
        rest = {
            "caption": record.caption,
            "boxes": record.boxes.tolist(),
            "box_dtype": str(record.boxes.dtype),
            "box_labels": np.asarray(record.box_labels).tolist(),
            "label": record.label,
        }
        stem.with_suffix(".json").write_text(json.dumps(rest), encoding="utf-8")
        stems.append(str(stem))
    return stems


def load_input(stem: str) -> dict[str, Any]:
    """The record saved under ``stem`` by :func:`save_inputs`, as recordkit takes it
    (what ``mixed_record`` gives; self-contained, so that Beam's worker processes can
    unpickle it without the benchmarks package on their path)."""
    path = Path(stem)
    rest = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    return {
        "image": path.with_suffix(".jpg").read_bytes(),
        "audio": path.with_suffix(".wav").read_bytes(),
        "caption": rest["caption"],
        "boxes": {
            "boxes": np.asarray(rest["boxes"], dtype=rest["box_dtype"]).reshape(-1, 4),
            "labels": np.asarray(rest["box_labels"], dtype=np.int64),
        },
        "label": rest["label"],
    }


def _beam_write(stems: list[str], root: Path, shard_bytes: int, *, processes: bool) -> None:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(
        flags=[],
        runner="DirectRunner",
        direct_num_workers=2 if processes else 1,
        direct_running_mode="multi_processing" if processes else "in_memory",
    )
    with beam.Pipeline(options=options) as p:
        records = p | beam.Create(stems) | beam.Map(load_input)
        _ = records | rk.beam.WriteDataset(root, mixed_schema(), shard_bytes=shard_bytes)


def _case(write: Callable[[Path], object], root: Path, expected: int) -> Case:
    def run() -> None:
        shutil.rmtree(root, ignore_errors=True)  # the warm-up pass has no cleanup
        write(root)
        written = rk.Manifest.load(root).split("train").num_records
        if written != expected:
            raise RuntimeError(f"{root}: {written} records written, {expected} expected")

    return Case(run=run, cleanup=lambda: shutil.rmtree(root, ignore_errors=True))


def run(count: int, repeats: int, shard_bytes: int, root: Path) -> dict[str, Any]:
    records = mixed_records(count)
    stems = save_inputs(records, root / "inputs")
    cases = {
        LOCAL: _case(
            lambda path: rk.write_dataset(
                (load_input(stem) for stem in stems),
                path,
                mixed_schema(),
                workers=2,
                shard_bytes=shard_bytes,
                progress=False,
            ),
            root / "local",
            count,
        ),
        BEAM_PROCESSES: _case(
            lambda path: _beam_write(stems, path, shard_bytes, processes=True), root / "beam-mp", count
        ),
        BEAM_IN_MEMORY: _case(
            lambda path: _beam_write(stems, path, shard_bytes, processes=False), root / "beam-mem", count
        ),
    }
    timings = measure(cases, repeats=repeats)
    rk.write_dataset(
        (load_input(stem) for stem in stems),
        root / "size",
        mixed_schema(),
        shard_bytes=shard_bytes,
        progress=False,
    )
    total_bytes = rk.Manifest.load(root / "size").split("train").num_bytes
    return {
        "records": count,
        "bytes": total_bytes,
        "shard_bytes": shard_bytes,
        "repeats": repeats,
        "note": "the DirectRunner is Beam's local test runner, not a production runner",
        "writers": {
            name: {
                "seconds": list(t.seconds),
                "min_seconds": min(t.seconds),
                "median_seconds": statistics.median(t.seconds),
                "records_per_s_at_median": count / t.median if t.median else None,
            }
            for name, t in timings.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1500, help="mixed records to write (default 1500)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions of each writer")
    parser.add_argument("--shard-mb", type=float, default=16, help="shard size target in MiB (default 16)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="recordkit-beam-bench-") as tmp:
        result = run(args.records, args.repeats, int(args.shard_mb * 2**20), Path(tmp))
    print(f"{result['records']} mixed records, {result['bytes'] / 2**20:.1f} MiB; {result['note']}")
    for name, figures in result["writers"].items():
        every = ", ".join(f"{s:.2f}" for s in figures["seconds"])
        print(
            f"  {name:34s} min {figures['min_seconds']:7.2f} s  median {figures['median_seconds']:7.2f} s"
            f"  (every run: {every})"
        )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(stamped(result), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
