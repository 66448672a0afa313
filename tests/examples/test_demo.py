"""examples/demo.py (what ``make demo`` runs): it checks what it reads back, closes with
the speed and the bytes per field, and keeps TensorFlow's log lines out."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_demo_runs_and_closes_with_its_timings(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--out", str(tmp_path / "out"),
         "--records", "16", "--workers", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == f"demo OK: dataset at {tmp_path / 'out'}"
    assert re.fullmatch(r"  written +\d+ records/s \(0 encoding workers\)", lines[-5])
    assert re.fullmatch(r"  read +\d+ records/s with tf\.data .*", lines[-4])
    assert re.fullmatch(r"  read +\d+ records/s without TensorFlow .*", lines[-3])
    per_field = dict(re.findall(r"(\w+|\(framing\)) (\d+)", lines[-2].split(":", 1)[1]))
    assert set(per_field) == {"image", "tone", "caption", "objects", "label", "(framing)"}
    assert int(per_field["tone"]) > int(per_field["label"])
    # TensorFlow's C++ log lines after start-up are hidden (TF_CPP_MIN_LOG_LEVEL=3).
    assert "cpu_feature_guard" not in result.stderr
    assert "cuInit" not in result.stderr
