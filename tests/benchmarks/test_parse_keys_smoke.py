"""Smoke test of benchmarks/parse_keys.py at a tiny size: every layout is written, parsed
and reported; never how fast (those figures come from a quiet machine)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, script_run

CASES = (
    "current layout, 10 keys",
    "boxes and labels as lists (bbox 1)",
    "image sizes in one list, 8 keys",
    "and no audio sample count, 7 keys",
    "floor, 5 keys",
    "current records, 3 bytes keys only",
    "current records, 7 small keys only",
    "raw TFRecordDataset",
    "decoded: boxes, packed",
    "decoded: boxes, lists",
    "decoded: every field, packed",
    "decoded: every field, lists",
)


RUN = script_run("parse_keys.py", "--records", "12", "--passes", "1", "--repeats", "1", "--batch", "4")


@pytest.mark.slow
def test_the_parse_keys_benchmark_runs(benchmark_scripts: Callable[[ScriptRun], ScriptResult]) -> None:
    done = benchmark_scripts(RUN)
    rows = {line[:38].strip(): line for line in done.stdout.splitlines()[1:]}
    assert set(rows) == set(CASES)
    assert rows["raw TFRecordDataset"][38:].split()[3] == "1.00x"  # rate, best, CPU, ratio, runs
