"""Smoke test of benchmarks/numpy_jpeg.py at a tiny size: both ways of decoding read every
record in one thread and in two, and the three decoders time the JPEGs alone; never how
fast (those figures come from a quiet machine)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, script_run

RUN = script_run("numpy_jpeg.py", "--records", "8", "--passes", "1")


@pytest.mark.slow
def test_the_numpy_jpeg_benchmark_runs(benchmark_scripts: Callable[[ScriptRun], ScriptResult]) -> None:
    done = benchmark_scripts(RUN)
    readers, alone = done.stdout.split("\n\n")
    rows = [(line[:26].strip(), line[27:37].strip()) for line in readers.splitlines()[1:]]
    expected = [
        (f"iter_records, {case}", way)
        for case in ("1 thread", "2 threads")
        for way in ("simplejpeg", "pillow", "ratio")
    ]
    expected += [("2 threads / 1 thread", way) for way in ("simplejpeg", "pillow")]
    assert rows == expected
    assert all(
        line.split()[-1].endswith("x") for line in readers.splitlines() if line[27:37].strip() == "ratio"
    )
    decoders = [line[27:37].strip() for line in alone.splitlines()[1:]]
    assert decoders == ["simplejpeg", "pillow", "tensorflow"]
