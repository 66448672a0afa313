"""Smoke test of benchmarks/field_groups.py at a tiny size: both datasets are written, the
bytes add_fields wrote are measured against the embeddings', and every projection is read
by both readers from both; never how fast (those figures come from a quiet machine)."""

from __future__ import annotations

import json

import pytest
from _benchmark_support import run_benchmark


@pytest.mark.slow
def test_the_field_groups_benchmark_runs() -> None:
    done = run_benchmark("field_groups.py", "--records", "12", "--repeats", "1")
    results = json.loads(done.stdout[done.stdout.index("{") :])
    write = results["write"]
    assert write["embedding_bytes"] == 12 * 512 * 4
    assert write["embedding_bytes"] < write["group_shard_bytes"] <= write["written_bytes"]
    for projection in ("embedding", "embedding+label", "all"):
        for reader in ("numpy", "tf"):
            timing = results[f"{projection} {reader}"]
            assert timing["inline"]["records"] == timing["grouped"]["records"] == 12
            assert len(timing["grouped"]["seconds"]) == 1
            assert timing["grouped_over_inline_speed"] > 0
