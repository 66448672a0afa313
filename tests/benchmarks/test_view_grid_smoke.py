"""Smoke test of benchmarks/view_grid.py at a toy size: the server starts, the first and
the last grid page are served with every thumbnail; never how fast (those figures come
from a quiet machine)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, assert_measured_commit, script_run

RUN = script_run(
    "view_grid.py", "--records", "50", "--repeats", "2", "--root", "{out}", "--out", "{out}/view.json"
)


@pytest.mark.slow
def test_the_view_grid_benchmark_runs(benchmark_scripts: Callable[[ScriptRun], ScriptResult]) -> None:
    results = json.loads((benchmark_scripts(RUN).out / "view.json").read_text())
    assert_measured_commit(results)
    assert results["records"] == 50
    for name in ("first_page", "first_page_served", "deep_page"):
        row = results[name]
        assert len(row["seconds"]) == 2
        assert row["min"] == min(row["seconds"])
        assert row["min"] <= row["median"] <= max(row["seconds"])
