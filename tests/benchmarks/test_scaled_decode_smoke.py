"""Smoke test of benchmarks/scaled_decode.py at a tiny size: every reader reads the
workload with the scaled decode on and off, next to the hand-written pipeline, every
repetition is kept and the quality is measured; never how fast (those figures come from
a quiet machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _benchmark_support import assert_measured_commit, run_benchmark

from benchmarks import _scaled_decode


@pytest.mark.slow
def test_the_scaled_decode_benchmark_runs_every_way(tmp_path: Path) -> None:
    out = tmp_path / "scaled.json"
    workload = "1,024-2,048 px, smooth"
    done = run_benchmark(
        "scaled_decode.py", "--records", "4", "--repeats", "2", "--only", workload, "--json", str(out)
    )
    results = json.loads(out.read_text())
    assert_measured_commit(results)
    ways = {(row["reader"], row["way"]) for row in results["rows"]}
    assert len(ways) == 9
    assert ("tf.data", _scaled_decode.BEFORE_WAY) in ways
    assert ("tf.data", _scaled_decode.HAND_WRITTEN_ANTIALIASED) in ways
    assert all(len(row["cpu_seconds"]) == 2 for row in results["rows"])
    assert {reader for reader, _ in ways} == {"tf.data", "numpy", "PyTorch"}
    assert all(len(row["seconds"]) == 2 and row["records"] == 4 for row in results["rows"])
    quality = results["quality"][workload]
    assert all(20 < value < 99 for value in quality.values()), quality
    assert "mean PSNR" in done.stdout


def test_each_reader_is_compared_with_its_own_full_decode_not_the_hand_written_pipeline() -> None:
    """The "vs full decode" column of a tf.data row divides by recordkit's
    ``jpeg_scale=full`` row (the hand-written way says "full decode" too, and comes first)."""
    workload = "1,024-2,048 px, smooth"
    rows = [
        _scaled_decode.Row(workload, "tf.data", _scaled_decode.HAND_WRITTEN, 100, [1.0]),
        _scaled_decode.Row(workload, "tf.data", "recordkit, jpeg_scale=full", 100, [2.0]),
        _scaled_decode.Row(workload, "tf.data", "recordkit, jpeg_scale=auto", 100, [1.0]),
    ]
    table = _scaled_decode.format_rows(rows).splitlines()
    auto = [cell.strip() for cell in table[-1].split("|")]
    hand = [cell.strip() for cell in table[2].split("|")]
    assert auto[6:8] == ["2.00x", "2.00x"]  # 100 records/s against full's 50, not hand's 100
    assert hand[6:8] == ["", ""]
