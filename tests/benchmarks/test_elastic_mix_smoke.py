"""Smoke test of benchmarks/elastic_mix.py at a tiny size: every contender runs and reads
the records it should; never how fast (those figures come from a quiet machine)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, assert_measured_commit, script_run

RUN = script_run(
    "elastic_mix.py",
    *("--records", "40", "--shard-records", "7", "--repeats", "1", "--out", "{out}/elastic.json"),
    needs=("torch",),
)


@pytest.mark.slow
def test_the_elastic_and_mixture_benchmark_runs(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    run = benchmark_scripts(RUN)
    results = json.loads((run.out / "elastic.json").read_text())
    assert_measured_commit(results)
    # The dataset's size under a key of its own (the ``records`` row, ``ds.records()``,
    # has the key ``records``: the count written there was lost under it).
    assert results["dataset_records"] == 40
    assert results["workload"] == "small"
    for name in (
        "plain",
        "plain_shuffled",
        "records",
        "canonical_in_order",
        "canonical",
        "mixture_in_order",
        "mixture",
    ):
        assert results[name]["records"] == 40, name
    assert results["elastic"]["records"] == 40 - 32  # the state after one batch of 8 on each of 4 ranks
    # Rank 0 of the 2 resumed ranks, against the same records read without the epoch order.
    assert 0 < results["elastic_rank"]["records"] == results["plain_share"]["records"] < 40 - 32
    # ... and against the plain read of as many records in order (beside its ratio to plain).
    assert results["plain_quarter"]["records"] == results["elastic_rank"]["records"]
    assert results["elastic_rank"]["as_many_in_order_baseline"] == "plain_quarter"
    assert results["elastic_rank"]["cpu_ratio_to_as_many_in_order"] > 0
    # The same rank dealt its share in blocks of a batch of 64 (what a DataLoader run
    # reads): the 8 records left are one block, rank 0's.
    assert results["elastic_rank_batched"]["records"] == results["plain_share_batched"]["records"] == 40 - 32
    for name, baseline in (
        ("canonical", "plain_shuffled"),
        ("mixture", "plain_shuffled"),
        ("elastic_rank", "plain_share"),
        ("elastic_rank_batched", "plain_share_batched"),
    ):
        assert results[name]["same_count_baseline"] == baseline
        assert results[name]["cpu_ratio_to_same_count"] > 0
    # The tf.data rows, timed in a child process of their own, with their page faults.
    for name in ("tf_plain", "tf_shuffled", "tf_canonical_in_order", "tf_canonical", "tf_mixture"):
        assert results[name]["records"] == 40, name
        assert results[name]["baseline"] == "tf_plain"
        assert len(results[name]["page_faults"]) == 1, name
    assert "tf.data rows: in a child process of their own" in run.stdout
    # Rank 0 of 2 reads what is left (one block of up to 64: all of it), against the plain
    # read of as many batches (one, of the 40 records).
    assert results["tf_elastic"]["records"] == 40 - 32
    assert results["tf_elastic_two_ranks"]["records"] == 40 - 32
    assert results["tf_plain_share"]["records"] == 40
    assert results["tf_elastic"]["same_count_baseline"] == "tf_plain_share"
    assert results["tf_elastic"]["cpu_ratio_to_same_count"] > 0
    assert all(
        row["records_per_s"] > 0 for name, row in results.items() if name != "git" and isinstance(row, dict)
    )


@pytest.mark.slow  # torch's import, when no test before it made it
def test_no_torch_leaves_the_pytorch_rows_out() -> None:
    # With --no-tf too, no row at all: the datasets written and nothing timed, in this process.
    pytest.importorskip("torch")
    from benchmarks import elastic_mix

    results = elastic_mix.main(
        ["--records", "40", "--shard-records", "7", "--repeats", "1", "--no-torch", "--no-tf"]
    )
    assert "plain" not in results
    assert "tf_plain" not in results
    assert results["dataset_records"] == 40


@pytest.mark.slow  # TensorFlow's import, when no test before it made it
def test_tf_same_process_times_the_tf_rows_here(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import elastic_mix

    tiny = ["--records", "40", "--shard-records", "7", "--repeats", "1", "--no-torch"]
    results = elastic_mix.main([*tiny, "--tf-same-process", "--only", "tf_canonical_in_order"])
    assert "plain" not in results
    assert results["tf_plain"]["records"] == results["tf_canonical_in_order"]["records"] == 40
    assert set(results) & {"tf_canonical", "tf_mixture"} == set()  # --only
    assert "tf.data rows: in this process" in capsys.readouterr().out
