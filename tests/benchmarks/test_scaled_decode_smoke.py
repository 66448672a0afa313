"""Smoke test of benchmarks/scaled_decode.py at a tiny size: every reader reads the
workload with the scaled decode on and off, next to the hand-written pipeline, every
repetition is kept and the quality is measured; never how fast (those figures come from
a quiet machine)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, assert_measured_commit, script_run

from benchmarks import _scaled_decode

WORKLOAD = "1,024-2,048 px, smooth"
# One record (of 1,024 to 2,048 px) reads every way and measures the quality all the same,
# as run.py's toy size does; two repeats keep "every repetition" checked.
RUN = script_run(
    "scaled_decode.py", "--records", "1", "--repeats", "2", "--only", WORKLOAD, "--json", "{out}/scaled.json"
)


@pytest.mark.slow
def test_the_scaled_decode_benchmark_runs_every_way(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    workload = WORKLOAD
    done = benchmark_scripts(RUN)
    results = json.loads((done.out / "scaled.json").read_text())
    assert_measured_commit(results)
    ways = {(row["reader"], row["way"]) for row in results["rows"]}
    assert len(ways) == 10
    assert ("numpy", _scaled_decode.NUMPY_ANTIALIASED) in ways
    assert ("tf.data", _scaled_decode.BEFORE_WAY) in ways
    assert ("tf.data", _scaled_decode.HAND_WRITTEN_ANTIALIASED) in ways
    assert all(len(row["cpu_seconds"]) == 2 for row in results["rows"])
    assert {reader for reader, _ in ways} == {"tf.data", "numpy", "PyTorch"}
    assert all(len(row["seconds"]) == 2 and row["records"] == 1 for row in results["rows"])
    quality = results["quality"][workload]
    assert all(20 < value < 99 for value in quality.values()), quality
    assert "mean PSNR" in done.stdout


def test_each_reader_is_compared_with_its_own_full_decode_and_with_a_full_decode_of_equal_quality() -> None:
    """The "vs jpeg_scale=full" columns of a row divide by its reader's ``jpeg_scale=full``
    row (the hand-written ways decode in full too, and come first); the "equal quality"
    columns by the reader's full decode resized with antialiasing."""
    workload = "1,024-2,048 px, smooth"
    full = f"recordkit, {_scaled_decode.FULL_WAY}{_scaled_decode.FULL_SUFFIX}"
    rows = [
        _scaled_decode.Row(workload, "tf.data", _scaled_decode.HAND_WRITTEN, 100, [1.0]),
        _scaled_decode.Row(workload, "tf.data", _scaled_decode.HAND_WRITTEN_ANTIALIASED, 100, [4.0, 5.0]),
        _scaled_decode.Row(workload, "tf.data", full, 100, [2.0]),
        _scaled_decode.Row(
            workload, "tf.data", f"recordkit, jpeg_scale=auto{_scaled_decode.AUTO_SUFFIX}", 100, [1.0]
        ),
    ]
    table = _scaled_decode.format_rows(rows).splitlines()
    auto = [cell.strip() for cell in table[-1].split("|")]
    hand = [cell.strip() for cell in table[2].split("|")]
    assert auto[6:10] == ["2.00x", "2.00x", "4.50x", "4.00x"]  # against full's 50 records/s, not hand's 100
    assert hand[6:10] == ["", "", "", ""]
