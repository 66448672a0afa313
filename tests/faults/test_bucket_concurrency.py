"""Concurrent appenders on a dataset in a bucket (moto's S3 server, the GCS emulator).

An object store has no lock: each writer's saves of ``dataset.json`` are conditional on
the version it read or wrote last (``recordkit.write._commit``). Whatever the
interleaving, no writer reports success for records the dataset does not hold: the
writer that finds another's commit fails with one ``ConcurrentWriteError`` line, and
can finish its write afterwards as the error says.

Two real processes, ordered through files: the tests never rely on timing. Moto's S3
server enforces ``If-Match`` / ``If-None-Match``; the GCS emulator ignores
``ifGenerationMatch``, so on GCS only the interleavings that the generation check
before each PUT detects are tested (see the cloud-storage how-to).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _object_stores import REMOTE_SCHEMA, Bucket, cli_options, remote_records
from click.testing import CliRunner

import recordkit as rk
import recordkit.write._writer as writer_module  # private: acts in the race's window
from recordkit.cli import main
from recordkit.dataset._manifest import UnfinishedWrite  # private: forges an unfinished write in the manifest
from recordkit.errors import ConcurrentWriteError
from recordkit.storage import location
from recordkit.write._commit import (
    RemoteManifest,
)  # private: reads and saves the bucket's manifest as the writer does

HERE = Path(__file__).parent
HOW_TO = HERE.parents[1] / "docs" / "how-to" / "cloud-storage.md"
#: The dataset's records before the appenders start.
BEFORE = [f"item-{i}" for i in range(10)]


def _start(bucket: Bucket, url: str, **plan: Any) -> subprocess.Popen[str]:
    plan = {"url": url, "storage_options": bucket.storage_options, "split": "train", **plan}
    return subprocess.Popen(
        [sys.executable, str(HERE / "_bucket_writer.py"), json.dumps(plan)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **bucket.env},
    )


def _result(process: subprocess.Popen[str]) -> str:
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    return stdout.strip().splitlines()[-1]


def _listed(root: Any) -> rk.Manifest:
    """The manifest the bucket lists now (``dataset.json``, read as the writer reads it)."""
    stored = RemoteManifest.at(root)
    assert stored is not None
    manifest = stored.load()
    assert manifest is not None
    return manifest


def _names(bucket: Bucket, url: str, split: str) -> list[str]:
    records = rk.iter_records(url, split=split, storage_options=bucket.storage_options)
    return sorted(str(record["name"]) for record in records)


def _items(start: int, n: int) -> list[str]:
    return sorted(f"item-{i}" for i in range(start, start + n))


def _dataset(bucket: Bucket) -> str:
    url = bucket.join("items")
    rk.write_dataset(
        remote_records(10), REMOTE_SCHEMA, url, shard_records=5, storage_options=bucket.storage_options
    )
    return url


def _verify(bucket: Bucket, url: str, *flags: str) -> None:
    result = CliRunner().invoke(main, ["verify", url, *flags, *cli_options(bucket)])
    assert result.exit_code == 0, result.output


def test_two_appenders_that_read_the_same_manifest_one_fails_and_loses_nothing_it_reported(
    s3_bucket: Bucket, tmp_path: Path, fault_cases: Any
) -> None:
    """Both read dataset.json, then both append: S3 accepts the first conditional PUT
    and refuses the second, whose writer fails before writing a shard."""
    fault_cases.tried("concurrent appenders on a bucket")
    url = _dataset(s3_bucket)
    opened = [str(tmp_path / f"opened-{i}") for i in range(2)]
    processes = [
        _start(s3_bucket, url, start=100 * (i + 1), n=12, opened=opened[i], wait_before_writing=opened)
        for i in range(2)
    ]
    results = [_result(process) for process in processes]
    assert sorted(r == "ok" for r in results) == [False, True], results
    (lost,) = [r for r in results if r != "ok"]
    assert lost.startswith(f"ConcurrentWriteError: file {url}: dataset.json was replaced by another writer")
    assert "run one writer per dataset at a time" in lost
    assert "\n" not in lost
    # The how-to shows this very line.
    assert lost.replace(url, "s3://my-bucket/pets") in HOW_TO.read_text(encoding="utf-8")
    (winner,) = [i for i, r in enumerate(results) if r == "ok"]
    assert _names(s3_bucket, url, "train") == sorted(BEFORE + _items(100 * (winner + 1), 12))
    _verify(s3_bucket, url)


def test_an_appender_whose_manifest_another_replaced_fails_and_resumes_after(
    bucket: Bucket, tmp_path: Path, fault_cases: Any
) -> None:
    """A pauses mid-append; B appends a split of its own and finishes; A's next commit
    finds B's manifest and fails (without dropping B's split); A rerun with resume=True
    then finishes. Every record of every writer that reported success is there."""
    fault_cases.tried("concurrent appenders on a bucket")
    url = _dataset(bucket)
    paused, go_on = str(tmp_path / "paused"), str(tmp_path / "go-on")
    first = _start(bucket, url, start=100, n=12, pause_after=5, paused=paused, resume_when=go_on)
    while not Path(paused).exists():
        assert first.poll() is None, first.communicate()
    second = _start(bucket, url, split="test", start=500, n=7)
    assert _result(second) == "ok"
    Path(go_on).touch()
    lost = _result(first)
    assert lost.startswith(f"ConcurrentWriteError: file {url}: dataset.json was replaced by another writer")
    assert "resume=True" in lost
    # The failed append is not visible: train is as it was, B's split is whole.
    assert _names(bucket, url, "train") == BEFORE
    assert _names(bucket, url, "test") == _items(500, 7)
    _verify(bucket, url, "--allow-unfinished")
    # As the error says: once the other writer is done, the interrupted append finishes.
    assert _result(_start(bucket, url, start=100, n=12, resume=True)) == "ok"
    assert _names(bucket, url, "train") == sorted(BEFORE + _items(100, 12))
    assert _names(bucket, url, "test") == _items(500, 7)
    _verify(bucket, url)


def test_a_remote_overwrite_whose_target_another_writer_committed_fails_and_leaves_that_dataset(
    bucket: Bucket, fault_cases: Any
) -> None:
    """An overwrite reads the old dataset.json when it starts; if another writer commits
    meanwhile, the overwrite's commit is refused and its generation folder removed."""
    fault_cases.tried("concurrent appenders on a bucket")
    url = _dataset(bucket)
    options = bucket.storage_options
    writer = rk.DatasetWriter(url, REMOTE_SCHEMA, overwrite=True, progress=False, storage_options=options)
    writer.write_all(remote_records(3, 900))
    rk.write_dataset(remote_records(4, 300), REMOTE_SCHEMA, url, append=True, storage_options=options)
    with pytest.raises(rk.errors.ConcurrentWriteError, match=r"dataset\.json was replaced by another writer"):
        writer.close()
    assert _names(bucket, url, "train") == sorted(BEFORE + _items(300, 4))
    _verify(bucket, url)


def test_a_resume_that_overlaps_a_still_running_write_takes_it_over_and_never_deletes_a_listed_shard(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch, fault_cases: Any
) -> None:
    """Writer A has uploaded shard 1 of train but not yet listed it when a resume starts.
    The resume takes the write over (a conditional save of dataset.json) before it removes
    shard 1 as debris, so A's save listing shard 1 fails: the manifest never names a
    deleted shard. (Before, the resume removed shard 1 first and A then listed it.)"""
    fault_cases.tried("a resume overlapping a still-running writer in a bucket")
    url = _dataset(s3_bucket)
    root = location(url, s3_bucket.storage_options)
    # A, still running: train's write unfinished, shard 0 listed, shard 1 uploaded only.
    first = RemoteManifest.at(root)
    assert first is not None
    manifest = first.load()
    assert manifest is not None
    train = manifest.splits["train"]
    shards = list(train.shards)
    train.shards = shards[:1]
    train.unfinished = UnfinishedWrite(consumed=5, started="2026-01-01T00:00:00+00:00")
    first.save(manifest)
    failures: list[ConcurrentWriteError] = []
    sweep = writer_module.remove_split_debris

    def sweep_then_a_lists_shard_1(*args: Any, **kwargs: Any) -> None:
        sweep(*args, **kwargs)
        train.shards = shards
        train.unfinished = None
        try:
            first.save(manifest)
        except ConcurrentWriteError as exc:
            failures.append(exc)

    monkeypatch.setattr(writer_module, "remove_split_debris", sweep_then_a_lists_shard_1)
    try:
        rk.write_dataset(
            remote_records(10),
            REMOTE_SCHEMA,
            url,
            shard_records=5,
            resume=True,
            storage_options=s3_bucket.storage_options,
        )
        resumed = "ok"
    except ConcurrentWriteError as exc:
        resumed = str(exc)
    final = _listed(root)
    missing = [s.file for s in final.splits["train"].shards if not root.join(s.file).exists()]
    assert missing == [], f"dataset.json lists deleted shards {missing}"
    assert resumed == "ok"
    assert len(failures) == 1
    assert "was replaced by another writer" in str(failures[0])
    assert _names(s3_bucket, url, "train") == _items(0, 10)
    _verify(s3_bucket, url)


def test_an_upload_the_taken_over_write_finishes_late_never_overwrites_a_shard_the_resume_listed(
    s3_bucket: Bucket, fault_cases: Any
) -> None:
    """Writer A has listed shard 0 of train and is uploading shard 1 when a resume B
    takes the write over and finishes it, listing a shard 1 of its own. A's upload then
    completes. Each run writes its shards under names of its own (a run token), so A's
    object lands beside B's, unlisted, and A's save fails: every listed shard holds the
    bytes dataset.json says. (Before, both runs named shard 1 ``train-00001.tfrecord``
    and A's late upload silently replaced B's listed shard: last write wins.)"""
    fault_cases.tried("a resume overlapping a still-running writer in a bucket")
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    root = location(url, options)
    a = rk.DatasetWriter(url, REMOTE_SCHEMA, shard_records=5, progress=False, storage_options=options)
    for record in remote_records(6, 100):  # shard 0: item-100..104; shard 1 under way: item-105
        a.write(record)
    a._splits["train"].settle_commit()  # private: shard 0 listed before B starts, as A would have
    rk.write_dataset(
        remote_records(10), REMOTE_SCHEMA, url, shard_records=5, resume=True, storage_options=options
    )  # B: takes the write over, writes item-5..9 as shard 1 and lists it
    resumed = RemoteManifest.at(root)
    assert resumed is not None
    listed_by_b = resumed.load()
    assert listed_by_b is not None
    with pytest.raises(ConcurrentWriteError, match=r"dataset\.json was replaced by another writer"):
        a.close()  # A's shard 1 upload completes now; its save listing it is refused
    final = _listed(root)
    assert final.splits["train"].shards == listed_by_b.splits["train"].shards
    changed = [
        s.file
        for s in final.splits["train"].shards
        if hashlib.sha256(root.join(s.file).read_bytes()).hexdigest() != s.sha256
    ]
    assert changed == [], f"listed shards overwritten after they were listed: {changed}"
    # A's late upload is there, under a name of its own: unlisted debris, not a replacement.
    listed = {s.file for s in final.splits["train"].shards}
    second_shards = [n for n in root.list() if n.startswith("train-00001.") and n.endswith(".tfrecord")]
    assert len(second_shards) == 2, second_shards
    assert len(listed.intersection(second_shards)) == 1, second_shards
    assert _names(s3_bucket, url, "train") == sorted(_items(100, 5) + _items(5, 5))
    _verify(s3_bucket, url)


def test_a_group_shard_a_taken_over_append_uploads_late_never_overwrites_one_the_resume_listed(
    s3_bucket: Bucket, fault_cases: Any
) -> None:
    """As above, for a split with a field group: appender A has listed its first shard
    (and its group shard) and is uploading the next when a resume B takes the append over
    and lists shards of its own. A's group shard upload then completes. Each append writes
    its group shards under its own run token, so A's late group shard lands beside B's,
    unlisted. (Before, every append wrote under the group's first shard's token and A's
    late upload replaced the group shard B had listed: last write wins.)"""
    fault_cases.tried("a field-group append overlapping a still-running appender in a bucket")
    url = _dataset(s3_bucket)
    options = s3_bucket.storage_options
    root = location(url, options)
    score = rk.Schema(
        name="score", fields={"score": rk.FieldSpec(codec="scalar", options={"dtype": "float32"})}
    )
    rk.add_fields(url, "train", score, [float(i) for i in range(10)], storage_options=options)
    schema = rk.Schema(name="scored", fields={**REMOTE_SCHEMA.fields, **score.fields})

    def scored(n: int, start: int) -> list[dict[str, Any]]:
        return [{**dict(record), "score": float(i)} for i, record in enumerate(remote_records(n, start))]

    a = rk.DatasetWriter(url, schema, shard_records=5, append=True, progress=False, storage_options=options)
    for record in scored(6, 100):  # shard 2 listed, shard 3 under way
        a.write(record)
    a._splits["train"].settle_commit()  # private: A's first shard listed before B starts
    rk.write_dataset(
        scored(10, 200), schema, url, shard_records=5, append=True, resume=True, storage_options=options
    )  # B: takes the append over and lists a shard 3 and its group shard of its own
    with pytest.raises(ConcurrentWriteError):
        a.close()  # A's late uploads complete now; its save listing them is refused
    final = _listed(root)
    groups = final.splits["train"].field_groups or {}
    files = [s.file for group in groups.values() for s in group.shards] + [
        s.file for s in final.splits["train"].shards
    ]
    sums = {s.file: s.sha256 for group in groups.values() for s in group.shards}
    sums.update({s.file: s.sha256 for s in final.splits["train"].shards})
    changed = [
        f for f in files if hashlib.sha256(root.join(*f.split("/")).read_bytes()).hexdigest() != sums[f]
    ]
    assert changed == [], f"listed shards overwritten after they were listed: {changed}"
    _verify(s3_bucket, url)


def test_a_rejects_file_a_taken_over_write_uploads_late_never_replaces_the_one_the_resume_listed(
    s3_bucket: Bucket, fault_cases: Any
) -> None:
    """Writer A (``on_error="skip"``) has listed shard 0 and a rejected record when a
    resume B takes the write over and lists a rejects file of its own. Each run writes its
    rejects under a name of its own (``rejects-train.<token>.jsonl``, the earlier lines
    carried over), so an upload A finishes late cannot replace the file B listed, and A's
    close changes nothing listed. (Before, both runs wrote ``rejects-train.jsonl``: last
    write wins.)"""
    fault_cases.tried("a resume overlapping a still-running writer in a bucket")
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    root = location(url, options)

    def with_bad(n: int, start: int, bad: set[int]) -> list[dict[str, Any]]:
        records = [dict(record) for record in remote_records(n, start)]
        for i in bad:
            records[i]["values"] = [1.0]  # the schema's tensor has shape [3]
        return records

    a = rk.DatasetWriter(
        url, REMOTE_SCHEMA, shard_records=5, on_error="skip", progress=False, storage_options=options
    )
    for record in with_bad(8, 100, {1, 7}):  # shard 0 with one reject listed; item-107 rejected after
        a.write(record)
    a._splits["train"].settle_commit()  # private: shard 0 listed before B starts
    listed_by_a = RemoteManifest.at(root)
    assert listed_by_a is not None
    manifest_a = listed_by_a.load()
    assert manifest_a is not None
    name_a = manifest_a.splits["train"].rejects_file
    assert name_a is not None
    assert re.fullmatch(r"rejects-train\.[0-9a-f]{8}\.jsonl", name_a), name_a
    rk.write_dataset(
        with_bad(12, 0, {9}),
        REMOTE_SCHEMA,
        url,
        shard_records=5,
        resume=True,
        on_error="skip",
        storage_options=options,
    )  # B: takes the write over, rejects item-9 and lists its rejects file
    listed_by_b = _listed(root)
    info = listed_by_b.splits["train"]
    assert info.rejected == 2
    assert info.rejects_file is not None
    assert info.rejects_file != name_a  # B's own name: A's late upload cannot reach it
    lines_by_b = root.join(info.rejects_file).read_bytes()
    with pytest.raises(ConcurrentWriteError):
        a.close()  # A's rejects upload happens now; its save is refused
    assert root.join(info.rejects_file).read_bytes() == lines_by_b
    assert len(lines_by_b.decode().splitlines()) == 2
    _verify(s3_bucket, url)


#: A field group of one number per record, added to the bucket dataset's train split.
SCORE = rk.Schema(name="score", fields={"score": rk.FieldSpec(codec="scalar", options={"dtype": "float32"})})


def _scored(n: int, start: int) -> list[dict[str, Any]]:
    """Records ``item-<start>`` ... with their ``score`` (the item's number)."""
    return [{**record, "score": float(start + i)} for i, record in enumerate(remote_records(n, start))]


def test_a_resume_in_a_bucket_removes_the_group_shards_a_stopped_append_left_unlisted(
    s3_bucket: Bucket, fault_cases: Any
) -> None:
    """Appender A, under its own run token, listed shard 2 and its group shard, uploaded
    group shard 3 and stopped before listing it. The resume takes the append over, then
    removes A's unlisted group shard (under a token the resume never wrote under), as the
    split's unlisted shards are removed, and the group reads aligned. (Before, a resume in
    a bucket removed only unlisted group shards under its own token: none.)"""
    fault_cases.tried("a field-group append overlapping a still-running appender in a bucket")
    url = _dataset(s3_bucket)
    options = s3_bucket.storage_options
    root = location(url, options)
    rk.add_fields(url, "train", SCORE, [float(i) for i in range(10)], storage_options=options)
    schema = rk.open(url, storage_options=options).schema
    a = rk.DatasetWriter(url, schema, shard_records=5, append=True, progress=False, storage_options=options)
    for record in _scored(6, 100):
        a.write(record)
    a._splits["train"].settle_commit()  # private: A's shard 2 listed before it stops
    a.abort()  # A stops: its shard 3 in progress is discarded, train stays unfinished
    folder = root.join("fields", "train")
    (listed_two,) = [n for n in folder.list() if n.endswith("-00002.tfrecord")]
    left = listed_two.replace("-00002.", "-00003.")  # A's group shard 3, uploaded, never listed
    folder.join(left).write_bytes(folder.join(listed_two).read_bytes())
    rk.write_dataset(_scored(10, 200), schema, url, shard_records=5, resume=True, storage_options=options)
    assert not folder.join(left).exists(), folder.list()
    records = list(rk.iter_records(url, storage_options=options))
    assert [r["name"] for r in records] == [
        f"item-{i}" for i in [*range(10), *range(100, 105), *range(205, 210)]
    ]
    assert [r["score"] for r in records] == [*range(10), *range(100, 105), *range(205, 210)]
    _verify(s3_bucket, url)


def _with_bad(records: list[dict[str, Any]], bad: int) -> list[dict[str, Any]]:
    """``records`` with record ``bad``'s ``values`` of the wrong shape (its codec refuses it)."""
    return [{**r, "values": np.zeros(2, np.float32)} if i == bad else r for i, r in enumerate(records)]


def test_a_rejects_file_a_taken_over_write_saves_late_never_replaces_the_one_the_resume_listed(
    s3_bucket: Bucket, fault_cases: Any
) -> None:
    """Writer A (``on_error="skip"``) has listed shard 0 and rejected its input record 6
    when a resume B takes the write over, rejects its own input record 7 and lists its
    rejects file. A then completes its shard 1, saving its rejects file before its save of
    dataset.json fails. Each run writes its rejects under a name of its own
    (``rejects-train.<token>.jsonl``), so the file B listed still holds B's line. (Before,
    both wrote ``rejects-train.jsonl`` and A's late write replaced B's: last write wins.)"""
    fault_cases.tried("a resume overlapping a still-running writer in a bucket")
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    root = location(url, options)
    a = rk.DatasetWriter(
        url, REMOTE_SCHEMA, shard_records=5, on_error="skip", progress=False, storage_options=options
    )
    for record in remote_records(6, 100):  # shard 0: item-100..104; shard 1 under way: item-105
        a.write(record)
    a._splits["train"].settle_commit()  # private: shard 0 listed before B starts, as A would have
    a.write(_with_bad(remote_records(7, 100), 6)[6])  # A rejects its input record 6
    rk.write_dataset(
        _with_bad(remote_records(10), 7),
        REMOTE_SCHEMA,
        url,
        shard_records=5,
        on_error="skip",
        resume=True,
        storage_options=options,
    )  # B: takes the write over, writes item-5, 6, 8, 9 as shard 1, rejects record 7
    with pytest.raises(ConcurrentWriteError, match=r"dataset\.json was replaced by another writer"):
        a.close()  # A's shard 1 and its rejects are written now; its save listing them fails
    final = _listed(root)
    train = final.splits["train"]
    assert train.rejected == 1
    assert train.rejects_file is not None
    lines = root.join(train.rejects_file).read_bytes().decode("utf-8").splitlines()
    assert [json.loads(line)["index"] for line in lines] == [7], "the listed rejects were replaced"
    assert re.fullmatch(r"rejects-train\.[0-9a-f]{8}\.jsonl", train.rejects_file), train.rejects_file
    assert _names(s3_bucket, url, "train") == sorted(
        [*_items(100, 5), "item-5", "item-6", "item-8", "item-9"]
    )
    _verify(s3_bucket, url)
