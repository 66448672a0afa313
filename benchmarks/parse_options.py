"""Parse only, every way recordkit's reads could parse (issue 30's last target): which one
brings the parse of recordkit's spec nearest the raw ``TFRecordDataset`` read?

    python benchmarks/parse_options.py --records 1500 --passes 21 [--repeat 10] [--json out.json]

Writes issue 30's workload (``benchmarks/_tfdata_fields.py``: a noisy JPEG of 200 to 320
px, 1 s of 16 kHz WAV, a caption, 0 to 6 boxes, a label; one shard) and times, in one
process, every case once a round (the order rotated each round), each pass from its
iterator's creation to its last element: records/s and the process's CPU per record,
every pass printed, with the median and the best. Nothing is decoded in any case; every
case gives the same records in batches of 32.

* raw: ``TFRecordDataset(files).batch(32)``, nothing parsed;
* (a0) the parse-only row before it parsed as recordkit does: the raw batches, then
  ``tf.io.parse_example`` of recordkit's spec in a plain ``map`` of recordkit's parallel
  calls;
* (a1) the raw batches parsed by recordkit's parse (``_tfdata_fields.recordkit_parse``) in
  recordkit's parallel map (``parallel_map``: started without Grappler);
* (a2) the parse-only row (``_tfdata_fields.parse_only``): recordkit's own serialized
  batches, then (a1)'s parse;
* (b) the fused ``tf.data.experimental.parse_example_dataset`` (one op, no function);
* (c) each record parsed alone in recordkit's parallel map, then ``batch(32)`` (the
  shape recordkit's per-record reads take);
* (d) 16, 64 or 128 records parsed a call, the parsed values rebatched to 32;
* (e) (a1) with ``deterministic=False``;
* (f) (a1) without the four stored-size keys (image height, width, channels; audio
  sample count);
* (g) (a1) with 1 or 2 parallel calls instead of one more than the CPUs.

With ``--repeat N``, each pass reads the shard N times under one iterator (the input
repeated before ``batch``), so that what an iterator's start costs (a function optimized
and instantiated) weighs N times less: the cases that read ``TFRecordDataset`` only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the benchmarks package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import _recordkit, _tfdata_fields
from benchmarks._provenance import stamped
from benchmarks._timing import timed_pass

#: The stored sizes recordkit's spec holds next to the image and the audio.
SIZE_KEYS = ("image/height", "image/width", "image/channels", "audio/num_samples")


def cases(root: Path, files: list[Path], batch: int, repeat: int = 1) -> dict[str, Callable[[], Any]]:
    """Each case's name and the function that builds its dataset; with ``repeat`` above 1,
    the cases read from ``TFRecordDataset`` only, each reading the shard ``repeat`` times
    under one iterator (the input repeated before ``batch``)."""
    import tensorflow as tf

    import recordkit as rk
    from recordkit.read._open import open_dataset
    from recordkit.read._shard_stream import read_shards
    from recordkit.read._traced import default_parallel_calls, parallel_map, rebatched

    spec = rk.feature_spec(_recordkit.mixed_schema(_tfdata_fields.CHANNELS))
    sizeless = {key: feature for key, feature in spec.items() if key not in SIZE_KEYS}
    parse = _tfdata_fields.recordkit_parse(root)
    calls = default_parallel_calls()
    autotune = tf.data.AUTOTUNE
    opened = open_dataset(root, "train", None)

    def records() -> Any:
        read = tf.data.TFRecordDataset([str(f) for f in files])
        return read if repeat == 1 else read.repeat(repeat)

    def chunks(size: int) -> Any:  # recordkit's shard read, in chunks of ``size``
        return read_shards(
            opened,
            list(opened.shards),
            block_length=size,
            on_corrupt="raise",
            report=None,
            shuffle_files=False,
            seed=None,
            cycle_length=None,
            deterministic=True,
        )

    def parse_spec(keys: dict[str, Any]) -> Callable[[Any], Any]:
        return lambda serialized: tf.io.parse_example(serialized, keys)

    def mapped(
        dataset: Any, function: Callable[[Any], Any], deterministic: bool = True, calls: int | None = None
    ) -> Any:
        return parallel_map(dataset, function, deterministic=deterministic, calls=calls)

    fused = tf.data.experimental.parse_example_dataset
    out: dict[str, Callable[[], Any]] = {
        "raw TFRecordDataset": lambda: records().batch(batch).prefetch(autotune),
        "(a0) raw batches, plain map": lambda: (
            records().batch(batch).map(parse_spec(spec), num_parallel_calls=calls).prefetch(autotune)
        ),
        "(a1) raw batches, recordkit's map": lambda: mapped(records().batch(batch), parse).prefetch(autotune),
        "(b) parse_example_dataset": lambda: (
            records()
            .batch(batch)
            .apply(fused(spec, num_parallel_calls=calls, deterministic=True))
            .prefetch(autotune)
        ),
        "(c) per record, then batch": lambda: (
            mapped(records(), parse_spec(spec)).batch(batch).prefetch(autotune)
        ),
        "(e) (a1), deterministic=False": lambda: mapped(
            records().batch(batch), parse, deterministic=False
        ).prefetch(autotune),
        "(f) (a1), no stored sizes": lambda: mapped(records().batch(batch), parse_spec(sizeless)).prefetch(
            autotune
        ),
        "(g) (a1), 1 call": lambda: mapped(records().batch(batch), parse, calls=1).prefetch(autotune),
        "(g) (a1), 2 calls": lambda: mapped(records().batch(batch), parse, calls=2).prefetch(autotune),
    }
    if repeat > 1:  # recordkit's own batches read the shard once
        return out
    out["(a2) the parse-only row"] = lambda: _tfdata_fields.parse_only(root, batch)

    def rebatched_from(size: int) -> Callable[[], Any]:
        return lambda: rebatched(mapped(chunks(size), parse), batch).prefetch(autotune)

    for size in (batch // 2, batch * 2, batch * 4):
        out[f"(d) {size} a call, rebatched"] = rebatched_from(size)
    return out


def run(records: int, passes: int, batch: int, scratch: Path, repeat: int = 1) -> dict[str, Any]:
    """Write the workload, check every case reads every record (``repeat`` times), time
    ``passes`` rounds."""
    import tensorflow as tf

    root = scratch / "fields"
    files, _, _ = _tfdata_fields.write_workload(root, records)
    built = {name: build() for name, build in cases(root, files, batch, repeat).items()}
    for name, dataset in built.items():
        seen = sum(int(tf.nest.flatten(element)[0].shape[0]) for element in dataset)
        if seen != records * repeat:
            raise RuntimeError(f"{name} read {seen} records, not {records * repeat}")
    names = list(built)
    times: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in names}
    start = _tfdata_fields.machine()
    for round_ in range(passes):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = timed_pass(built[name])
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
    return {
        "records": records,
        "passes": passes,
        "batch": batch,
        "repeat": repeat,
        "machine_start": start,
        "machine_end": _tfdata_fields.machine(),
        "cases": times,
    }


def table(results: dict[str, Any]) -> str:
    """A Markdown table: records/s (median, best), the ratio to the raw read (median
    against median, best against best), CPU µs a record (median, min), every pass."""
    records, cases_ = results["records"] * results.get("repeat", 1), results["cases"]
    raw = cases_["raw TFRecordDataset"]["wall"]
    lines = [
        "| case | records/s (median) | records/s (best) | vs raw (median) | vs raw (best) "
        "| CPU µs/record (median) | CPU µs/record (min) | every pass (records/s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, times in cases_.items():
        wall, cpu = times["wall"], times["cpu"]
        lines.append(
            f"| {name} | {records / statistics.median(wall):,.0f} | {records / min(wall):,.0f} "
            f"| {statistics.median(raw) / statistics.median(wall):.2f}x | {min(raw) / min(wall):.2f}x "
            f"| {statistics.median(cpu) / records * 1e6:.1f} | {min(cpu) / records * 1e6:.1f} "
            f"| {', '.join(f'{records / s:,.0f}' for s in wall)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--passes", type=int, default=21, help="rounds of every case, alternating")
    parser.add_argument("--batch", type=int, default=_tfdata_fields.BATCH)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="read the shard this many times a pass, one iterator (TFRecordDataset cases only)",
    )
    parser.add_argument("--json", type=Path, help="write every pass here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="parse-options-") as tmp:
        results = run(args.records, args.passes, args.batch, Path(tmp), args.repeat)
    print(f"conditions: {results['machine_start']} -> {results['machine_end']}")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(stamped(results), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
