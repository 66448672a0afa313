"""Two resumes of the same interrupted write in a bucket, overlapping: the sweep of
unlisted files that each resume makes never removes a file the other one will list.

An object store has no lock. A resume takes the write over with a conditional save of
``dataset.json``, then removes the files the write left unlisted. A second resume can
take the write over from the first in between, and upload a shard (or a field group
shard) that the first one's sweep then finds unlisted; the second resume's save listing
it succeeds. The sweep therefore removes only the files of runs it took the write over
from (``recordkit.write._debris.stopped_runs``). The tests act in that window through
the writer's sweep, with moto's S3 server on 127.0.0.1; no timing is relied on.
"""

from __future__ import annotations

from typing import Any

import pytest
from _object_stores import REMOTE_SCHEMA, Bucket, cli_options, remote_records
from click.testing import CliRunner

import recordkit as rk
import recordkit.write._writer as writer_module  # private: acts in the race's window
from recordkit.cli import main
from recordkit.dataset._manifest import UnfinishedWrite  # private: forges the interrupted write
from recordkit.errors import ConcurrentWriteError
from recordkit.storage import Location, location
from recordkit.write._commit import RemoteManifest  # private: saves the manifest as a writer does
from recordkit.write._shard_file import new_run_token, run_token_of  # private: the second resume's names

#: When the second resume takes the write over (any time that differs from the first's).
SECOND_TAKEOVER = "2026-01-02T00:00:00.000001+00:00"


def _manifest(root: Location) -> tuple[RemoteManifest, rk.Manifest]:
    stored = RemoteManifest.at(root)
    assert stored is not None
    manifest = stored.load()
    assert manifest is not None
    return stored, manifest


def _copy_as(root: Location, file: str, token: str) -> str:
    """Upload a copy of ``file`` under run ``token``'s name for it; return that name."""
    old = run_token_of(file)
    assert old is not None
    renamed = file.replace(f".{old}", f".{token}", 1)
    root.join(*renamed.split("/")).write_bytes(root.join(*file.split("/")).read_bytes())
    return renamed


def _missing(root: Location) -> list[str]:
    """The files the stored dataset.json lists that are not in the bucket."""
    _, manifest = _manifest(root)
    shards = [
        shard
        for info in manifest.splits.values()
        for shard in [
            *info.shards,
            *(s for group in (info.field_groups or {}).values() for s in group.shards),
        ]
    ]
    listed = [
        f
        for shard in shards
        for f in (shard.file, shard.index.file if shard.index is not None else None)
        if f
    ]
    return [f for f in listed if not root.join(*f.split("/")).exists()]


def test_a_resume_whose_write_another_resume_took_over_never_deletes_the_shard_that_one_lists(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch, fault_cases: Any
) -> None:
    """Writer W listed shard 0 of train and stopped. Resume R1 takes the write over; before
    R1 lists the bucket to sweep, resume R2 takes it over from R1 and uploads its shard 1
    under its own run token. R1's sweep leaves R2's shard alone (only W's run is provably
    stopped), R2 lists it and finishes, and R1 fails with ConcurrentWriteError: every
    listed shard is there. (Before, R1's sweep removed every unlisted shard of train,
    R2's too, and dataset.json then listed a deleted shard.)"""
    fault_cases.tried("two overlapping resumes of one write in a bucket")
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    rk.write_dataset(remote_records(10), REMOTE_SCHEMA, url, shard_records=5, storage_options=options)
    root = location(url, options)
    writer_w, manifest = _manifest(root)
    train = manifest.splits["train"]
    shard_0, w_shard_1 = train.shards
    train.shards = [shard_0]
    train.unfinished = UnfinishedWrite(consumed=5, started="2026-01-01T00:00:00+00:00")
    writer_w.save(manifest)  # W stopped after listing shard 0; its shard 1 is debris
    sweep = writer_module.remove_split_debris

    def r2_overlaps_r1s_sweep(*args: Any, **kwargs: Any) -> None:
        r2, seen = _manifest(root)  # the manifest R1's takeover saved
        unfinished = seen.splits["train"].unfinished
        assert unfinished is not None
        seen.splits["train"].unfinished = unfinished.model_copy(update={"started": SECOND_TAKEOVER})
        r2.save(seen)  # R2 takes the write over from R1
        assert w_shard_1.index is not None
        token = new_run_token()
        r2_shard_1 = w_shard_1.model_copy(
            update={
                "file": _copy_as(root, w_shard_1.file, token),
                "index": w_shard_1.index.model_copy(
                    update={"file": _copy_as(root, w_shard_1.index.file, token)}
                ),
            }
        )
        sweep(*args, **kwargs)  # R1's sweep, late
        seen.splits["train"].shards = [shard_0, r2_shard_1]
        seen.splits["train"].unfinished = None
        r2.save(seen)  # R2 lists its shard 1 and finishes the write

    monkeypatch.setattr(writer_module, "remove_split_debris", r2_overlaps_r1s_sweep)
    with pytest.raises(ConcurrentWriteError, match=r"dataset\.json was replaced by another writer"):
        rk.write_dataset(
            remote_records(10), REMOTE_SCHEMA, url, shard_records=5, resume=True, storage_options=options
        )
    assert _missing(root) == [], "dataset.json lists files a resume's sweep deleted"
    assert not root.join(w_shard_1.file).exists(), "W's unlisted shard 1 is debris, removed"
    names = sorted(str(r["name"]) for r in rk.iter_records(url, split="train", storage_options=options))
    assert names == sorted(f"item-{i}" for i in range(10))
    result = CliRunner().invoke(main, ["verify", url, *cli_options(s3_bucket)])
    assert result.exit_code == 0, result.output


SCORE = rk.Schema(name="score", fields={"score": rk.FieldSpec(codec="scalar", options={"dtype": "float32"})})


def _scored(n: int, start: int) -> list[dict[str, Any]]:
    return [{**record, "score": float(start + i)} for i, record in enumerate(remote_records(n, start))]


def test_a_resumed_append_never_deletes_the_group_shard_an_overlapping_resume_lists(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch, fault_cases: Any
) -> None:
    """Appender A, on a split with a field group, listed shard 2 and its group shard and
    stopped. Resume R1 takes the append over; before R1 sweeps, resume R2 takes it over
    from R1 and uploads shard 3 and its group shard under its own run token. R1's sweep
    leaves both alone, R2 lists them, and the group reads aligned. (Before, R1's sweep
    removed every unlisted group shard of the split under any token, R2's too.)"""
    fault_cases.tried("two overlapping resumes of one write in a bucket")
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    rk.write_dataset(remote_records(10), REMOTE_SCHEMA, url, shard_records=5, storage_options=options)
    rk.add_fields(url, "train", SCORE, [float(i) for i in range(10)], storage_options=options)
    schema = rk.open(url, storage_options=options).schema
    rk.write_dataset(_scored(10, 100), schema, url, shard_records=5, append=True, storage_options=options)
    root = location(url, options)
    writer_a, manifest = _manifest(root)
    train = manifest.splits["train"]
    assert train.field_groups is not None
    (group,) = train.field_groups.values()
    a_shard_3, a_group_3 = train.shards[3], group.shards[3]
    train.shards, group.shards = train.shards[:3], group.shards[:3]
    train.unfinished = UnfinishedWrite(consumed=5, started="2026-01-01T00:00:00+00:00", shards_before=2)
    writer_a.save(manifest)  # A stopped after listing shard 2; its shard 3 (and group shard) are debris
    sweep = writer_module.remove_split_debris

    def r2_overlaps_r1s_sweep(*args: Any, **kwargs: Any) -> None:
        r2, seen = _manifest(root)  # the manifest R1's takeover saved
        split = seen.splits["train"]
        assert split.unfinished is not None
        assert split.field_groups is not None
        split.unfinished = split.unfinished.model_copy(update={"started": SECOND_TAKEOVER})
        r2.save(seen)  # R2 takes the append over from R1
        token = new_run_token()
        uploaded = []
        for entry in (a_shard_3, a_group_3):
            assert entry.index is not None
            index = entry.index.model_copy(update={"file": _copy_as(root, entry.index.file, token)})
            uploaded.append(
                entry.model_copy(update={"file": _copy_as(root, entry.file, token), "index": index})
            )
        sweep(*args, **kwargs)  # R1's sweep of split shards, late
        split.shards = [*split.shards, uploaded[0]]
        (listed_group,) = split.field_groups.values()
        listed_group.shards = [*listed_group.shards, uploaded[1]]
        split.unfinished = None
        r2.save(seen)  # R2 lists shard 3 and its group shard, and finishes the append

    monkeypatch.setattr(writer_module, "remove_split_debris", r2_overlaps_r1s_sweep)
    with pytest.raises(ConcurrentWriteError, match=r"dataset\.json was replaced by another writer"):
        rk.write_dataset(
            _scored(10, 100), schema, url, shard_records=5, append=True, resume=True, storage_options=options
        )  # R1: its group sweep follows its split sweep, still before it saves again
    assert _missing(root) == [], "dataset.json lists files a resume's sweep deleted"
    assert not root.join(a_shard_3.file).exists(), "A's unlisted shard 3 is debris, removed"
    assert not root.join(*a_group_3.file.split("/")).exists(), "A's unlisted group shard 3 is debris, removed"
    records = list(rk.iter_records(url, split="train", storage_options=options))
    assert [r["score"] for r in records] == [*range(10), *range(100, 110)]
    result = CliRunner().invoke(main, ["verify", url, *cli_options(s3_bucket)])
    assert result.exit_code == 0, result.output
