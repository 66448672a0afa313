"""The generated tf.data reader against the simplest hand-written pipeline, field by field
(issue 30): the pipelines, the workload and the timing; ``tfdata_fields.py`` runs them.

The workload: records of a noisy JPEG of 200 to 320 pixels a side (quality 90), 1 s of
16 kHz WAV, a caption of 3 to 12 words, 0 to 6 normalized boxes with labels and a class
label, written by ``rk.write_dataset(durable=False)`` into one shard. Both sides read
that same shard.

The hand-written pipeline is the TFRecord tutorials' (:func:`hand_written`)::

    tf.data.TFRecordDataset(files)
      .map(parse_single_example(only the keys needed)
           + tf.io.decode_jpeg(channels=3) / tf.audio.decode_wav / tf.io.decode_raw
           for the packed boxes, num_parallel_calls=AUTOTUNE)
      .padded_batch(32)
      .prefetch(AUTOTUNE)

recordkit's is ``rk.load_dataset(root, fields=..., batch_size=32, pad=True)``.

Every pass is timed from its iterator's creation to its last element, in wall seconds
and in CPU seconds of the whole process (``time.process_time``: on a machine shared with
other work, CPU per record is the steadier measure), the iterator's teardown left out
(:func:`timed_first_and_rest`); the CPU to the first element is kept apart too: a new
iterator instantiates every function of its pipeline again, a fixed cost per pass. The
cases alternate pass by pass in one process.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import _data, _recordkit

if TYPE_CHECKING:
    from benchmarks._config import Size

__all__ = [
    "GROUPS",
    "HAND_WRITTEN_CODE",
    "Case",
    "Result",
    "build_cases",
    "run_fields_suite",
    "format_results",
    "hand_written",
    "run_cases",
    "stage_cases",
    "write_workload",
]

#: The field groups of the issue, and the fields each reads.
GROUPS: dict[str, tuple[str, ...]] = {
    "image": ("image",),
    "audio": ("audio",),
    "boxes, label, text": ("boxes", "label", "caption"),
    "all five": ("image", "audio", "caption", "boxes", "label"),
}
#: The issue's image sides, caption lengths and batch size.
SIDES = (200, 320)
CAPTION_WORDS = (3, 12)
BATCH = 32
#: The image field's ``channels`` option: the workload's pictures are RGB photos, and the
#: hand-written pipeline decodes them with ``channels=3``; declaring it is the like-for-like
#: comparison (a schema without it keeps each file's count, checked per batch on read).
CHANNELS = 3

#: The row of the image read with the image codec's ``jpeg_dct: fast`` (a decode option:
#: the same shard), the DCT ``tf.io.decode_jpeg`` uses by default, as the hand-written
#: pipeline does; recordkit's default is the accurate DCT, which the numpy reader matches.
FAST_DCT = "recordkit, jpeg_dct: fast"

#: The row of the hand-written pipeline with recordkit's default ``num_parallel_calls``
#: (one more than the CPUs) in place of ``tf.data.AUTOTUNE``: how much of recordkit's
#: lead is that choice, which a hand-written pipeline can make too.
FIXED_CALLS = "hand-written, num_parallel_calls=CPUs+1"

#: The hand-written pipeline as published next to the figures (what :func:`hand_written`
#: builds for every field; a group keeps only its fields' keys and decodes).
HAND_WRITTEN_CODE = """\
import tensorflow as tf

files = ["data/train-00000.tfrecord"]  # the shards recordkit wrote
spec = {  # only the keys of the fields read
    "image": tf.io.FixedLenFeature([], tf.string),
    "audio": tf.io.FixedLenFeature([], tf.string),
    "caption": tf.io.FixedLenFeature([], tf.string),
    "boxes": tf.io.FixedLenFeature([], tf.string),         # packed float32 xyxy
    "boxes/labels": tf.io.FixedLenFeature([], tf.string),  # packed uint8
    "label": tf.io.FixedLenFeature([], tf.int64),
}

def parse(serialized):
    example = tf.io.parse_single_example(serialized, spec)
    return {
        "image": tf.io.decode_jpeg(example["image"], channels=3),
        "audio": tf.audio.decode_wav(example["audio"], desired_channels=1).audio,
        "caption": example["caption"],
        "boxes": tf.reshape(tf.io.decode_raw(example["boxes"], tf.float32), [-1, 4]),
        "box_labels": tf.io.decode_raw(example["boxes/labels"], tf.uint8),
        "label": example["label"],
    }

ds = (tf.data.TFRecordDataset(files)
      .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
      .padded_batch(32)
      .prefetch(tf.data.AUTOTUNE))
"""


def write_workload(root: Path, records: int, seed: int = 30) -> tuple[list[Path], list[bytes], list[bytes]]:
    """Write the workload into ``root`` (one shard, ``durable=False``); the shard files,
    and the JPEG and WAV bytes (for the decode limit)."""
    written = _data.mixed_records(records, seed=seed, sides=SIDES, caption_words=CAPTION_WORDS)
    files = _recordkit.write(
        [_recordkit.mixed_record(r) for r in written], _recordkit.mixed_schema(CHANNELS), root, durable=False
    )
    if len(files) != 1:
        raise RuntimeError(f"the workload was written into {len(files)} shards, not one")
    return files, [r.jpeg for r in written], [r.wav for r in written]


def hand_written(
    files: Sequence[Path], fields: Sequence[str], batch: int = BATCH, calls: int | None = None
) -> Any:
    """The tutorials' per-record pipeline over recordkit's shards, for ``fields`` (see
    :data:`HAND_WRITTEN_CODE`); ``calls``: its map's ``num_parallel_calls`` instead of
    ``tf.data.AUTOTUNE`` (the row :data:`FIXED_CALLS`)."""
    import tensorflow as tf

    keys = {
        "image": {"image": tf.io.FixedLenFeature([], tf.string)},
        "audio": {"audio": tf.io.FixedLenFeature([], tf.string)},
        "caption": {"caption": tf.io.FixedLenFeature([], tf.string)},
        "boxes": {
            "boxes": tf.io.FixedLenFeature([], tf.string),
            "boxes/labels": tf.io.FixedLenFeature([], tf.string),
        },
        "label": {"label": tf.io.FixedLenFeature([], tf.int64)},
    }
    spec = {key: feature for field in fields for key, feature in keys[field].items()}

    def parse(serialized: Any) -> dict[str, Any]:
        example = tf.io.parse_single_example(serialized, spec)
        out: dict[str, Any] = {}
        if "image" in fields:
            out["image"] = tf.io.decode_jpeg(example["image"], channels=3)
        if "audio" in fields:
            out["audio"] = tf.audio.decode_wav(example["audio"], desired_channels=1).audio
        if "caption" in fields:
            out["caption"] = example["caption"]
        if "boxes" in fields:
            out["boxes"] = tf.reshape(tf.io.decode_raw(example["boxes"], tf.float32), [-1, 4])
            out["box_labels"] = tf.io.decode_raw(example["boxes/labels"], tf.uint8)
        if "label" in fields:
            out["label"] = example["label"]
        return out

    parallel = tf.data.AUTOTUNE if calls is None else calls
    ds = tf.data.TFRecordDataset([str(f) for f in files]).map(parse, num_parallel_calls=parallel)
    return ds.padded_batch(batch).prefetch(tf.data.AUTOTUNE)


def decode_limit(jpegs: list[bytes], wavs: list[bytes], batch: int = BATCH) -> Any:
    """The same JPEG and WAV bytes, already in memory, decoded alone in a parallel map on
    every core and padded into batches (no reading, no parsing): the decode limit."""
    import tensorflow as tf

    def decode(jpeg: Any, wav: Any) -> Any:
        image = tf.io.decode_jpeg(jpeg, channels=3, dct_method="INTEGER_ACCURATE")
        return image, tf.audio.decode_wav(wav, desired_channels=1).audio

    ds = tf.data.Dataset.from_tensor_slices((jpegs, wavs)).map(decode, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.padded_batch(batch).prefetch(tf.data.AUTOTUNE)


def raw_read(files: Sequence[Path], batch: int = BATCH) -> Any:
    """``TFRecordDataset`` batched, nothing parsed: the raw read."""
    import tensorflow as tf

    return tf.data.TFRecordDataset([str(f) for f in files]).batch(batch).prefetch(tf.data.AUTOTUNE)


def recordkit_batches(root: Path, fields: Sequence[str] | None = None, batch: int = BATCH) -> Any:
    """The batches of serialized records recordkit's batched read parses, built by the code
    that builds them in ``rk.load_dataset(root, fields=fields, batch_size=batch)``: its
    shard read (an intact local shard: ``TFRecordDataset`` alone, its records taken up to
    the count the header walk found) in chunks of ``block_length`` rebatched to ``batch``
    (:func:`recordkit.read._load_dataset._serialized_batches`)."""
    from recordkit.read._load_dataset import _serialized_batches
    from recordkit.read._open import open_dataset
    from recordkit.read._options import Opened, PipelineOptions

    opened = Opened(open_dataset(root, "train", None if fields is None else list(fields)), None, None)
    options = PipelineOptions(batch_size=batch)
    return _serialized_batches(opened, opened.dataset.shards, None, options, "raise")


def recordkit_parse(root: Path, fields: Sequence[str] | None = None) -> Callable[[Any], Any]:
    """The parse recordkit's batched read runs on a batch, for ``fields`` (all when None),
    with nothing decoded: the parser its read builds
    (:func:`~recordkit.read._parse.make_padded_parser`) with every field left undecoded,
    which is ``tf.io.parse_example`` of the fields' keys (:func:`rk.feature_spec`) and the
    parsed values by field."""
    from recordkit.read._open import open_dataset
    from recordkit.read._parse import make_padded_parser

    stored = open_dataset(root, "train", None if fields is None else list(fields)).stored_fields.fields
    return make_padded_parser(stored, (), {field.name for field in stored})


def parse_only(root: Path, batch: int = BATCH) -> Any:
    """Parse only, as recordkit's reads parse: recordkit's serialized batches
    (:func:`recordkit_batches`), each parsed by recordkit's parse of every field
    (:func:`recordkit_parse`) in recordkit's parallel map
    (:func:`~recordkit.read._traced.parallel_map`: its default parallel calls, its order,
    the function started without Grappler), prefetched; nothing decoded."""
    import tensorflow as tf

    from recordkit.read._traced import parallel_map

    parsed = parallel_map(recordkit_batches(root, None, batch), recordkit_parse(root), deterministic=True)
    return parsed.prefetch(tf.data.AUTOTUNE)


def autotuner_off(dataset: Any) -> Any:
    """``dataset`` with tf.data's autotuner off (an option of that dataset only)."""
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


@dataclasses.dataclass(frozen=True)
class Case:
    """One row: a group, a pipeline's name, the dataset (built once, iterated each pass)
    and how many records an element holds (``count``)."""

    group: str
    pipeline: str
    dataset: Any
    reference: str = ""


@dataclasses.dataclass
class Result:
    """Every pass of one case: wall seconds and CPU seconds (the whole process's)."""

    group: str
    pipeline: str
    records: int
    reference: str = ""
    wall: list[float] = dataclasses.field(default_factory=list)
    cpu: list[float] = dataclasses.field(default_factory=list)
    #: CPU seconds from the iterator's creation to its first element, in each pass.
    first_cpu: list[float] = dataclasses.field(default_factory=list)

    def rate(self, how: Callable[[list[float]], float] = statistics.median) -> float:
        """Records/s of the median pass (``min``: of the best pass)."""
        return self.records / how(self.wall)

    def cpu_us(self, how: Callable[[list[float]], float] = statistics.median) -> float:
        """CPU µs per record of the median pass (``min``: of the cheapest)."""
        return how(self.cpu) / self.records * 1e6


def build_cases(
    root: Path, files: Sequence[Path], jpegs: list[bytes], wavs: list[bytes], *, batch: int = BATCH
) -> list[Case]:
    """Every group read by recordkit and by the hand-written pipeline, autotuner on and
    off; the image also by recordkit with the hand-written pipeline's DCT (:data:`FAST_DCT`);
    each group also by the hand-written pipeline with recordkit's parallel calls (:data:`FIXED_CALLS`);
    the raw read, parse only and the decode limit."""
    import recordkit as rk
    from recordkit.read._traced import default_parallel_calls

    fast_dct = _recordkit.mixed_schema(CHANNELS)
    fast_dct.fields["image"].options["jpeg_dct"] = "fast"
    cases: list[Case] = []
    # A tf.data dataset to the same pipeline, or to it with the autotuner off.
    tunings: tuple[tuple[str, Callable[[Any], Any]], ...] = (
        ("", lambda d: d),
        (", autotuner off", autotuner_off),
    )
    for suffix, tune in tunings:
        for group, fields in GROUPS.items():
            recordkit = rk.load_dataset(root, fields=list(fields), batch_size=batch, pad=True)
            cases.append(Case(group + suffix, "hand-written", tune(hand_written(files, fields, batch))))
            cases.append(Case(group + suffix, "recordkit", tune(recordkit), "hand-written"))
            if group == "image" and not suffix:  # the hand-written pipeline's DCT, like for like
                fast = rk.load_dataset(root, fields=list(fields), schema=fast_dct, batch_size=batch, pad=True)
                cases.append(Case(group, FAST_DCT, fast, "hand-written"))
            if not suffix:
                fixed = hand_written(files, fields, batch, calls=default_parallel_calls())
                cases.append(Case(group, FIXED_CALLS, fixed, "hand-written"))
        cases.append(Case("limits" + suffix, "raw TFRecordDataset", tune(raw_read(files, batch))))
        parsed = tune(parse_only(root, batch))
        cases.append(Case("limits" + suffix, "parse only (recordkit spec)", parsed, "raw"))
        cases.append(Case("limits" + suffix, "decode limit", tune(decode_limit(jpegs, wavs, batch))))
    return cases


def stage_cases(root: Path, files: Sequence[Path], *, batch: int = BATCH) -> list[Case]:
    """recordkit's read, one stage added at a time, for every group (autotuner on): the
    CPU each stage adds per record is the difference between two rows.

    1. the raw read (``TFRecordDataset``, ``batch``);
    2. the shards read and checked, in batches (:func:`recordkit_batches`: what
       ``load_dataset`` builds);
    3. and parsed as recordkit's batched read parses (:func:`recordkit_parse` of the
       group's keys only, in recordkit's parallel map);
    4. and decoded in batches by each codec (``rk.make_parser``: every field ragged), in
       recordkit's parallel map;
    5. ``load_dataset(batch_size)``: the reader's layout (pictures decoded record by
       record: ``unbatch``, a per-record map, batching again), not padded;
    6. ``load_dataset(batch_size, pad=True)``: padded.
    """
    import tensorflow as tf

    import recordkit as rk
    from recordkit.read._traced import parallel_map

    schema = _recordkit.mixed_schema(CHANNELS)
    cases: list[Case] = []
    for group, fields in GROUPS.items():
        parse = recordkit_parse(root, fields)
        parser = rk.make_parser(schema, list(fields))
        autotune = tf.data.AUTOTUNE
        stages = [
            ("1 raw read", raw_read(files, batch)),
            ("2 shards read and checked", recordkit_batches(root, fields, batch).prefetch(autotune)),
            (
                "3 + parse (the group's keys)",
                parallel_map(recordkit_batches(root, fields, batch), parse, deterministic=True).prefetch(
                    autotune
                ),
            ),
            (
                "4 + each codec's batched decode",
                parallel_map(recordkit_batches(root, fields, batch), parser, deterministic=True).prefetch(
                    autotune
                ),
            ),
            ("5 load_dataset, not padded", rk.load_dataset(root, fields=list(fields), batch_size=batch)),
            (
                "6 load_dataset, pad=True",
                rk.load_dataset(root, fields=list(fields), batch_size=batch, pad=True),
            ),
        ]
        cases += [Case(group, name, dataset) for name, dataset in stages]
    return cases


def timed_first_and_rest(dataset: Any) -> tuple[float, float, float]:
    """One pass over ``dataset``: wall and CPU seconds (this process's) from its
    iterator's creation to its last element, and the CPU seconds to its first element.
    The iterator's teardown comes after and is left out, as in
    :func:`~benchmarks._timing.timed_pass`."""
    wall, cpu = time.perf_counter(), time.process_time()
    iterator = iter(dataset)
    next(iterator, None)
    first = time.process_time() - cpu
    for _ in iterator:
        pass
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    del iterator
    return wall, cpu, first


def _records(element: Any) -> int:
    import tensorflow as tf

    first = tf.nest.flatten(element, expand_composites=False)[0]
    return int(first.nrows()) if isinstance(first, tf.RaggedTensor) else int(first.shape[0])


def run_cases(
    cases: list[Case], records: int, passes: int, log: Callable[[str], None] = lambda _: None
) -> list[Result]:
    """A warm-up pass of each case (checking it reads ``records``), then ``passes``
    rounds in which every case runs once, the order rotated each round."""
    for case in cases:
        seen = sum(_records(element) for element in case.dataset)
        if seen != records:
            raise RuntimeError(f"{case.pipeline} ({case.group}) read {seen} records, not {records}")
    results = [Result(c.group, c.pipeline, records, c.reference) for c in cases]
    order = list(range(len(cases)))
    for round_ in range(passes):
        shift = round_ % len(order)
        for index in order[shift:] + order[:shift]:
            wall, cpu, first = timed_first_and_rest(cases[index].dataset)
            results[index].wall.append(wall)
            results[index].cpu.append(cpu)
            results[index].first_cpu.append(first)
        log(f"  round {round_ + 1} of {passes} done")
    return results


def _ratio(result: Result, by_key: dict[tuple[str, str], Result]) -> tuple[str, str]:
    """The median and best ratio of ``result`` to its reference in its group."""
    if not result.reference:
        return "", ""
    group = result.group
    name = {"raw": "raw TFRecordDataset"}.get(result.reference, result.reference)
    ref = by_key.get((group, name))
    if ref is None:
        return "", ""
    return f"{result.rate() / ref.rate():.2f}x", f"{result.rate(min) / ref.rate(min):.2f}x"


def format_results(results: list[Result], *, limit_group: str = "limits") -> str:
    """A Markdown table: records/s (median, best), the ratios to the reference (median
    against median, best against best), CPU µs a record (median, min), every pass."""
    by_key = {(r.group, r.pipeline): r for r in results}
    lines = [
        "| group | pipeline | records/s (median) | records/s (best) | vs reference (median) "
        "| vs reference (best) | vs decode limit | CPU µs/record (median) | CPU µs/record (min) "
        "| first element CPU ms (median) | every pass (records/s) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        median_ratio, best_ratio = _ratio(r, by_key)
        suffix = ", autotuner off" if r.group.endswith(", autotuner off") else ""
        limit = by_key.get((limit_group + suffix, "decode limit"))
        vs_limit = f"{r.rate() / limit.rate():.2f}x" if limit is not None and "all five" in r.group else ""
        passes = ", ".join(f"{r.records / s:,.0f}" for s in r.wall)
        first = f"{statistics.median(r.first_cpu) * 1e3:,.1f}" if r.first_cpu else ""
        lines.append(
            f"| {r.group} | {r.pipeline} | {r.rate():,.0f} | {r.rate(min):,.0f} | {median_ratio} | "
            f"{best_ratio} | {vs_limit} | {r.cpu_us():,.1f} | {r.cpu_us(min):,.1f} | {first} | {passes} |"
        )
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """The conditions of a run: CPUs usable and the load average."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"usable_cpus": cores, "load_average": list(os.getloadavg())}


def run_fields_suite(size: Size, scratch: Path, log: Callable[[str], None]) -> list[Result]:
    """``benchmarks/run.py``'s ``fields`` suite: the side by side at ``size`` (the issue's
    1,500 records in batches of 32 at ``full``; ``size``'s records and batch below it),
    ``size.repeats`` passes of every case."""
    full = size.name == "full"
    records = 1500 if full else size.mixed_records
    batch = BATCH if full else min(size.batch_size, BATCH)
    root = scratch / "fields"
    files, jpegs, wavs = write_workload(root, records)
    results = run_cases(build_cases(root, files, jpegs, wavs, batch=batch), records, size.repeats, log)
    for r in results:
        log(f"  fields {r.group:34} {r.pipeline:30} {r.rate():10.1f} rec/s (median)")
    return results
