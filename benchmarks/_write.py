"""The write side: every contender writes the same records; throughput, size, memory.

Each contender's write is one pass over an in-memory workload into a fresh directory
(its conversion from the neutral records included, since its users have to do it too).
The warm-up's output is kept: its files give the bytes per record and are what the read
side reads.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import _data, _handwritten, _recordkit
from benchmarks._config import Size
from benchmarks._timing import Case, Timing, measure
from recordkit.storage import location

__all__ = ["WriteCase", "WriteRow", "run_write_suite", "write_cases"]

#: A write: the directory to write into -> the data files written.
Writer = Callable[[Path], list[Path]]


@dataclasses.dataclass(frozen=True)
class WriteCase:
    workload: str
    contender: str
    write: Writer | None
    #: Why the case cannot run (a codec or package missing), when ``write`` is None.
    skipped: str = ""


@dataclasses.dataclass
class WriteRow:
    """One contender's figures on one workload (JSON-ready through ``asdict``)."""

    workload: str
    contender: str
    records: int
    seconds: list[float] = dataclasses.field(default_factory=list)
    median_seconds: float = 0.0
    records_per_s: float = 0.0
    mb_per_s: float = 0.0
    bytes_per_record: float = 0.0
    file_bytes: int = 0
    peak_rss_mb: float = 0.0
    skipped: str = ""


def _tfds_or_reason() -> tuple[Any, str]:
    """The TFDS contender's module, or why it cannot run (the bench extra is missing)."""
    if importlib.util.find_spec("tensorflow_datasets") is None:
        return None, "tensorflow-datasets is not installed (pip install -e '.[bench]')"
    from benchmarks import _tfds

    return _tfds, ""


#: The contender that writes like the hand-written code: one process, no fsync.
NOT_DURABLE = "recordkit (durable=False)"


def _recordkit_variants(size: Size) -> list[tuple[str, int, bool]]:
    """recordkit's contenders: (name, worker processes, durable). The default (durable,
    one process), the same without fsync (what TFRecordWriter guarantees), and the
    default with each larger number of workers."""
    variants = [("recordkit", 1, True), (NOT_DURABLE, 1, False)]
    variants += [(f"recordkit ({w} workers)", w, True) for w in size.workers if w > 1]
    return variants


def write_cases(size: Size) -> tuple[dict[str, int], list[WriteCase], dict[str, Any]]:
    """The workloads' record counts, the cases, and the in-memory workloads by name."""
    mixed = _data.mixed_records(size.mixed_records)
    raw = _data.raw_image_records(size.raw_records, size.raw_side)
    workloads: dict[str, Any] = {"mixed": mixed, "raw-jpeg": raw, "raw-png": raw}
    counts = {name: len(records) for name, records in workloads.items()}
    tfds, tfds_missing = _tfds_or_reason()
    cases: list[WriteCase] = []

    missing = _recordkit.missing_codecs(_recordkit.MIXED_FIELDS.values())
    rk_skip = f"codecs not installed: {', '.join(missing)}" if missing else ""
    mixed_schema = _recordkit.mixed_schema() if not missing else None
    for name, workers, durable in _recordkit_variants(size):

        def rk_mixed(out: Path, workers: int = workers, durable: bool = durable) -> list[Path]:
            assert mixed_schema is not None
            records = (_recordkit.mixed_record(r) for r in mixed)
            return _recordkit.write(records, mixed_schema, out, workers=workers, durable=durable)

        cases.append(WriteCase("mixed", name, None if rk_skip else rk_mixed, rk_skip))
    cases.append(WriteCase("mixed", "hand-written", lambda out: _handwritten.write_mixed(mixed, out)))
    if tfds is not None:
        features = tfds.mixed_features()
        cases.append(WriteCase("mixed", "TFDS", lambda out: tfds.write_mixed(mixed, out, features)))
    else:
        cases.append(WriteCase("mixed", "TFDS", None, tfds_missing))

    raw_missing = _recordkit.missing_codecs(["image", "label"])
    for fmt in ("jpeg", "png"):
        workload = f"raw-{fmt}"
        schema = _recordkit.raw_schema(fmt) if not raw_missing else None
        for name, workers, durable in _recordkit_variants(size):
            skip = f"codecs not installed: {', '.join(raw_missing)}" if raw_missing else ""

            def rk_raw(
                out: Path, workers: int = workers, schema: Any = schema, durable: bool = durable
            ) -> list[Path]:
                records = ({"image": image, "label": label} for image, label in raw)
                return _recordkit.write(records, schema, out, workers=workers, durable=durable)

            cases.append(WriteCase(workload, name, None if skip else rk_raw, skip))

        def hand_raw(out: Path, fmt: str = fmt) -> list[Path]:
            return _handwritten.write_raw(raw, out, fmt)

        cases.append(WriteCase(workload, "hand-written", hand_raw))
        if tfds is not None:
            raw_features = tfds.raw_features(fmt)

            def tfds_raw(out: Path, fmt: str = fmt, features: Any = raw_features) -> list[Path]:
                files: list[Path] = tfds.write_raw(raw, out, fmt, features)
                return files

            cases.append(WriteCase(workload, "TFDS", tfds_raw))
        else:
            cases.append(WriteCase(workload, "TFDS", None, tfds_missing))
    return counts, cases, workloads


def _check_count(files: list[Path], expected: int, case: WriteCase) -> None:
    """Every contender must have written every record (a harness self-check)."""
    from recordkit.format._tfrecord import iter_tfrecords

    written = sum(1 for f in files for _ in iter_tfrecords(location(f), verify=False))
    if written != expected:
        raise RuntimeError(f"{case.contender} wrote {written} records of {case.workload}, not {expected}")


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


class _Outputs:
    """Fresh output directories for one case's passes. The warm-up's (the first) is
    kept, for the sizes and the read side; the repetitions' are deleted, untimed."""

    def __init__(self, write: Writer, base: Path) -> None:
        self._write = write
        self._base = base
        self._numbers = itertools.count()
        self.made: list[Path] = []

    def run(self) -> None:
        out = self._base / str(next(self._numbers))
        out.mkdir(parents=True)
        self.made.append(out)
        self._write(out)

    def cleanup(self) -> None:
        while len(self.made) > 1:
            shutil.rmtree(self.made.pop(), ignore_errors=True)


def run_write_suite(
    size: Size, scratch: Path, log: Callable[[str], None]
) -> tuple[list[WriteRow], dict[tuple[str, str], Path]]:
    """Run every write case, workload by workload (each workload's contenders
    interleaved); returns the rows and each case's kept output directory."""
    counts, cases, _ = write_cases(size)
    rows: list[WriteRow] = []
    kept: dict[tuple[str, str], Path] = {}
    for workload in dict.fromkeys(case.workload for case in cases):
        group = [case for case in cases if case.workload == workload]
        outputs: dict[str, _Outputs] = {}
        for case in group:
            if case.write is not None:
                base = scratch / "write" / workload / _slug(case.contender)
                outputs[case.contender] = _Outputs(case.write, base)
        timings = measure(
            {name: Case(out.run, out.cleanup) for name, out in outputs.items()}, repeats=size.repeats
        )
        for case in group:
            row = WriteRow(workload, case.contender, counts[workload], skipped=case.skipped)
            rows.append(row)
            if case.write is None:
                log(f"  write {workload:9} {case.contender:22} skipped: {case.skipped}")
                continue
            made = outputs[case.contender].made[0]
            kept[(workload, case.contender)] = made
            _fill(row, case, made, timings[case.contender])
            log(
                f"  write {workload:9} {case.contender:22} {row.records_per_s:10.1f} rec/s "
                f"{row.mb_per_s:8.2f} MB/s {row.bytes_per_record:10.0f} B/rec"
            )
    return rows, kept


def _fill(row: WriteRow, case: WriteCase, made: Path, timing: Timing) -> None:
    files = _recordkit.data_files(made)
    _check_count(files, row.records, case)
    file_bytes = sum(f.stat().st_size for f in files)
    row.seconds = list(timing.seconds)
    row.median_seconds = timing.median
    row.records_per_s = row.records / timing.median
    row.mb_per_s = file_bytes / timing.median / 1e6
    row.bytes_per_record = file_bytes / row.records
    row.file_bytes = file_bytes
    row.peak_rss_mb = timing.peak_rss_delta / 1e6
