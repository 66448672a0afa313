"""Smoke test of benchmarks/parse_options.py at a tiny size: every way of parsing is built,
reads every record and is reported with every pass; never how fast (those figures come
from a quiet machine)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, assert_measured_commit, script_run

CASES = {
    "raw TFRecordDataset",
    "(a0) raw batches, plain map",
    "(a1) raw batches, recordkit's map",
    "(a2) the parse-only row",
    "(b) parse_example_dataset",
    "(c) per record, then batch",
    "(e) (a1), deterministic=False",
    "(f) (a1), no stored sizes",
    "(g) (a1), 1 call",
    "(g) (a1), 2 calls",
    "(d) 2 a call, rebatched",
    "(d) 8 a call, rebatched",
    "(d) 16 a call, rebatched",
}


RUN = script_run(
    "parse_options.py", "--records", "12", "--passes", "2", "--batch", "4", "--json", "{out}/parse.json"
)
REPEATED = script_run(
    *("parse_options.py", "--records", "8", "--passes", "1", "--batch", "4", "--repeat", "3"),
    *("--json", "{out}/parse.json"),
    label="parse_options --repeat",
)


@pytest.mark.slow
def test_the_parse_options_benchmark_runs_every_case(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    done = benchmark_scripts(RUN)
    results = json.loads((done.out / "parse.json").read_text())
    assert_measured_commit(results)
    assert set(results["cases"]) == CASES
    assert all(len(times["wall"]) == len(times["cpu"]) == 2 for times in results["cases"].values())
    assert "| raw TFRecordDataset |" in done.stdout
    assert "| (a2) the parse-only row |" in done.stdout


@pytest.mark.slow
def test_a_repeated_read_times_the_tf_record_dataset_cases_only(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    results = json.loads((benchmark_scripts(REPEATED).out / "parse.json").read_text())
    assert results["repeat"] == 3
    assert set(results["cases"]) == {name for name in CASES if not name.startswith(("(a2)", "(d)"))}
