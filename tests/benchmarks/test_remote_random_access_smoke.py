"""Smoke test of benchmarks/remote.py's random-access part at a tiny size: it starts its
servers, reads every record it should, and counts the S3 requests; never how fast
(those figures come from a quiet machine)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, assert_measured_commit, script_run

RUN = script_run(
    *("remote.py", "--records", "12", "--repeats", "1", "--random-access-only", "--out", "{out}/remote.json"),
    needs=("s3fs", "gcsfs", "moto.server", "gcp_storage_emulator"),
)


@pytest.mark.slow
def test_the_remote_random_access_benchmark_runs(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    results = json.loads((benchmark_scripts(RUN).out / "remote.json").read_text())
    assert_measured_commit(results)
    for store in ("local", "s3", "gs"):
        assert results[store]["random_access_1"]["records"] == 12
        assert results[store]["random_access_64"]["records"] == 64
        assert results[store]["random_access_bytes_64"]["records"] == 64
        assert "iter_records" not in results[store]
    requests = results["s3"]["requests"]
    assert requests["one_record"] == {"GetObject": 1}
    # 64 random indices into 12 records ask for every record: each shard's records lie
    # end to end, so a batch is one ranged GET per shard.
    assert requests["batch_of_64"] == {"GetObject": requests["shards"]}
    # Opening reads the manifest alone: each shard's index loads on that shard's first read.
    assert requests["open"]["GetObject"] == 1
