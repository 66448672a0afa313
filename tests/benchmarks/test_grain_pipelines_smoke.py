"""Smoke test of benchmarks/grain_pipelines.py at a tiny size: every pipeline reads every
record (batches of 4, the last one partial), the worker processes' shared memory
included, and the run leaves no segment in ``/dev/shm`` (the script counts what it left
and exits 1 on any, which the fixture reports); never how fast (those figures come from
a quiet machine)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, script_run

RUN = script_run("grain_pipelines.py", "--records", "10", "--batch", "4", "--repeats", "1", needs=("grain",))
PIPELINES = [
    "map_dataset_indexed",
    "iter_threads_1",
    "iter_threads_2",
    "iter_threads_4",
    "mp_prefetch_workers_1",
    "mp_prefetch_workers_2",
]
ROW = re.compile(r"(\S+) +median +[\d,]+ records/s  \(runs [\d,]+\)")


@pytest.mark.slow
def test_every_grain_pipeline_runs_and_leaves_no_shared_memory(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    lines = benchmark_scripts(RUN).stdout.splitlines()
    rows = [ROW.fullmatch(line) for line in lines[:-1]]
    assert all(rows), lines
    assert [row[1] for row in rows if row] == PIPELINES
    assert lines[-1] == "shared memory segments left in /dev/shm: 0"
