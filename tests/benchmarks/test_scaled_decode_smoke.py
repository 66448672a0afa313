"""Smoke test of benchmarks/scaled_decode.py at a tiny size: every reader reads the
workload with the scaled decode on and off, next to the hand-written pipeline, every
repetition is kept and the quality is measured; never how fast (those figures come from
a quiet machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _benchmark_support import run_benchmark


@pytest.mark.slow
def test_the_scaled_decode_benchmark_runs_every_way(tmp_path: Path) -> None:
    out = tmp_path / "scaled.json"
    workload = "1,024-2,048 px, smooth"
    done = run_benchmark(
        "scaled_decode.py", "--records", "4", "--repeats", "2", "--only", workload, "--json", str(out)
    )
    results = json.loads(out.read_text())
    ways = {(row["reader"], row["way"]) for row in results["rows"]}
    assert len(ways) == 7
    assert {reader for reader, _ in ways} == {"tf.data", "numpy", "PyTorch"}
    assert all(len(row["seconds"]) == 2 and row["records"] == 4 for row in results["rows"])
    quality = results["quality"][workload]
    assert all(20 < value < 99 for value in quality.values()), quality
    assert "mean PSNR" in done.stdout
