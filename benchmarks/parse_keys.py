"""Parse only with other layouts (issue 13): which wire layout brings
``tf.io.parse_example`` near the raw ``TFRecordDataset`` read?

    python benchmarks/parse_keys.py --records 1500 --passes 6 --repeats 7

The reader-speed workload (JPEG of 200 to 320 pixels a side, 1 s of 16 kHz WAV, a
caption, 0 to 6 labelled boxes, a class label) is written by recordkit, then its records
are re-encoded with fewer keys. Each layout is parsed as the reader-speed parse row does
(``batch(32)``, then ``tf.io.parse_example`` in a parallel map), against the raw read of
the same file, in one process with the repetitions interleaved, each pass timed without its iterator's
teardown (see ``_timing.IteratorPass``). Printed per case: every
repetition's records/s, the median and the best, and the process's CPU time per record (the figure
that holds up on a busy machine) with its ratio to the raw read's.

Layouts: the current one (10 keys: the boxes and their labels packed, one bytes value
each, bbox version 2); the boxes and labels as float and int64 lists (bbox version 1's
layout, written by recordkit with ``layout: lists``); on top of the current one, the
image's height, width and channels in one int64 list (8 keys), and the same without
the audio's sample count (7 keys); a floor that no layout made field by field reaches
(every integer in one list, the box labels inside the packed box rows: 5 keys); and the
current records parsed for their 3 bytes keys only, or their 7 small keys only. Last,
what the packing costs where boxes are decoded: ``load_dataset`` of the boxes alone and
of every field (``batch_size``, ``pad=True``), on the packed and on the lists records.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make the benchmarks package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import _data, _recordkit
from benchmarks._reader_speed import IMAGE_SIDES
from benchmarks._timing import timed_pass
from recordkit.storage import location

if TYPE_CHECKING:
    import recordkit as rk

_SIZE_KEYS = ("image/height", "image/width", "image/channels")


def _layouts(tf: Any) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
    """Each re-encoded layout: a parsed record (``decode_example``'s dict) to features."""

    def feature(kind: str, values: Any) -> Any:
        if kind == "bytes":
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))
        if kind == "int64":
            return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))
        return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))

    def current(record: dict[str, Any]) -> dict[str, Any]:
        return {key: feature(kind.value, values) for key, (kind, values) in record.items()}

    def sizes_packed(record: dict[str, Any]) -> dict[str, Any]:
        out = {key: value for key, value in current(record).items() if key not in _SIZE_KEYS}
        out["image/shape"] = feature("int64", [record[key][1][0] for key in _SIZE_KEYS])
        return out

    def no_sample_count(record: dict[str, Any]) -> dict[str, Any]:
        out = sizes_packed(record)
        del out["audio/num_samples"]
        return out

    def floor(record: dict[str, Any]) -> dict[str, Any]:
        boxes = np.frombuffer(record["boxes"][1][0], "<f4").reshape(-1, 4)
        labels = np.frombuffer(record["boxes/labels"][1][0], np.uint8).astype("<f4").reshape(-1, 1)
        ints = [record[key][1][0] for key in (*_SIZE_KEYS, "audio/num_samples", "label")]
        return {
            "image": feature("bytes", record["image"][1]),
            "audio": feature("bytes", record["audio"][1]),
            "caption": feature("bytes", record["caption"][1]),
            "boxes": feature("bytes", [np.concatenate([boxes, labels], 1).astype("<f4").tobytes()]),
            "meta": feature("int64", ints),
        }

    return {"sizes": sizes_packed, "no_count": no_sample_count, "floor": floor}


def _boxes_as_lists(schema: rk.Schema) -> rk.Schema:
    """``schema`` with its boxes stored as lists (bbox version 1's layout)."""
    boxes = schema.fields["boxes"]
    lists = boxes.model_copy(update={"options": {**boxes.options, "layout": "lists"}})
    return schema.model_copy(update={"fields": {**schema.fields, "boxes": lists}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--passes", type=int, default=6, help="passes over the file per repetition")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    import recordkit as rk
    from recordkit.format._example import decode_example
    from recordkit.format._tfrecord import iter_tfrecords

    scratch = Path(tempfile.mkdtemp(prefix="parse-keys-"))
    try:
        schema = _recordkit.mixed_schema()
        written = _data.mixed_records(args.records, seed=13, sides=IMAGE_SIDES)
        shards = _recordkit.write([_recordkit.mixed_record(r) for r in written], schema, scratch / "rk")
        records = [decode_example(data) for shard in shards for _, data in iter_tfrecords(location(shard))]
        lists_schema = _boxes_as_lists(schema)
        lists_shards = _recordkit.write(
            [_recordkit.mixed_record(r) for r in written], lists_schema, scratch / "lists"
        )
        files = {"current": [str(shard) for shard in shards], "lists": [str(shard) for shard in lists_shards]}
        for name, to_features in _layouts(tf).items():
            files[name] = [str(scratch / f"{name}.tfrecord")]
            with tf.io.TFRecordWriter(files[name][0]) as writer:
                for record in records:
                    example = tf.train.Example(features=tf.train.Features(feature=to_features(record)))
                    writer.write(example.SerializeToString())

        spec = dict(rk.feature_spec(schema))
        sizes_spec = {k: v for k, v in spec.items() if k not in _SIZE_KEYS}
        sizes_spec["image/shape"] = tf.io.FixedLenFeature([3], tf.int64)
        no_count_spec = {k: v for k, v in sizes_spec.items() if k != "audio/num_samples"}
        floor_spec = {
            "image": tf.io.FixedLenFeature([], tf.string),
            "audio": tf.io.FixedLenFeature([], tf.string),
            "caption": tf.io.FixedLenFeature([], tf.string),
            "boxes": tf.io.FixedLenFeature([], tf.string),
            "meta": tf.io.FixedLenFeature([5], tf.int64),
        }
        bytes_keys = ("image", "audio", "caption")
        cases: dict[str, tuple[list[str], dict[str, Any] | None]] = {
            "current layout, 10 keys": (files["current"], spec),
            "boxes and labels as lists (bbox 1)": (files["lists"], dict(rk.feature_spec(lists_schema))),
            "image sizes in one list, 8 keys": (files["sizes"], sizes_spec),
            "and no audio sample count, 7 keys": (files["no_count"], no_count_spec),
            "floor, 5 keys": (files["floor"], floor_spec),
            "current records, 3 bytes keys only": (files["current"], {k: spec[k] for k in bytes_keys}),
            "current records, 7 small keys only": (
                files["current"],
                {k: v for k, v in spec.items() if k not in bytes_keys},
            ),
            "raw TFRecordDataset": (files["current"], None),
        }

        def build(paths: list[str], parse_spec: dict[str, Any] | None) -> Any:
            ds = tf.data.TFRecordDataset(paths * args.passes).batch(args.batch)
            if parse_spec is not None:
                ds = ds.map(lambda s: tf.io.parse_example(s, parse_spec), num_parallel_calls=tf.data.AUTOTUNE)
            return ds.prefetch(tf.data.AUTOTUNE)

        datasets = {name: build(*case) for name, case in cases.items()}
        # What the packing costs where the boxes are decoded too: recordkit's reader of the
        # boxes alone, and of every field, on both layouts.
        for what, fields in (("boxes", ["boxes"]), ("every field", None)):
            for layout, root in (("packed", "rk"), ("lists", "lists")):
                read = rk.load_dataset(scratch / root, fields=fields, batch_size=args.batch, pad=True)
                datasets[f"decoded: {what}, {layout}"] = read.repeat(args.passes)
        count = len(records) * args.passes
        for ds in datasets.values():  # warm-up: page cache and graph building for every case
            for _ in ds:
                pass
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in datasets}
        for _ in range(args.repeats):
            for name, ds in datasets.items():
                wall, cpu = timed_pass(ds)
                runs[name].append((count / wall, cpu / count * 1e6))
        raw_cpu = statistics.median(c for _, c in runs["raw TFRecordDataset"])
        print(
            f"{'case':38} {'rec/s median':>12} {'best':>8} {'CPU us/rec':>10} {'raw CPU/this':>12}"
            "   runs (rec/s)"
        )
        for name, values in runs.items():
            rate = statistics.median(r for r, _ in values)
            cpu = statistics.median(c for _, c in values)
            each = " ".join(f"{r:,.0f}" for r, _ in values)
            best = max(r for r, _ in values)
            print(f"{name:38} {rate:12,.0f} {best:8,.0f} {cpu:10.1f} {raw_cpu / cpu:11.2f}x   {each}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # what it wrote: not left in /tmp


if __name__ == "__main__":
    main()
