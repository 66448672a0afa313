"""The read side: each contender reads back the mixed workload its own writer wrote.

Three modes: ``full`` (every field decoded: images padded to the batch's largest, audio
as float samples, boxes and labels), ``parse`` (every feature parsed, nothing decoded)
and ``projection`` (only the class label). The raw ``TFRecordDataset`` with no parsing
is the limit every mode is bounded by. A pipeline is built once, untimed; a pass
iterates over it to the end (its iterator's teardown not counted, see
:class:`~benchmarks._timing.IteratorPass`); the passes of all pipelines are interleaved.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import _handwritten, _recordkit
from benchmarks._config import Size
from benchmarks._timing import Case, IteratorPass, measure

__all__ = ["MODES", "ReadRow", "run_read_suite"]

MODES = ("full", "parse", "projection")
RAW = "raw TFRecordDataset"


@dataclasses.dataclass
class ReadRow:
    mode: str
    contender: str
    records: int
    seconds: list[float] = dataclasses.field(default_factory=list)
    passes: int = 1
    median_seconds: float = 0.0
    records_per_s: float = 0.0
    mb_per_s: float = 0.0
    peak_rss_mb: float = 0.0
    skipped: str = ""


def _raw_dataset(files: list[Path], batch_size: int) -> Any:
    import tensorflow as tf

    ds = tf.data.TFRecordDataset([str(f) for f in files]).batch(batch_size)
    return ds.prefetch(tf.data.AUTOTUNE)


@dataclasses.dataclass(frozen=True)
class ReadCase:
    mode: str
    contender: str
    #: Builds the pipeline (untimed); None when the case cannot run.
    pipeline: Callable[[], Any] | None
    files: list[Path]
    skipped: str = ""


def _cases(kept: dict[tuple[str, str], Path], size: Size) -> list[ReadCase]:
    batch = size.batch_size
    rk_dir = kept.get(("mixed", "recordkit"))
    hand_dir = kept.get(("mixed", "hand-written"))
    tfds_dir = kept.get(("mixed", "TFDS"))
    rk_files = _recordkit.data_files(rk_dir) if rk_dir else []
    hand_files = _recordkit.data_files(hand_dir) if hand_dir else []
    tfds_files = _recordkit.data_files(tfds_dir) if tfds_dir else []
    cases: list[ReadCase] = []
    for mode in MODES:
        if rk_dir:
            rk_pipe = functools.partial(
                _recordkit.mixed_dataset, _recordkit.mixed_schema(), rk_dir, mode, batch
            )
            cases.append(ReadCase(mode, "recordkit", rk_pipe, rk_files))
        else:
            cases.append(ReadCase(mode, "recordkit", None, [], "the recordkit write did not run"))
        if hand_dir:
            per_record = functools.partial(_handwritten.per_record_dataset, hand_files, mode, batch)
            batched = functools.partial(_handwritten.batched_dataset, hand_files, mode, batch)
            cases.append(ReadCase(mode, "hand-written per record", per_record, hand_files))
            cases.append(ReadCase(mode, "hand-written batched", batched, hand_files))
        if tfds_dir:
            from benchmarks import _tfds

            features = _tfds.mixed_features()
            tfds_pipe = functools.partial(_tfds.mixed_dataset, tfds_files, mode, batch, features)
            cases.append(ReadCase(mode, "TFDS", tfds_pipe, tfds_files))
        else:
            cases.append(ReadCase(mode, "TFDS", None, [], "the TFDS write did not run"))
    raw_files = rk_files or hand_files
    cases.append(ReadCase("limit", RAW, functools.partial(_raw_dataset, raw_files, batch), raw_files))
    return cases


def _batch_size(batch: Any) -> int:
    import tensorflow as tf

    first = tf.nest.flatten(batch, expand_composites=False)[0]
    return int(first.shape[0])


def run_read_suite(
    kept: dict[tuple[str, str], Path], records: int, size: Size, log: Callable[[str], None]
) -> list[ReadRow]:
    """Build every pipeline, then time them all interleaved."""
    cases = _cases(kept, size)
    timed: dict[int, Case] = {}
    for index, case in enumerate(cases):
        if case.pipeline is not None:
            one_pass = IteratorPass(case.pipeline(), records, _batch_size, f"{case.contender} ({case.mode})")
            timed[index] = Case(one_pass, min_seconds=size.min_read_seconds)
    timings = measure(timed, repeats=size.repeats)
    rows = []
    for index, case in enumerate(cases):
        row = ReadRow(case.mode, case.contender, records, skipped=case.skipped)
        rows.append(row)
        if case.pipeline is None:
            log(f"  read  {case.mode:10} {case.contender:24} skipped: {case.skipped}")
            continue
        timing = timings[index]
        file_bytes = sum(f.stat().st_size for f in case.files)
        row.seconds = list(timing.seconds)
        row.passes = timing.passes
        row.median_seconds = timing.median
        row.records_per_s = records / timing.median
        row.mb_per_s = file_bytes / timing.median / 1e6
        row.peak_rss_mb = timing.peak_rss_delta / 1e6
        figures = f"{row.records_per_s:10.1f} rec/s {row.mb_per_s:8.1f} MB/s"
        log(f"  read  {case.mode:10} {case.contender:24} {figures}")
    return rows
