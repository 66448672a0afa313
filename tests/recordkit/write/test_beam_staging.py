"""The Beam writer's staging folder is one a run (``.beam-staging/<run>/``): the sweeps
that follow a commit (an overwrite's in a bucket, another Beam run's) delete only the
staging folders of runs that can no longer commit, never those of a Beam append built on
the new manifest and still writing (sdk/recordkit/write/_beam.py, _replace.py; before,
both deleted every staged file, and the later append failed at its commit, its records
not written). In the local S3 server, where no lock keeps the runs apart.
"""

from __future__ import annotations

from typing import Any

import pytest
from _beam_support import SCHEMA, read_ids, records, run, write_to
from _object_stores import Bucket

import recordkit as rk
from recordkit.storage import location
from recordkit.write import _beam as beam_writer
from recordkit.write import _writer as writer_module  # private: runs an append between commit and sweep

pytestmark = pytest.mark.slow


def _staged(url: str, options: dict[str, Any]) -> list[str]:
    return [name for name in location(url, options).walk_files() if name.startswith(".beam-staging/")]


def test_an_overwrites_sweep_leaves_a_later_beam_appends_staging_alone(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An overwrite commits; a Beam append is built on its manifest and stages its shards;
    then the overwrite sweeps what its manifest does not list: the append's staged shards
    stay, and its commit adds every record."""
    url, options = s3_bucket.join("pets"), s3_bucket.storage_options
    run(write_to(url, {"train": records(12)}, options, num_shards=2))
    run(write_to(url, {"train": records(6, start=700)}, options, num_shards=1, append=True))
    sweep = writer_module._remove_old_objects
    real_write_shard = beam_writer.write_shard
    swept: list[list[str]] = []

    def sweep_while_the_append_stages(*args: Any) -> None:
        """The overwrite's sweep, run once the append has staged its first shard."""

        def staged_then_swept(*shard_args: Any) -> Any:
            info = real_write_shard(*shard_args)
            if not swept:
                before = _staged(url, options)
                sweep(*args)
                swept.append(before)
                assert _staged(url, options) == before  # the append's staged shards are still there
            return info

        with monkeypatch.context() as patch:
            patch.setattr(beam_writer, "write_shard", staged_then_swept)
            run(write_to(url, {"train": records(10, start=300)}, options, num_shards=2, append=True))

    monkeypatch.setattr(writer_module, "_remove_old_objects", sweep_while_the_append_stages)
    rk.write_dataset(
        records(8, start=100), SCHEMA, url, key="id", overwrite=True, progress=False, storage_options=options
    )
    assert swept
    assert swept[0]  # the sweep ran while staged shards were there
    assert read_ids(url, storage_options=options) == [*range(100, 108), *range(300, 310)]
    assert _staged(url, options) == []  # the append's commit cleared its own


def test_a_beam_commit_leaves_a_later_runs_staging_alone(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Beam append commits; a second append is built on its manifest and stages its
    shards before the first clears its staging: the first clears only its own, and the
    second commits every record. A run that stopped before its commit left staging that
    the next run to commit clears."""
    url, options = s3_bucket.join("pets"), s3_bucket.storage_options
    run(write_to(url, {"train": records(12)}, options, num_shards=2))

    def stopped(*args: Any) -> Any:
        raise OSError("injected: the run stops before its commit")

    with monkeypatch.context() as patch:  # debris: a run that staged a shard and stopped
        real = beam_writer.write_shard
        calls: list[int] = []

        def stage_one_then_stop(*args: Any) -> Any:
            if calls:
                stopped()
            calls.append(1)
            return real(*args)

        patch.setattr(beam_writer, "write_shard", stage_one_then_stop)
        with pytest.raises(Exception, match="injected"):
            run(write_to(url, {"train": records(10, start=900)}, options, num_shards=2, append=True))
    debris = _staged(url, options)
    assert debris

    clear = beam_writer._clear_staging
    real_write_shard = beam_writer.write_shard
    later: list[list[str]] = []

    def clear_while_a_later_run_stages(folder: Any, runs: list[str]) -> None:
        if later:  # the later run's own clear
            clear(folder, runs)
            return

        def staged_then_cleared(*shard_args: Any) -> Any:
            info = real_write_shard(*shard_args)
            if not later:
                later.append(_staged(url, options))
                clear(folder, runs)  # the first run's clear, after the later run staged
            return info

        with monkeypatch.context() as patch:
            patch.setattr(beam_writer, "write_shard", staged_then_cleared)
            run(write_to(url, {"train": records(10, start=300)}, options, num_shards=2, append=True))

    monkeypatch.setattr(beam_writer, "_clear_staging", clear_while_a_later_run_stages)
    run(write_to(url, {"train": records(6, start=700)}, options, num_shards=1, append=True))
    assert later
    assert read_ids(url, storage_options=options) == [*range(12), *range(300, 310), *range(700, 706)]
    assert _staged(url, options) == []  # the stopped run's debris too
