"""Benchmark sizes: how many records each workload has and how often timings repeat."""

from __future__ import annotations

import dataclasses

__all__ = ["SIZES", "Size"]


@dataclasses.dataclass(frozen=True)
class Size:
    """One benchmark size. ``full`` is what docs/performance.md reports."""

    name: str
    #: Records of the mixed multimodal workload (JPEG, WAV, caption, boxes, label).
    mixed_records: int
    #: Raw numpy images to encode, per format (JPEG and PNG), and their side in pixels.
    raw_records: int
    raw_side: int
    #: recordkit writes with these numbers of worker processes (1: in the calling process).
    workers: tuple[int, ...]
    #: Record counts of the long stream, each measured in a fresh process.
    stream_counts: tuple[int, ...]
    #: The long stream's contenders (see benchmarks._stream_child.CONTENDERS).
    stream_contenders: tuple[str, ...]
    #: Timed repetitions after the warm-up run; the median is reported.
    repeats: int
    #: Batch size of every read pipeline.
    batch_size: int
    #: A read repetition loops over the file until it has run at least this long, so
    #: fast pipelines (raw, parse only) are not timed over a few milliseconds.
    min_read_seconds: float
    #: The stability check (issue 19): records of its mixed workload (JPEG 200 to 320
    #: px), and runs of each writer, alternating; every run is reported.
    stability_records: int = 1500
    stability_runs: int = 6


_ALL_STREAM = ("recordkit write", "hand-written write", "recordkit read")

SIZES: dict[str, Size] = {
    # For the smoke test: the harness's code paths once, in seconds; the figures mean
    # nothing. Left out because starting processes that import TensorFlow dominates at
    # this size: recordkit's worker processes, and the TensorFlow contenders of the stream.
    "toy": Size(
        "toy",
        mixed_records=8,
        raw_records=4,
        raw_side=48,
        workers=(1,),
        stream_counts=(200, 400),
        stream_contenders=("recordkit write",),
        repeats=1,
        batch_size=4,
        min_read_seconds=0.0,
        stability_records=6,
        stability_runs=2,
    ),
    # For development: a few minutes.
    "small": Size(
        "small",
        mixed_records=200,
        raw_records=40,
        raw_side=256,
        workers=(1, 2),
        stream_counts=(10_000, 20_000),
        stream_contenders=_ALL_STREAM,
        repeats=3,
        batch_size=32,
        min_read_seconds=0.3,
    ),
    # The figures in docs/performance.md: several minutes on 2 cores.
    "full": Size(
        "full",
        mixed_records=2000,
        raw_records=300,
        raw_side=384,
        workers=(1, 2),
        stream_counts=(100_000, 200_000, 400_000),
        stream_contenders=_ALL_STREAM,
        repeats=5,
        batch_size=64,
        min_read_seconds=1.0,
    ),
}
