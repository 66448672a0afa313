"""Smoke test of benchmarks/peers.py at toy size without the peers (their venvs are made
by `make bench-peers`, never by the tests): recordkit's child runs every task on every
record and the report holds every round; never how fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _benchmark_support import run_benchmark

pytest.importorskip("torch")


@pytest.mark.slow
def test_the_peer_benchmark_runs_recordkit_on_every_task(tmp_path: Path) -> None:
    done = run_benchmark("peers.py", "--records", "24", "--rounds", "2", "--no-peers", "--out", str(tmp_path))
    results = json.loads((tmp_path / "peers.json").read_text())
    assert results["records"] == 24
    assert len(results["rounds"]) == 2
    for one in results["rounds"]:
        row = one["recordkit"]
        for task in ("write", "read", "dataloader_0", "dataloader_1", "dataloader_2", "thread_loader"):
            assert row[task]["records"] == 24, task
        assert row["random_1"]["records"] == row["random_64"]["records"] == 2000
        assert row["dataloader_2"]["worker_rss_mb"] > 0  # two worker processes were seen
        assert row["bytes_per_record"] > 0
    table = (tmp_path / "peers.md").read_text()
    assert table.count("| recordkit |") == 8
    assert "| recordkit | read |" in done.stdout
