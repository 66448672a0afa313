"""Reader speed (issue 13): recordkit's readers side by side with the best hand-written
pipeline and with the decode limit, on the issue's workload.

The workload: records of a JPEG of 200 to 320 pixels a side (quality 90), 1 s of 16 kHz
WAV, a caption, 0 to 6 labelled boxes and a class label, written once by recordkit and
once the tutorials' way (the hand-written reader reads its own layout).

Rows (every one timed in each repetition; min and median published):

* ``full batched``: ``load_dataset(batch_size, pad=True)`` against the hand-written
  ``map(parse_single_example + decode_jpeg + decode_wav, AUTOTUNE)`` then
  ``padded_batch``; ``full unbatched``: ``load_dataset()`` against the same map alone;
* ``limit``: the same JPEG and WAV bytes, already in memory, decoded alone in a parallel
  map on every core (the issue's limit, record by record), and the same decodes padded
  into batches: what no reader can beat. The faster of the two is the *ceiling*
  (:func:`format_ceiling`): a reader also reads, checks and parses, so it cannot pass the
  ceiling, and a target above ceiling / hand-written cannot be met;
* ``crop``: ``load_dataset(batch_size, pad=True)`` with random crops to
  :data:`CROP_SIZE` (JPEG windows decoded alone);
* ``projection``: ``load_dataset(fields=[...])`` for the image, the audio, the boxes;
* ``parse``: recordkit's parse spec after ``batch``, against the raw ``TFRecordDataset``;
* ``numpy``: ``iter_records`` in one thread and in one per core, against a plain loop
  of Pillow and soundfile decodes of the same bytes;
* the full-decode and limit rows again with tf.data's autotuner off
  (:data:`AUTOTUNER_OFF`, on each dataset): on the 2-core VM the autotuner cost the
  full pipelines up to about 10% of their reading, and these rows compare the
  pipelines without it (docs/performance.md).

A tf.data pass is timed from the iterator's creation to its last element; the
iterator's teardown is timed apart and left out (:class:`~benchmarks._timing.IteratorPass`:
with the autotuner on it waited 0.1 to 0.6 s, using no CPU, in about half the passes).
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _data, _handwritten, _recordkit
from benchmarks._config import Size
from benchmarks._timing import Case, IteratorPass, measure

__all__ = [
    "AUTOTUNER_OFF",
    "CROP_SIZE",
    "IMAGE_SIDES",
    "LIMIT",
    "LIMIT_BATCHED",
    "SpeedRow",
    "format_ceiling",
    "format_speed_table",
    "run_reader_speed_suite",
]

#: The issue's image sides.
IMAGE_SIDES = (200, 320)
#: The window of the crop row (every field padded, the images cut at random).
CROP_SIZE = (160, 160)
#: The suffix of the groups read with tf.data's autotuner off.
AUTOTUNER_OFF = ", autotuner off"
#: The issue's limit: the decodes alone, record by record (the rows' "vs limit").
LIMIT = "images and audio alone, all cores"
#: The same decodes padded into batches, as a batched reader delivers them.
LIMIT_BATCHED = "the same, padded batches"


@dataclasses.dataclass
class SpeedRow:
    group: str
    contender: str
    records: int
    seconds: list[float] = dataclasses.field(default_factory=list)
    min_seconds: float = 0.0
    median_seconds: float = 0.0
    records_per_s_best: float = 0.0
    records_per_s_median: float = 0.0
    #: Every pass's iterator teardown (the warm-up's first), left out of ``seconds``.
    teardown_seconds: list[float] = dataclasses.field(default_factory=list)


def _count(batch: Any) -> int:
    import tensorflow as tf

    first = tf.nest.flatten(batch, expand_composites=False)[0]
    return int(first.shape[0]) if first.shape.rank else 1


def _one(element: Any) -> int:
    """The records of one element of an unbatched pipeline."""
    return 1


def _autotuner_off(build: Callable[[], Any]) -> Callable[[], Any]:
    """``build``'s dataset with tf.data's autotuner off (an option of that dataset only)."""

    def built() -> Any:
        import tensorflow as tf

        options = tf.data.Options()
        options.autotune.enabled = False
        return build().with_options(options)

    return built


def _limit(jpegs: list[bytes], wavs: list[bytes], batch: int | None = None) -> Any:
    """The JPEG and WAV bytes decoded alone in a parallel map; with ``batch``, padded
    into batches of that size (what ``padded_batch`` adds, and no Python per record)."""
    import tensorflow as tf

    def decode(jpeg: Any, wav: Any) -> Any:
        image = tf.io.decode_jpeg(jpeg, channels=3, dct_method="INTEGER_ACCURATE")
        return image, tf.audio.decode_wav(wav, desired_channels=1).audio

    ds = tf.data.Dataset.from_tensor_slices((jpegs, wavs)).map(decode, num_parallel_calls=tf.data.AUTOTUNE)
    if batch is not None:
        ds = ds.padded_batch(batch)
    return ds.prefetch(tf.data.AUTOTUNE)


def _hand_unbatched(files: list[Path]) -> Any:
    """The hand-written per-record map, without the padded batch."""
    return _handwritten.per_record_dataset(files, "full", None)


def _plain_numpy(jpegs: list[bytes], wavs: list[bytes]) -> Callable[[], None]:
    import soundfile
    from PIL import Image

    def run() -> None:
        for jpeg, wav in zip(jpegs, wavs, strict=True):
            np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))
            soundfile.read(io.BytesIO(wav), dtype="int16")

    return run


def _iter_records(data: Path, records: int, threads: int) -> Callable[[], None]:
    import recordkit as rk

    def run() -> None:
        seen = sum(1 for _ in rk.iter_records(data, num_threads=threads))
        if seen != records:
            raise RuntimeError(f"iter_records read {seen} records, not {records}")

    return run


def run_reader_speed_suite(size: Size, scratch: Path, log: Callable[[str], None]) -> list[SpeedRow]:
    """Write the workload both ways, then time every row, interleaved."""
    import recordkit as rk

    count = size.mixed_records
    batch = size.batch_size
    records = _data.mixed_records(count, seed=13, sides=IMAGE_SIDES)
    rk_dir = scratch / "speed-recordkit"
    hand_dir = scratch / "speed-hand"
    hand_dir.mkdir(parents=True, exist_ok=True)
    schema = _recordkit.mixed_schema()
    _recordkit.write([_recordkit.mixed_record(r) for r in records], schema, rk_dir)
    hand_files = _handwritten.write_mixed(records, hand_dir)
    rk_files = _recordkit.data_files(rk_dir)
    jpegs = [r.jpeg for r in records]
    wavs = [r.wav for r in records]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

    def parse_only() -> Any:
        import tensorflow as tf

        spec = rk.feature_spec(schema)
        ds = tf.data.TFRecordDataset([str(f) for f in rk_files]).batch(batch)
        return ds.map(lambda s: tf.io.parse_example(s, spec), num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE
        )

    def raw() -> Any:
        import tensorflow as tf

        return tf.data.TFRecordDataset([str(f) for f in rk_files]).batch(batch).prefetch(tf.data.AUTOTUNE)

    def crop() -> Any:
        # Random 160 x 160 windows: each JPEG decodes only its window (decode_and_crop_jpeg).
        return rk.load_dataset(
            rk_dir, batch_size=batch, pad=True, image_size=CROP_SIZE, image_fit="random_crop_or_pad", seed=0
        )

    def projection(field: str) -> Callable[[], Any]:
        return lambda: rk.load_dataset(rk_dir, fields=[field], batch_size=batch)

    tf_rows: list[tuple[str, str, Callable[[], Any], bool]] = [
        ("full batched", "recordkit", lambda: rk.load_dataset(rk_dir, batch_size=batch, pad=True), True),
        (
            "full batched",
            "hand-written",
            lambda: _handwritten.per_record_dataset(hand_files, "full", batch),
            True,
        ),
        ("full unbatched", "recordkit", lambda: rk.load_dataset(rk_dir), False),
        ("crop", "recordkit random crop, pad", crop, True),
        ("full unbatched", "hand-written", lambda: _hand_unbatched(hand_files), False),
        ("limit", LIMIT, lambda: _limit(jpegs, wavs), False),
        ("limit", LIMIT_BATCHED, lambda: _limit(jpegs, wavs, batch), True),
        ("projection", "recordkit image", projection("image"), True),
        ("projection", "recordkit audio", projection("audio"), True),
        ("projection", "recordkit boxes", projection("boxes"), True),
        ("parse", "recordkit spec after batch", parse_only, True),
        ("parse", "raw TFRecordDataset", raw, True),
    ]
    tf_rows += [
        (group + AUTOTUNER_OFF, contender, _autotuner_off(build), batched)
        for group, contender, build, batched in tf_rows
        if group in ("full batched", "full unbatched", "limit")
    ]
    cases: dict[tuple[str, str], Case] = {}
    passes: dict[tuple[str, str], IteratorPass] = {}
    for group, contender, build, batched in tf_rows:
        one_pass = IteratorPass(build(), count, _count if batched else _one, f"{contender} ({group})")
        passes[(group, contender)] = one_pass
        cases[(group, contender)] = Case(one_pass, min_seconds=size.min_read_seconds)
    cases[("numpy", "iter_records, 1 thread")] = Case(_iter_records(rk_dir, count, 1))
    cases[("numpy", f"iter_records, {cores} threads")] = Case(_iter_records(rk_dir, count, cores))
    cases[("numpy", "plain Pillow + soundfile loop")] = Case(_plain_numpy(jpegs, wavs))
    timings = measure(cases, repeats=size.repeats)
    rows = []
    for (group, contender), timing in timings.items():
        seconds = list(timing.seconds)
        row = SpeedRow(group, contender, count, seconds, min(seconds), timing.median)
        row.records_per_s_best = count / row.min_seconds
        row.records_per_s_median = count / row.median_seconds
        if (group, contender) in passes:
            row.teardown_seconds = passes[(group, contender)].teardowns
        rows.append(row)
        log(f"  speed {group:15} {contender:36} {row.records_per_s_median:10.1f} rec/s (median)")
    return rows


def format_speed_table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table, with each row's ratio to its group's reference
    (the hand-written pipeline; the raw read for parse; one thread for numpy) and to
    the limit, and the longest iterator teardown of its passes (not in its seconds)."""
    reference = {
        "full batched": "hand-written",
        "full unbatched": "hand-written",
        "parse": "raw TFRecordDataset",
        "numpy": "iter_records, 1 thread",
    }
    for group in ("full batched", "full unbatched"):
        reference[group + AUTOTUNER_OFF] = reference[group]
    by_key = {(r["group"], r["contender"]): r for r in rows}
    limits = {r["group"]: r for r in rows if r["contender"] == LIMIT}
    lines = [
        "| group | pipeline | records/s (median) | records/s (best) | vs reference | vs limit | seconds "
        "| teardown ms (max) |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for r in rows:
        ref = by_key.get((r["group"], reference.get(r["group"], "")))
        vs_ref = f"{r['records_per_s_median'] / ref['records_per_s_median']:.2f}x" if ref else ""
        # Rows read with the autotuner off against the limit read the same way.
        limit = limits.get("limit" + AUTOTUNER_OFF if r["group"].endswith(AUTOTUNER_OFF) else "limit")
        vs_limit = f"{r['records_per_s_median'] / limit['records_per_s_median']:.2f}x" if limit else ""
        seconds = ", ".join(f"{s:.3f}" for s in r["seconds"])
        teardowns = r.get("teardown_seconds") or []
        teardown = f"{max(teardowns) * 1000:,.0f}" if teardowns else ""
        lines.append(
            f"| {r['group']} | {r['contender']} | {r['records_per_s_median']:,.0f} | "
            f"{r['records_per_s_best']:,.0f} | {vs_ref} | {vs_limit} | {seconds} | {teardown} |"
        )
    return "\n".join(lines)


def format_ceiling(rows: list[dict[str, Any]]) -> str:
    """For each way of reading (autotuner on, off): the ceiling (the faster limit row)
    against each hand-written full-decode pipeline, by medians and best against best.
    No reader passes the ceiling, so "1.2x hand-written" is out of reach wherever these
    ratios are below 1.2."""
    by_key = {(r["group"], r["contender"]): r for r in rows}
    lines = []
    for suffix in ("", AUTOTUNER_OFF):
        limits = [
            by_key[key]
            for key in (("limit" + suffix, LIMIT), ("limit" + suffix, LIMIT_BATCHED))
            if key in by_key
        ]
        if not limits:
            continue
        median = max(limits, key=lambda r: r["records_per_s_median"])
        best = max(limits, key=lambda r: r["records_per_s_best"])
        parts = []
        for group in ("full batched", "full unbatched"):
            hand = by_key.get((group + suffix, "hand-written"))
            if hand is not None:
                parts.append(
                    f"{median['records_per_s_median'] / hand['records_per_s_median']:.2f}x the hand-written "
                    f"{group.removeprefix('full ')} pipeline (best against best "
                    f"{best['records_per_s_best'] / hand['records_per_s_best']:.2f}x)"
                )
        autotuner = "off" if suffix else "on"
        rate = median["records_per_s_median"]
        lines.append(
            f"- ceiling, autotuner {autotuner}: {rate:,.0f} records/s (median, {median['contender']}) = "
            + "; ".join(parts)
        )
    return "\n".join(lines)
