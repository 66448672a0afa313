"""Smoke test of benchmarks/epoch_setup.py at a tiny size, A/B against this very checkout:
every shape and reader runs, both sides give the same pairs, and the passes read the
records they should; never how fast (those figures come from a quiet machine)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _benchmark_support import ROOT, ScriptResult, ScriptRun, assert_measured_commit, script_run

RUN = script_run(
    "epoch_setup.py", "--records", "3000", "--rounds", "1", "--passes", "1", "--base", str(ROOT),
    "--out", "{out}/setup.json", needs=("torch",),
)  # fmt: skip


@pytest.mark.slow
def test_the_epoch_setup_benchmark_runs_a_and_b(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    results = json.loads((benchmark_scripts(RUN).out / "setup.json").read_text())
    assert_measured_commit(results)
    assert results["one reader, whole epoch"]["pairs"] == 3000
    assert results["worker 0 of 2, rank 0 of 4"]["pairs"] < 3000
    for shape in ("one reader, whole epoch", "rank 0 of 2, resumed", "worker 0 of 2, rank 0 of 4"):
        assert len(results[shape]["A"]["cpu_seconds"]) == len(results[shape]["B"]["cpu_seconds"]) == 1
    passes = results["passes"]
    assert (
        passes["plain B"]["records"]
        == passes["canonical A"]["records"]
        == passes["mixture B"]["records"]
        == 3000
    )
    assert passes["elastic A"]["records"] == passes["elastic B"]["records"] < 3000
