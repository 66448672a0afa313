"""Smoke test of benchmarks/parse_keys.py at a tiny size: every layout is written, parsed
and reported; never how fast (those figures come from a quiet machine)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = (
    "current layout, 10 keys",
    "image sizes in one list, 8 keys",
    "and no audio sample count, 7 keys",
    "floor, 5 keys",
    "current records, 3 bytes keys only",
    "current records, 7 small keys only",
    "raw TFRecordDataset",
)


@pytest.mark.slow
def test_the_parse_keys_benchmark_runs() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "parse_keys.py"), "--records", "12", "--passes", "1",
         "--repeats", "1", "--batch", "4"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line[:38].strip(): line for line in done.stdout.splitlines()[1:]}
    assert set(rows) == set(CASES)
    assert rows["raw TFRecordDataset"][38:].split()[2] == "1.00x"  # rate, CPU, ratio, runs
