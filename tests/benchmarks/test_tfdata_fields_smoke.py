"""Smoke test of benchmarks/tfdata_fields.py at a tiny size: every field group is read by
recordkit and by the hand-written pipeline over the same shard, autotuner on and off,
with the limits and the stage-by-stage rows, and every pass is printed; never how fast
(those figures come from a quiet machine)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, assert_measured_commit, script_run

GROUPS = ("image", "audio", "boxes, label, text", "all five")
RUN = script_run(
    "tfdata_fields.py", "--records", "8", "--passes", "2", "--stages", "--json", "{out}/fields.json"
)


@pytest.mark.slow
def test_the_field_by_field_benchmark_runs_every_case(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    done = benchmark_scripts(RUN)
    results = json.loads((done.out / "fields.json").read_text())
    assert_measured_commit(results)
    rows = {(row["group"], row["pipeline"]) for row in results["fields"]}
    for suffix in ("", ", autotuner off"):
        for group in GROUPS:
            assert {(group + suffix, "hand-written"), (group + suffix, "recordkit")} <= rows
        limits = {"raw TFRecordDataset", "parse only (recordkit spec)", "decode limit"}
        assert {("limits" + suffix, name) for name in limits} <= rows
    assert ("image", "recordkit, jpeg_dct: fast") in rows  # the hand-written pipeline's DCT
    # The hand-written pipeline with recordkit's fixed parallel calls, for every group.
    assert {(group, "hand-written, num_parallel_calls=CPUs+1") for group in GROUPS} <= rows
    assert all(len(row["wall"]) == len(row["cpu"]) == len(row["first_cpu"]) == 2 for row in results["fields"])
    stages = {(row["group"], row["pipeline"][0]) for row in results["stages"]}
    assert stages == {(group, str(stage)) for group in GROUPS for stage in range(1, 7)}
    assert "| all five | recordkit |" in done.stdout
    assert "hand-written" in done.stdout
