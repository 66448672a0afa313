"""Run recordkit's benchmarks against the alternatives and report them.

    python benchmarks/run.py [--size toy|small|full] [--out benchmarks/out] [--publish]

Generates the workloads, writes and reads them with every contender, measures peak
memory on a long stream, prints tables with ratios and the issue's targets, and writes
``results.json`` and ``benchmarks.png`` into ``--out``. ``--publish`` also copies them
to ``benchmarks/results/latest.json`` and ``docs/img/benchmarks.png`` and rewrites the
generated tables of ``docs/performance.md`` (publish ``full`` runs only).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the benchmarks package importable
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import (  # noqa: E402
    _memory,
    _read,
    _reader_speed,
    _report,
    _scaled_decode,
    _stability,
    _tfdata_fields,
    _write,
)
from benchmarks._config import SIZES, Size  # noqa: E402
from benchmarks._provenance import measured_commit  # noqa: E402

PUBLISHED_JSON = ROOT / "benchmarks" / "results" / "latest.json"
PUBLISHED_PLOT = ROOT / "docs" / "img" / "benchmarks.png"
PERFORMANCE_PAGE = ROOT / "docs" / "performance.md"
SUITES = ("write", "read", "memory", "stability", "speed", "fields", "scaled")


def _version(distribution: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_meta(size: Size) -> dict[str, Any]:
    """What the figures were measured on, and with what."""
    import psutil

    import recordkit as rk

    registry = rk.default_registry()
    codecs = {info.name: {"version": info.version, "distribution": info.distribution} for info in registry}
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "size": size.name,
        "config": dataclasses.asdict(size),
        "machine": {
            "cpu": _cpu_model(),
            "cpus": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else os.cpu_count(),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "gpu": "none used (TensorFlow CPU)",
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_start": list(os.getloadavg()),
        },
        "versions": {
            name: _version(name)
            for name in (
                "recordkit",
                "tensorflow",
                "tensorflow-datasets",
                "numpy",
                "pillow",
                "protobuf",
                "soundfile",
            )
        },
        "git": measured_commit(),
        "codecs": codecs,
    }


def run(
    size: Size, out: Path, suites: tuple[str, ...] = SUITES, *, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run ``suites`` at ``size``; write results.json and benchmarks.png into ``out``."""
    results: dict[str, Any] = {
        "meta": machine_meta(size),
        "write": [],
        "read": [],
        "memory": [],
        "stability": [],
        "speed": [],
        "fields": [],
        "scaled": {},
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="recordkit-bench-") as tmp:
        scratch = Path(tmp)
        kept: dict[tuple[str, str], Path] = {}
        if "write" in suites or "read" in suites:
            log(f"write suite ({size.name})")
            write_rows, kept = _write.run_write_suite(size, scratch, log)
            if "write" in suites:
                results["write"] = [dataclasses.asdict(r) for r in write_rows]
        if "read" in suites:
            log(f"read suite ({size.name})")
            records = size.mixed_records
            results["read"] = [dataclasses.asdict(r) for r in _read.run_read_suite(kept, records, size, log)]
        if "memory" in suites:
            log(f"memory suite ({size.name})")
            results["memory"] = [dataclasses.asdict(r) for r in _memory.run_memory_suite(size, scratch, log)]
        if "stability" in suites:
            log(f"stability suite ({size.name}, {size.stability_runs} runs per writer, alternating)")
            stability = _stability.run_stability_suite(size, scratch, log)
            results["stability"] = [dataclasses.asdict(r) for r in stability]
        if "speed" in suites:
            log(f"reader speed suite ({size.name})")
            speed = _reader_speed.run_reader_speed_suite(size, scratch, log)
            results["speed"] = [dataclasses.asdict(r) for r in speed]
        if "fields" in suites:
            log(f"field-by-field tf.data suite ({size.name}, issue 30)")
            fields = _tfdata_fields.run_fields_suite(size, scratch, log)
            results["fields"] = [dataclasses.asdict(r) for r in fields]
        if "scaled" in suites:
            log(f"scaled JPEG decode suite ({size.name}, issue 33)")
            results["scaled"] = _scaled_decode.run_scaled_suite(size, scratch, log)
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)
    results["meta"]["machine"]["load_average_end"] = list(os.getloadavg())
    results["targets"] = [t.as_dict() for t in _report.evaluate_targets(results)]
    out.mkdir(parents=True, exist_ok=True)
    _report.write_json(results, out / "results.json")
    try:
        _report.plot(results, out / "benchmarks.png")
    except ImportError as exc:  # matplotlib comes with the bench extra
        log(f"no plot: {exc} (pip install -e '.[bench]')")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--size",
        choices=sorted(SIZES),
        default="small",
        help="workload size: toy (seconds, smoke test), small (a minute or two), full (the docs)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out", help="where results go")
    parser.add_argument(
        "--only",
        choices=SUITES,
        action="append",
        help="run only this suite (repeatable); read runs the writes it reads; speed is the reader-speed "
        "side by side of issue 13 (writes its own workload); fields is issue 30's field-by-field "
        "side by side (benchmarks/tfdata_fields.py); scaled is issue 33's JPEGs decoded at the "
        "model's size (benchmarks/scaled_decode.py)",
    )
    parser.add_argument(
        "--publish",
        action="store_true",
        help="copy the results to benchmarks/results/latest.json, docs/img/benchmarks.png and the tables "
        "of docs/performance.md",
    )
    args = parser.parse_args(argv)
    size = SIZES[args.size]
    if args.publish and (size.name != "full" or args.only):
        parser.error("--publish takes a full run of every suite (--size full, no --only)")
    results = run(size, args.out, tuple(args.only or SUITES))
    print()
    print(_report.format_tables(results))
    if results["speed"]:
        print("\nreader speed (issue 13):\n" + _reader_speed.format_speed_table(results["speed"]))
        print(_reader_speed.format_ceiling(results["speed"]))
    if results["fields"]:
        rows = [_tfdata_fields.Result(**row) for row in results["fields"]]
        print("\nfield by field (issue 30):\n" + _tfdata_fields.format_results(rows))
    if results["scaled"]:
        scaled = results["scaled"]
        rows_33 = [_scaled_decode.Row(**row) for row in scaled["rows"]]
        print("\nJPEGs decoded at the model's size (issue 33):\n" + _scaled_decode.format_rows(rows_33))
        print(_scaled_decode.format_quality(scaled["quality"]))
    print(
        f"\nresults: {args.out / 'results.json'}  plot: {args.out / 'benchmarks.png'}  "
        f"({results['meta']['seconds']} s)"
    )
    if args.publish:
        PUBLISHED_JSON.parent.mkdir(parents=True, exist_ok=True)
        PUBLISHED_PLOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.out / "results.json", PUBLISHED_JSON)
        shutil.copyfile(args.out / "benchmarks.png", PUBLISHED_PLOT)
        _report.publish_markdown(results, PERFORMANCE_PAGE)
        published = (PUBLISHED_JSON, PUBLISHED_PLOT, PERFORMANCE_PAGE)
        print("published: " + ", ".join(str(p.relative_to(ROOT)) for p in published))
    return 0


if __name__ == "__main__":
    sys.exit(main())
