"""``overwrite=True`` on an object store (the local S3 server, the GCS emulator): the new
dataset is written into a generation folder inside the old one's prefix, committed by
one ``dataset.json`` PUT, and the old objects deleted after (sdk/recordkit/write/_replace.py).
Readers see the old dataset or the new one, never a mix; a crash before the commit
leaves the old one, after it the new one, and a rerun clears what is left."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _object_stores import REMOTE_SCHEMA, Bucket, remote_records, run_shard_names

import recordkit as rk
import recordkit.write._commit
from recordkit.storage import Location, location

pytestmark = pytest.mark.slow  # each test talks to a server the session started

REPO = Path(__file__).resolve().parents[3]


def _names(url: str, options: dict[str, Any], split: str = "train") -> list[str]:
    return [row["name"] for row in rk.iter_records(url, split, storage_options=options, verify_sha256=True)]


def _objects(url: str, options: dict[str, Any]) -> list[str]:
    return list(location(url, options).walk_files())


def _listed(url: str, options: dict[str, Any]) -> set[str]:
    manifest = rk.Manifest.load(url, options)
    files = {"dataset.json"}
    for split in manifest.splits.values():
        for shard in split.shards:
            files.add(shard.file)
            if shard.index is not None:
                files.add(shard.index.file)
        if split.rejects_file is not None:
            files.add(split.rejects_file)
    return files


def _old_dataset(url: str, options: dict[str, Any]) -> None:
    """Two splits of the old dataset, with a file beside them no manifest lists."""
    rk.write_dataset(remote_records(12), REMOTE_SCHEMA, url, shard_records=5, storage_options=options)
    rk.write_dataset(remote_records(3, 100), REMOTE_SCHEMA, url, "test", append=True, storage_options=options)
    location(url, options).join("notes.txt").write_bytes(b"not part of the dataset")


def test_overwrite_replaces_a_remote_dataset(bucket: Bucket) -> None:
    url, options = bucket.join("items"), bucket.storage_options
    _old_dataset(url, options)
    manifest = rk.write_dataset(
        remote_records(7, 50), REMOTE_SCHEMA, url, shard_records=3, overwrite=True, storage_options=options
    )
    assert _names(url, options) == [f"item-{i}" for i in range(50, 57)]
    assert list(manifest.splits) == ["train"]  # the old test split went with the old dataset
    shards = manifest.split("train").shards
    folders = {shard.file.split("/")[0] for shard in shards}
    assert len(folders) == 1
    assert next(iter(folders)).startswith("gen-")
    assert run_shard_names([shard.file.split("/")[1] for shard in shards]) == [
        f"train-0000{i}.tfrecord" for i in range(3)
    ]
    # Nothing but what the new manifest lists is left (the writer's returned manifest is it).
    assert sorted(_objects(url, options)) == sorted(_listed(url, options))
    assert manifest == rk.Manifest.load(url, options)


def test_overwrite_where_nothing_is_yet_writes_in_place(s3_bucket: Bucket) -> None:
    url, options = s3_bucket.join("fresh"), s3_bucket.storage_options
    manifest = rk.write_dataset(
        remote_records(4), REMOTE_SCHEMA, url, overwrite=True, storage_options=options
    )
    files = [shard.file for shard in manifest.split("train").shards]
    assert run_shard_names(files) == ["train-00000.tfrecord"]
    assert _names(url, options) == [f"item-{i}" for i in range(4)]


def test_overwriting_twice_and_appending_after(s3_bucket: Bucket) -> None:
    url, options = s3_bucket.join("items"), s3_bucket.storage_options
    _old_dataset(url, options)
    bad = {**remote_records(1, 900)[0], "values": "not a tensor"}
    for start in (20, 40):
        records = [*remote_records(4, start), bad]
        rk.write_dataset(
            records, REMOTE_SCHEMA, url, overwrite=True, on_error="skip", storage_options=options
        )
        assert _names(url, options) == [f"item-{i}" for i in range(start, start + 4)]
        assert sorted(_objects(url, options)) == sorted(_listed(url, options))
    # The rejects file lives in the generation folder; an append adds to that one.
    info = rk.Manifest.load(url, options).split("train")
    assert info.rejected == 1
    assert info.rejects_file is not None
    assert info.rejects_file.startswith("gen-")
    rk.write_dataset(
        [*remote_records(2, 60), bad],
        REMOTE_SCHEMA,
        url,
        append=True,
        on_error="skip",
        storage_options=options,
    )
    info = rk.Manifest.load(url, options).split("train")
    assert info.rejected == 2
    assert info.rejects_file is not None
    lines = location(url, options).join(info.rejects_file).read_bytes().decode().splitlines()
    assert [json.loads(line)["index"] for line in lines] == [4, 2]
    assert _names(url, options) == [f"item-{i}" for i in (40, 41, 42, 43, 60, 61)]


def test_readers_see_the_old_dataset_until_the_commit(s3_bucket: Bucket) -> None:
    url, options = s3_bucket.join("items"), s3_bucket.storage_options
    _old_dataset(url, options)
    seen: list[list[str]] = []

    def records() -> Iterator[dict[str, Any]]:
        for i, record in enumerate(remote_records(9, 70)):
            if i == 7:  # two shards of the new dataset are uploaded by now
                seen.append(_names(url, options))
            yield record

    rk.write_dataset(records(), REMOTE_SCHEMA, url, shard_records=3, overwrite=True, storage_options=options)
    assert seen == [[f"item-{i}" for i in range(12)]]
    assert _names(url, options) == [f"item-{i}" for i in range(70, 79)]


def test_an_error_before_the_commit_leaves_the_old_dataset(bucket: Bucket) -> None:
    url, options = bucket.join("items"), bucket.storage_options
    _old_dataset(url, options)
    before = sorted(_objects(url, options))

    def failing() -> Iterator[dict[str, Any]]:
        yield from remote_records(8, 30)
        raise RuntimeError("the input broke")

    with pytest.raises(RuntimeError, match="the input broke"):
        rk.write_dataset(
            failing(), REMOTE_SCHEMA, url, shard_records=3, overwrite=True, storage_options=options
        )
    assert _names(url, options) == [f"item-{i}" for i in range(12)]
    assert sorted(_objects(url, options)) == before  # the aborted generation is deleted


def test_a_failure_after_the_commit_leaves_the_new_dataset(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The commit is done when deleting the old objects fails part-way: the new dataset
    is read, the old objects stay unlisted, and the next overwrite removes them."""
    url, options = s3_bucket.join("items"), s3_bucket.storage_options
    _old_dataset(url, options)
    remove_files = Location.remove_files

    def fail_half_way(self: Location, names: Any) -> None:
        names = list(names)
        remove_files(self, names[: len(names) // 2])
        raise OSError("connection reset (injected)")

    monkeypatch.setattr(Location, "remove_files", fail_half_way)
    with caplog.at_level(logging.WARNING, logger="recordkit"):
        rk.write_dataset(
            remote_records(5, 200),
            REMOTE_SCHEMA,
            url,
            shard_records=2,
            overwrite=True,
            storage_options=options,
        )
    assert "deleting the objects it no longer lists failed" in caplog.text
    assert _names(url, options) == [f"item-{i}" for i in range(200, 205)]
    leftovers = set(_objects(url, options)) - _listed(url, options)
    assert leftovers  # old objects, unlisted: readers never see them
    monkeypatch.undo()
    rk.write_dataset(remote_records(2, 300), REMOTE_SCHEMA, url, overwrite=True, storage_options=options)
    assert _names(url, options) == ["item-300", "item-301"]
    assert sorted(_objects(url, options)) == sorted(_listed(url, options))


_KILLED = textwrap.dedent(
    """
    import json, os, sys
    import recordkit as rk
    from _object_stores import REMOTE_SCHEMA, remote_records

    url, options = sys.argv[1], json.loads(sys.argv[2])

    def records():
        for i, record in enumerate(remote_records(40, 500)):
            if i == 25:
                os._exit(9)  # killed mid-write: no cleanup runs
            yield record

    rk.write_dataset(records(), REMOTE_SCHEMA, url, shard_records=5, overwrite=True, storage_options=options)
    """
)


def test_a_killed_overwrite_leaves_the_old_dataset_and_a_rerun_finishes(s3_bucket: Bucket) -> None:
    url, options = s3_bucket.join("items"), s3_bucket.storage_options
    _old_dataset(url, options)
    env = {
        **os.environ,
        **s3_bucket.env,
        "PYTHONPATH": os.pathsep.join(str(REPO / part) for part in ("sdk", "plugins", "tests/recordkit")),
    }
    done = subprocess.run(
        [sys.executable, "-c", _KILLED, url, json.dumps(options)], env=env, check=False, timeout=300
    )
    assert done.returncode == 9
    assert _names(url, options) == [f"item-{i}" for i in range(12)]
    assert _names(url, options, "test") == [f"item-{i}" for i in range(100, 103)]
    dead = {name.split("/")[0] for name in _objects(url, options) if name.startswith("gen-")}
    assert len(dead) == 1  # the killed write's generation, which no manifest lists
    rk.write_dataset(
        remote_records(40, 500), REMOTE_SCHEMA, url, shard_records=5, overwrite=True, storage_options=options
    )
    assert _names(url, options) == [f"item-{i}" for i in range(500, 540)]
    assert sorted(_objects(url, options)) == sorted(_listed(url, options))
    assert not any(name.startswith(f"{next(iter(dead))}/") for name in _objects(url, options))


def test_overwrite_refuses_a_bucket_root(s3_bucket: Bucket) -> None:
    with pytest.raises(ValueError, match="not the bucket itself"):
        rk.write_dataset(
            remote_records(1),
            REMOTE_SCHEMA,
            s3_bucket.url,
            overwrite=True,
            storage_options=s3_bucket.storage_options,
        )


def test_a_commit_whose_answer_was_lost_counts_as_committed(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest PUT lands but its answer is lost: the writer finds the new manifest
    there and keeps the generation it lists (deleting it would break the dataset)."""
    url, options = s3_bucket.join("items"), s3_bucket.storage_options
    _old_dataset(url, options)
    write_bytes = Location.write_bytes

    def lose_the_answer(self: Location, data: bytes, *, durable: bool = True) -> None:
        write_bytes(self, data, durable=durable)
        if self.url == f"{url}/dataset.json":
            raise OSError("read timeout after the request was sent (injected)")

    monkeypatch.setattr(Location, "write_bytes", lose_the_answer)
    rk.write_dataset(remote_records(4, 80), REMOTE_SCHEMA, url, overwrite=True, storage_options=options)
    monkeypatch.undo()
    assert _names(url, options) == [f"item-{i}" for i in range(80, 84)]
    assert sorted(_objects(url, options)) == sorted(_listed(url, options))


def test_a_commit_that_failed_leaves_the_old_dataset(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, options = s3_bucket.join("items"), s3_bucket.storage_options
    _old_dataset(url, options)
    before = sorted(_objects(url, options))
    write_if_version = recordkit.write._commit.write_if_version

    def refuse_the_commit(where: Location, data: bytes, version: str | None) -> str:
        if where.url == f"{url}/dataset.json":
            raise OSError("access denied (injected)")
        return write_if_version(where, data, version)

    monkeypatch.setattr(recordkit.write._commit, "write_if_version", refuse_the_commit)
    with pytest.raises(OSError, match="access denied"):
        rk.write_dataset(remote_records(4, 80), REMOTE_SCHEMA, url, overwrite=True, storage_options=options)
    monkeypatch.undo()
    assert _names(url, options) == [f"item-{i}" for i in range(12)]
    assert sorted(_objects(url, options)) == before


def test_an_append_that_commits_between_an_overwrites_commit_and_its_sweep_keeps_its_shards(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remote overwrite commits its manifest, then deletes what that manifest does not
    list. An append that starts after the commit, and commits its own shards before the
    sweep lists the bucket, must keep them: the sweep may remove only the old dataset's
    objects. (Before, the sweep deleted every object the overwrite's own manifest did not
    list, and so the append's listed shards: dataset.json then listed deleted files.)"""
    import recordkit.write._writer as writer_module  # private: acts in the sweep's window

    url, options = s3_bucket.join("raced"), s3_bucket.storage_options
    _old_dataset(url, options)
    sweep = writer_module._remove_old_objects

    def append_first(root: Location, manifest: rk.Manifest, replaced: rk.Manifest | None, *rest: Any) -> None:
        rk.write_dataset(
            remote_records(4, 200), REMOTE_SCHEMA, url, append=True, shard_records=2, storage_options=options
        )
        sweep(root, manifest, replaced, *rest)

    monkeypatch.setattr(writer_module, "_remove_old_objects", append_first)
    rk.write_dataset(
        remote_records(5, 50), REMOTE_SCHEMA, url, shard_records=3, overwrite=True, storage_options=options
    )
    listed = _listed(url, options)
    missing = sorted(f for f in listed if not location(url, options).join(*f.split("/")).exists())
    assert missing == [], f"dataset.json lists files the overwrite's sweep deleted: {missing}"
    assert _names(url, options) == [f"item-{i}" for i in [*range(50, 55), *range(200, 204)]]


@pytest.mark.parametrize("when", ["while it writes", "before its commit"])
def test_an_overwrite_that_starts_after_another_commits_keeps_its_generation_through_that_ones_sweep(
    bucket: Bucket, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Overwrite A commits; overwrite B starts after that commit and writes its own
    generation folder; A's sweep then runs (late) while B is writing, or between B's last
    save of its generation and its commit. The sweep must leave B's generation alone: B
    commits, and every file dataset.json lists is there. (Before, A's sweep deleted every
    object its manifest did not list, B's generation too: B failed when the sweep ran
    while it wrote, and when it ran just before B's commit, B committed a manifest
    listing deleted shards, after its own sweep had deleted A's dataset: nothing left.)"""
    import recordkit.write._writer as writer_module  # private: acts in the sweep's window

    url, options = bucket.join("raced"), bucket.storage_options
    _old_dataset(url, options)
    sweep, commit = writer_module._remove_old_objects, writer_module.replace_dataset
    late_sweeps: list[Any] = []
    calls = 0

    def sweep_late(root: Location, manifest: rk.Manifest, replaced: rk.Manifest | None, *rest: Any) -> None:
        nonlocal calls
        calls += 1
        if calls > 1:  # B's own sweep
            sweep(root, manifest, replaced, *rest)
            return
        late_sweeps.append(lambda: sweep(root, manifest, replaced, *rest))

        def b_records() -> Iterator[dict[str, Any]]:
            for i, record in enumerate(remote_records(9, 300)):
                if i == 5 and when == "while it writes":
                    late_sweeps.pop()()
                yield record

        rk.write_dataset(
            b_records(), REMOTE_SCHEMA, url, shard_records=2, overwrite=True, storage_options=options
        )

    def sweep_before_b_commits(*args: Any, **kwargs: Any) -> rk.Manifest:
        if late_sweeps:
            late_sweeps.pop()()
        return commit(*args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(writer_module, "_remove_old_objects", sweep_late)
    monkeypatch.setattr(writer_module, "replace_dataset", sweep_before_b_commits)
    rk.write_dataset(
        remote_records(5, 50), REMOTE_SCHEMA, url, shard_records=3, overwrite=True, storage_options=options
    )
    assert calls == 2
    assert not late_sweeps
    listed = _listed(url, options)
    missing = sorted(f for f in listed if not location(url, options).join(*f.split("/")).exists())
    assert missing == [], f"dataset.json lists files another overwrite's sweep deleted: {missing}"
    assert _names(url, options) == [f"item-{i}" for i in range(300, 309)]
    assert sorted(_objects(url, options)) == sorted(listed)  # B's sweep removed A's generation


def test_an_overwrite_that_started_before_another_commits_fails_clearly_and_loses_nothing(
    s3_bucket: Bucket,
) -> None:
    """Overwrite C starts; overwrite A starts after it, commits and sweeps, deleting C's
    generation (there before A read the manifest: C read that one or an older one, so it
    can never commit). C stops at its next save with ConcurrentWriteError; A's dataset
    stands, whole, and nothing of C is left."""
    from recordkit.errors import ConcurrentWriteError

    url, options = s3_bucket.join("raced"), s3_bucket.storage_options
    _old_dataset(url, options)

    def c_records() -> Iterator[dict[str, Any]]:
        for i, record in enumerate(remote_records(9, 300)):
            if i == 5:  # C has saved its generation's manifest and uploaded shards
                rk.write_dataset(
                    remote_records(4, 50), REMOTE_SCHEMA, url, overwrite=True, storage_options=options
                )
            yield record

    with pytest.raises(ConcurrentWriteError, match="another writer"):
        rk.write_dataset(
            c_records(), REMOTE_SCHEMA, url, shard_records=2, overwrite=True, storage_options=options
        )
    assert _names(url, options) == [f"item-{i}" for i in range(50, 54)]
    assert sorted(_objects(url, options)) == sorted(_listed(url, options))
