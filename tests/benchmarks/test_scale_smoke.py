"""Smoke test of benchmarks/scale.py at a toy size: every operation runs in its own
process on real tiny shards, once (each repetition is a process that starts Python and
often TensorFlow: the whole run at two repetitions took a minute of the suite), and
every repetition of one cheap operation is reported with its fastest and median; never
how fast (those figures come from a quiet machine)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _benchmark_support import ScriptResult, ScriptRun, assert_measured_commit, script_run

from benchmarks import scale

RUN = script_run(
    "scale.py",
    *("--root", "{out}/data", "--out", "{out}/scale.json", "--repeats", "1"),
    *("--shards", "3", "--records", "2", "--csv", "{out}/scale.csv", "--markdown", "{out}/scale.md"),
    *("--verify-mb", "1", "--verify-total-mb", "2"),
    # The records-R datasets run the shards' operations again: the ones checked below only
    # (each is a process that imports recordkit, about a second).
    *("--record-ops", "open_first", "last_random", "verify_1"),
)


@pytest.mark.slow
def test_the_scale_benchmark_runs_every_operation_and_keeps_every_repetition(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    out = benchmark_scripts(RUN).out
    table = out / "scale.md"
    results = json.loads((out / "scale.json").read_text())
    assert_measured_commit(results)
    row = results["shards"]["3"]
    assert row["manifest_bytes"] > 0
    ops = ("open_first", "len", "last_random", "tf_first", "verify_1", "verify_2_processes")
    ops += ("stats_sample", "index", "beam_commit")
    for op in ops:
        seconds = row[op]["seconds"]
        assert len(seconds["values"]) == 1
        assert seconds["min"] == seconds["median"] == seconds["values"][0] > 0
    assert set(results["records"]["2"]) == {"open_first", "last_random", "verify_1"}  # --record-ops
    with (out / "scale.csv").open() as written:
        rows = list(csv.DictReader(written))
    assert {r["op"] for r in rows} >= {"open_first", "append", "verify_2_threads"}
    assert "| 3 |" in table.read_text()
    # verify on shards of 1 MB: each way of running it, and the speed-ups from this run's medians.
    verify = results["verify"]["1"]
    for op in ("verify_1", "verify_2_threads", "verify_2_processes"):
        assert len(verify[op]["seconds"]["values"]) == 1
    assert verify["speedup_threads"] == pytest.approx(
        verify["verify_1"]["seconds"]["median"] / verify["verify_2_threads"]["seconds"]["median"]
    )
    assert "| 1 |" in table.read_text()


@pytest.mark.slow
def test_an_operation_measured_three_times_keeps_every_repetition(tmp_path: Path) -> None:
    data = scale.shards_dataset(tmp_path, 3)
    row = scale.measure("len", data, 3)
    values = row["seconds"]["values"]
    assert len(values) == 3
    assert all(value > 0 for value in values)
    assert row["seconds"]["min"] == min(values)
    assert row["seconds"]["median"] == sorted(values)[1]
    assert len(row["peak_mb"]["values"]) == 3
