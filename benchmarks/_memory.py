"""Memory on a long stream: peak RSS of fresh processes at growing record counts.

Each (contender, record count) runs in its own process (:mod:`benchmarks._stream_child`),
so one run's allocations cannot hide another's: ``ru_maxrss`` is that process's peak.
``recordkit read`` reads back what ``recordkit write`` wrote at the same count.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks._config import Size

__all__ = ["MemoryRow", "run_memory_suite"]

ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class MemoryRow:
    contender: str
    records: int
    seconds: float = 0.0
    records_per_s: float = 0.0
    baseline_rss_mb: float = 0.0
    peak_rss_mb: float = 0.0
    growth_mb: float = 0.0
    skipped: str = ""


def _child(contender: str, count: int, directory: Path) -> dict[str, float]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [
        sys.executable,
        "-m",
        "benchmarks._stream_child",
        "--contender",
        contender,
        "--count",
        str(count),
        "--dir",
        str(directory),
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{contender} at {count} records failed:\n{done.stderr[-4000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_memory_suite(size: Size, scratch: Path, log: Callable[[str], None]) -> list[MemoryRow]:
    rows = []
    for count in size.stream_counts:
        base = scratch / "stream" / str(count)
        for contender in size.stream_contenders:
            directory = base / ("hand" if contender.startswith("hand") else "recordkit")
            if not contender.endswith("read"):
                directory.mkdir(parents=True, exist_ok=True)
            result = _child(contender, count, directory)
            row = MemoryRow(
                contender,
                int(result["records"]),
                seconds=result["seconds"],
                records_per_s=result["records"] / result["seconds"],
                baseline_rss_mb=result["baseline_rss"] / 1e6,
                peak_rss_mb=result["peak_rss"] / 1e6,
                growth_mb=(result["peak_rss"] - result["baseline_rss"]) / 1e6,
            )
            rows.append(row)
            log(
                f"  memory {contender:20} {count:>8} records: peak {row.peak_rss_mb:7.1f} MB "
                f"(+{row.growth_mb:6.1f} MB over the baseline) {row.records_per_s:9.0f} rec/s"
            )
        shutil.rmtree(base, ignore_errors=True)
    return rows
