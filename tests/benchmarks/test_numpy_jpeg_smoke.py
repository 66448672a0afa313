"""Smoke test of benchmarks/numpy_jpeg.py at a tiny size: both ways of decoding read every
record in one thread and in two, at full size and resized to 96 x 96 (decoded at 1/2, the
Pillow way too: the script checks that both ways give the same pixels), and the three
decoders time the JPEGs alone at both scales; never how fast (those figures come from a
quiet machine)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, script_run

RUN = script_run("numpy_jpeg.py", "--records", "8", "--passes", "1")


@pytest.mark.slow
def test_the_numpy_jpeg_benchmark_runs(benchmark_scripts: Callable[[ScriptRun], ScriptResult]) -> None:
    done = benchmark_scripts(RUN)
    readers, alone = done.stdout.split("\n\n")
    rows = [(line[:34].strip(), line[35:45].strip()) for line in readers.splitlines()[1:]]
    expected = [
        (f"iter_records, {case}{size}", way)
        for case in ("1 thread", "2 threads")
        for size in ("", ", 96x96")
        for way in ("simplejpeg", "pillow", "ratio")
    ]
    expected += [
        (f"2 threads / 1 thread{size}", way) for size in ("", ", 96x96") for way in ("simplejpeg", "pillow")
    ]
    assert rows == expected
    ratios = [line for line in readers.splitlines() if line[35:45].strip() == "ratio"]
    assert len(ratios) == 4
    assert all(line.split()[-1].endswith("x") for line in ratios)
    decoders = [line[35:50].strip() for line in alone.splitlines()[1:]]
    assert decoders == [
        f"{name}{scale}" for scale in ("", " 1/2") for name in ("simplejpeg", "pillow", "tensorflow")
    ]
