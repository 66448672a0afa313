"""Smoke test of benchmarks/view_grid.py at a toy size: the server starts, the first and
the last grid page are served with every thumbnail; never how fast (those figures come
from a quiet machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _benchmark_support import assert_measured_commit, run_benchmark


@pytest.mark.slow
def test_the_view_grid_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "view.json"
    run_benchmark(
        "view_grid.py", "--records", "50", "--repeats", "2", "--root", str(tmp_path), "--out", str(out)
    )
    results = json.loads(out.read_text())
    assert_measured_commit(results)
    assert results["records"] == 50
    for name in ("first_page", "first_page_served", "deep_page"):
        row = results[name]
        assert len(row["seconds"]) == 2
        assert row["min"] == min(row["seconds"])
        assert row["min"] <= row["median"] <= max(row["seconds"])
