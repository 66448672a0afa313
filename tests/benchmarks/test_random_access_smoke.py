"""Smoke test of benchmarks/random_access.py at a tiny size: every contender runs and
reads every record it should; never how fast (those figures come from a quiet machine)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, assert_measured_commit, script_run

RUN = script_run(
    "random_access.py", "--records", "12", "--repeats", "1", "--no-tensorflow", "--out", "{out}/ra.json"
)


@pytest.mark.slow
def test_the_random_access_benchmark_runs(benchmark_scripts: Callable[[ScriptRun], ScriptResult]) -> None:
    results = json.loads((benchmark_scripts(RUN).out / "ra.json").read_text())
    assert_measured_commit(results)
    assert results["records"] == 12
    assert results["iter_records"]["records"] == 12
    assert results["random_access_1"]["records"] == 12
    assert results["random_access_64"]["records"] == 64
    assert results["read_batch_64"]["records"] == results["read_batch_64_threads"]["records"] == 64
    if importlib.util.find_spec("torch") is not None:
        assert results["torch_map_dataset"]["records"] == 12
        assert results["torch_iterable_dataset"]["records"] == 12
        for name in ("torch_batches_workers", "torch_batches_threads", "torch_batch_map_workers"):
            assert results[name]["records"] == 12, name
    assert "load_dataset" not in results
    assert all(
        row["records_per_s"] > 0 for name, row in results.items() if name != "git" and isinstance(row, dict)
    )
