"""What a write looks for before it writes (sdk/recordkit/write/_debris.py): a new split
or an append lists no folder, looks only at the shard names it will use, and never
replaces a file the manifest does not list; a resume still removes a stopped write's
debris."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from _writer_support import SCHEMA, check_manifest_matches_files, read_ids

import recordkit as rk
from recordkit.errors import DatasetError


def rows(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"id": i, "payload": f"p{i}"} for i in range(start, start + count)]


def _no_listing(*_: Any, **__: Any) -> Any:
    raise AssertionError("the write listed the dataset's folder")


def test_an_append_and_a_new_split_list_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rk.write_dataset(rows(6), SCHEMA, tmp_path, shard_records=2, progress=False)
    monkeypatch.setattr(os, "scandir", _no_listing)
    monkeypatch.setattr(os, "listdir", _no_listing)
    rk.write_dataset(rows(4, 6), SCHEMA, tmp_path, shard_records=2, append=True, progress=False)
    rk.write_dataset(rows(3), SCHEMA, tmp_path, "test", shard_records=2, append=True, progress=False)
    monkeypatch.undo()
    assert read_ids(tmp_path) == list(range(10))
    assert read_ids(tmp_path, "test") == list(range(3))
    check_manifest_matches_files(tmp_path)


def test_a_foreign_file_under_a_later_shard_name_is_never_replaced(tmp_path: Path) -> None:
    rk.write_dataset(rows(2), SCHEMA, tmp_path, shard_records=2, progress=False)
    foreign = tmp_path / "train-00003.tfrecord"  # not the next name: found when its turn comes
    foreign.write_bytes(b"someone else's")
    with pytest.raises(DatasetError, match=r"does not list \(train-00003.tfrecord\)"):
        rk.write_dataset(rows(8, 2), SCHEMA, tmp_path, shard_records=2, append=True, progress=False)
    assert foreign.read_bytes() == b"someone else's"
    manifest = rk.Manifest.load(tmp_path)
    # What was written before the refusal is complete and listed; readers still read the
    # split as it was before the append.
    assert [s.file for s in manifest.splits["train"].shards] == [f"train-0000{i}.tfrecord" for i in range(3)]
    assert manifest.splits["train"].unfinished is not None
    assert [r["id"] for r in rk.open(tmp_path, "train").records()] == [0, 1]


def test_foreign_files_under_the_next_names_are_all_named(tmp_path: Path) -> None:
    rk.write_dataset(rows(2), SCHEMA, tmp_path, shard_records=2, progress=False)
    for i in (1, 2):
        (tmp_path / f"extra-0000{i - 1}.tfrecord").write_bytes(b"someone else's")
    with pytest.raises(DatasetError, match=r"extra-00000.tfrecord, extra-00001.tfrecord\)"):
        rk.write_dataset(rows(2), SCHEMA, tmp_path, "extra", append=True, progress=False)
    assert "extra" not in rk.Manifest.load(tmp_path).splits


def _stopped_write(root: Path) -> None:
    with rk.DatasetWriter(root, SCHEMA, shard_records=2, progress=False) as writer:
        for record in rows(5):
            writer.write(record)
        raise RuntimeError("stopped")


def test_a_resume_removes_the_manifest_temp_files_of_a_stopped_write(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="stopped"):
        _stopped_write(tmp_path)
    (tmp_path / ".dataset.0a1b2c.json.tmp").write_text("{")
    (tmp_path / ".train-00002.tfrecord.1f-0a0b0c0d.tmp").write_bytes(b"partial")
    rk.write_dataset(rows(5), SCHEMA, tmp_path, shard_records=2, resume=True, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    assert read_ids(tmp_path) == list(range(5))
