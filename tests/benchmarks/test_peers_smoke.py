"""Smoke test of benchmarks/peers.py at toy size without the peers (their venvs are made
by `make bench-peers`, never by the tests): recordkit's child runs every task on every
record and the report holds every round; never how fast."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable

import pytest
from _benchmark_support import ROOT, ScriptResult, ScriptRun, assert_measured_commit, script_run

from benchmarks._peer_adapters import CONTENDERS
from benchmarks.peers import CPU_TORCH, PEER_PACKAGES, TORCHVISION, table

# Two batches of 64 random indices, not the 2,000 of a measurement: the same code paths.
RUN = script_run(
    *("peers.py", "--records", "24", "--rounds", "2", "--random-indices", "128", "--no-peers"),
    *("--out", "{out}"),
    needs=("torch",),
)


@pytest.mark.slow
def test_the_peer_benchmark_runs_recordkit_on_every_task(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    done = benchmark_scripts(RUN)
    results = json.loads((done.out / "peers.json").read_text())
    assert_measured_commit(results)
    assert results["records"] == 24
    assert len(results["rounds"]) == 2
    for one in results["rounds"]:
        row = one["recordkit"]
        tasks = ("write", "read", "dataloader_0", "dataloader_1", "dataloader_2", "dataloader_2_steady")
        for task in (*tasks, "thread_loader"):
            assert row[task]["records"] == 24, task
        assert row["random_1"]["records"] == row["random_64"]["records"] == 128
        assert row["dataloader_2"]["worker_rss_mb"] > 0  # two worker processes were seen
        assert row["bytes_per_record"] > 0
    table = (done.out / "peers.md").read_text()
    assert table.count("| recordkit |") == 9
    assert "| recordkit | read |" in done.stdout


def _adapter_source(name: str) -> ast.Module:
    return ast.parse((ROOT / "benchmarks" / "_peer_adapters" / f"_{name}.py").read_text())


def test_every_peer_has_an_adapter_that_cites_its_docs_and_covers_every_task() -> None:
    """The peers import their own libraries, absent here: their adapters are read, not run."""
    assert sorted(PEER_PACKAGES) == sorted(c for c in CONTENDERS if c != "recordkit")
    assert {"streaming", "litdata", "huggingface"} <= set(PEER_PACKAGES)
    for name in CONTENDERS:
        module = _adapter_source(name)
        defined = {node.name for node in module.body if isinstance(node, ast.FunctionDef)}
        assert {"write", "read", "random"} <= defined, name
        assert "own_loader" in defined or {"loader", "batch_size"} <= defined, name
        docstring = ast.get_docstring(module) or ""
        doc = next(
            node.value.value
            for node in module.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "DOC" for t in node.targets)
            and isinstance(node.value, ast.Constant)
        )
        assert doc in docstring, f"{name}: DOC {doc!r} is not among the pages its docstring cites"


def test_torchvision_peers_get_their_own_cuda_torch_and_the_others_the_cpu_torch() -> None:
    for peer in ("streaming", "litdata"):
        assert set(TORCHVISION) <= set(PEER_PACKAGES[peer]), peer
        assert CPU_TORCH not in PEER_PACKAGES[peer], peer
    for peer in ("webdataset", "grain", "huggingface"):
        assert CPU_TORCH in PEER_PACKAGES[peer], peer


def _round(read: dict[str, float]) -> dict[str, dict[str, object]]:
    return {
        name: {"read": {"records": 10, "records_per_s": rate, "cpu_us_per_record": 1e6 / rate}}
        for name, rate in read.items()
    }


def test_the_report_gives_recordkit_the_ratio_of_its_median_to_the_best_peers_median() -> None:
    rounds = [
        _round({"recordkit": 300.0, "grain": 100.0, "litdata": 150.0}),
        _round({"recordkit": 200.0, "grain": 120.0, "litdata": 50.0}),
        _round({"recordkit": 400.0, "grain": 110.0, "litdata": 100.0}),
    ]
    report = table(rounds)
    # medians: recordkit 300, grain 110, litdata 100: the best peer is grain; CPU per
    # record is each round's 1e6 / rate here, so its medians are 3,333 and 9,091
    assert "| recordkit | read | 300 200 400 | 300 | 3,333 |  | 2.73x |" in report
    assert "| grain | read | 100 120 110 | 110 | 9,091 |  |  |" in report
