"""Smoke test of benchmarks/field_groups.py at a tiny size: at each size both datasets are
written, the bytes add_fields wrote are measured against the embeddings', and every
projection (the group's fields alone, one of them, one with a field of the split's, all)
is read by both readers from both, wall and CPU seconds kept; never how fast (those
figures come from a quiet machine)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, assert_measured_commit, script_run

RUN = script_run("field_groups.py", "--records", "6", "12", "--repeats", "1")


@pytest.mark.slow
def test_the_field_groups_benchmark_runs_at_each_size_it_is_given(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    done = benchmark_scripts(RUN)
    results = json.loads(done.stdout[done.stdout.index("{") :])
    assert_measured_commit(results)
    runs = results["runs"]
    assert [run["records"] for run in runs] == [6, 12]
    for run in runs:
        size, write = run["records"], run["write"]
        assert run["shard_bytes"] == 128 << 20  # the writer's default shard size
        assert write["embedding_bytes"] == size * 512 * 4
        assert write["embedding_bytes"] < write["group_shard_bytes"] <= write["written_bytes"]
        for projection in ("embedding+predicted_label", "embedding", "embedding+label", "all"):
            for reader in ("numpy", "tf"):
                timing = run[f"{projection} {reader}"]
                assert timing["inline"]["records"] == timing["grouped"]["records"] == size
                assert len(timing["grouped"]["seconds"]) == len(timing["grouped"]["cpu_seconds"]) == 1
                assert timing["grouped_over_inline_records_per_s"] > 0
                assert timing["grouped_over_inline_records_per_cpu_s"] > 0
