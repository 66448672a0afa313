"""A split of many shards is listed by a shard table (sdk/recordkit/dataset/_shard_table.py):
written by the writer, read by every reader, checked as untrusted input, and rewritten
only when its split changes. The threshold is lowered so that a few real shards make one."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import recordkit as rk
from recordkit.dataset import _manifest
from recordkit.dataset._shard_table import ShardTable
from recordkit.errors import ManifestError

SCHEMA = rk.Schema.loads(
    """
name: tiny
fields:
  caption: {codec: text}
"""
)


def records(count: int, first: int = 0) -> list[dict[str, Any]]:
    return [{"caption": f"record {i}"} for i in range(first, first + count)]


@pytest.fixture
def tabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A dataset whose train split (6 shards) is listed by a shard table."""
    monkeypatch.setattr(_manifest, "SHARD_TABLE_FROM", 4)
    root = tmp_path / "data"
    rk.write_dataset(records(12), root, SCHEMA, shard_records=2, progress=False)
    rk.write_dataset(records(2), root, SCHEMA, "validation", shard_records=2, append=True, progress=False)
    return root


def table_file(root: Path, split: str = "train") -> Path:
    ref = json.loads((root / "dataset.json").read_text())["splits"][split]["shard_table"]
    return root / ref["file"]


def test_a_split_of_many_shards_is_listed_by_its_table_and_reads_the_same(tabled: Path) -> None:
    raw = json.loads((tabled / "dataset.json").read_text())
    assert raw["format"] == "recordkit.dataset/4"
    train = raw["splits"]["train"]
    assert "shards" not in train
    data = table_file(tabled).read_bytes()
    assert train["shard_table"] == {
        "file": f"train.shards.{hashlib.sha256(data).hexdigest()[:16]}",
        "sha256": hashlib.sha256(data).hexdigest(),
        "shards": 6,
    }
    assert len(raw["splits"]["validation"]["shards"]) == 1  # a small split stays listed inline
    ds = rk.open(tabled, "train")
    assert len(ds) == 12
    assert [r["caption"] for r in ds.records()] == [f"record {i}" for i in range(12)]
    assert ds[11]["caption"] == "record 11"
    assert [r["caption"] for r in rk.open(tabled, "train[5:7]").records()] == ["record 5", "record 6"]
    shards = rk.Manifest.load(tabled).splits["train"].shards
    assert [s.file for s in shards] == [f"train-{i:05d}.tfrecord" for i in range(6)]
    assert all(s.index is not None and s.index.file == f"{s.file}.index" for s in shards)


def test_a_table_holds_exactly_the_entries_it_was_made_from(tabled: Path) -> None:
    entries = list(rk.Manifest.load(tabled).splits["train"].shards)
    table = ShardTable.from_entries(entries)
    assert table is not None
    again = ShardTable.from_bytes(table.to_bytes(), file="t", shards=len(entries))
    assert list(again) == entries
    assert again.total_records == 12
    assert again.largest_bytes == max(entry.bytes for entry in entries)
    bigger = entries[0].model_copy(update={"file": "extra.tfrecord", "bytes": again.largest_bytes + 1})
    again.append(bigger)  # the tail an append adds before the table is written again
    assert again.largest_bytes == bigger.bytes


def test_a_dataset_written_in_the_format_before_tables_still_opens_and_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "old"
    rk.write_dataset(records(12), root, SCHEMA, shard_records=2, progress=False)
    raw = json.loads((root / "dataset.json").read_text())
    assert raw["format"] == "recordkit.dataset/2"
    assert len(raw["splits"]["train"]["shards"]) == 6
    monkeypatch.setattr(_manifest, "SHARD_TABLE_FROM", 4)  # this code would table it now
    ds = rk.open(root, "train")
    assert [r["caption"] for r in ds.records()] == [f"record {i}" for i in range(12)]
    assert ds[7]["caption"] == "record 7"


def test_a_changed_table_is_refused_naming_it(tabled: Path) -> None:
    table = table_file(tabled)
    data = bytearray(table.read_bytes())
    data[30] ^= 0xFF
    table.write_bytes(bytes(data))
    with pytest.raises(
        ManifestError, match=rf"shard table {table.name} has sha256 .* \(changed or damaged\)"
    ):
        rk.open(tabled, "train")


def test_a_missing_table_is_refused_naming_it(tabled: Path) -> None:
    table = table_file(tabled)
    table.unlink()
    with pytest.raises(
        ManifestError, match=rf"shard table {table.name} is listed in dataset.json but missing"
    ):
        rk.open(tabled, "train")


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (b"../escape.tfrecord", "starting with '.'"),
        (b"a//b.tfrecord", "an empty part"),
        (b"/etc/passwd", "an empty part"),
        (b"caf\xc3\xa9.tfrecord", "holds byte 0xc3"),
    ],
)
def test_a_table_naming_a_file_outside_the_dataset_is_refused(tabled: Path, name: bytes, why: str) -> None:
    table = ShardTable.from_entries(rk.Manifest.load(tabled).splits["train"].shards)
    assert table is not None
    data = table.to_bytes()
    first = b"train-00000.tfrecord\n"
    forged = data.replace(first, name + b"\n")
    forged = (
        forged[:16]
        + (len(forged) - (len(data) - int.from_bytes(data[16:24], "little"))).to_bytes(8, "little")
        + forged[24:]
    )
    digest = hashlib.sha256(forged).hexdigest()
    (tabled / f"train.shards.{digest[:16]}").write_bytes(forged)
    raw = json.loads((tabled / "dataset.json").read_text())
    raw["splits"]["train"]["shard_table"].update(file=f"train.shards.{digest[:16]}", sha256=digest)
    (tabled / "dataset.json").write_text(json.dumps(raw))
    with pytest.raises(ManifestError, match=f"the name of shard 0 .*{why}"):
        rk.Manifest.load(tabled)


def test_a_table_that_disagrees_with_the_manifest_on_its_count_is_refused(tabled: Path) -> None:
    raw = json.loads((tabled / "dataset.json").read_text())
    raw["splits"]["train"]["shard_table"]["shards"] = 7
    (tabled / "dataset.json").write_text(json.dumps(raw))
    with pytest.raises(ManifestError, match="lists 6 shards, the manifest says 7"):
        rk.Manifest.load(tabled)


def test_an_append_rewrites_only_the_table_of_the_split_it_changes(tabled: Path) -> None:
    train = table_file(tabled)
    before = train.stat()
    rk.write_dataset(records(2), tabled, SCHEMA, "extra", append=True, progress=False)
    assert table_file(tabled) == train
    assert train.stat().st_mtime_ns == before.st_mtime_ns
    rk.write_dataset(records(2, 12), tabled, SCHEMA, "train", append=True, progress=False)
    grown = table_file(tabled)
    assert grown != train
    ds = rk.open(tabled, "train")
    assert len(ds) == 14
    assert ds[13]["caption"] == "record 13"
    assert rk.Manifest.load(tabled).splits["train"].num_records == 14


def test_a_reader_of_the_manifest_before_an_append_still_finds_its_table(
    tabled: Path, tmp_path: Path
) -> None:
    held = (tabled / "dataset.json").read_bytes()  # what a reader read before the appends
    first = table_file(tabled)
    rk.write_dataset(records(2, 12), tabled, SCHEMA, "train", append=True, progress=False)
    second = table_file(tabled)
    # The reader reads the table its manifest names after the append: it is still there.
    snapshot = tmp_path / "as-the-reader-saw-it"
    shutil.copytree(tabled, snapshot)
    (snapshot / "dataset.json").write_bytes(held)
    assert [r["caption"] for r in rk.open(snapshot, "train").records()] == [r["caption"] for r in records(12)]
    assert rk.open(snapshot, "train")[11]["caption"] == "record 11"
    # The next append keeps the table it replaces and removes the one before it.
    rk.write_dataset(records(2, 14), tabled, SCHEMA, "train", append=True, progress=False)
    third = table_file(tabled)
    assert not first.exists()
    assert sorted(p.name for p in tabled.glob("train.shards.*")) == sorted([second.name, third.name])
    assert [r["caption"] for r in rk.open(tabled, "train").records()] == [r["caption"] for r in records(16)]


def test_a_manifest_holding_a_table_dumps_and_validates_as_the_same_manifest(tabled: Path) -> None:
    # What the Beam writer passes between its steps, and what a deep copy makes.
    loaded = rk.Manifest.load(tabled)
    again = rk.Manifest.model_validate_json(loaded.model_dump_json(by_alias=True))
    assert list(again.splits["train"].shards) == list(loaded.splits["train"].shards)
    assert again.model_dump() == loaded.model_dump()
    assert list(loaded.model_copy(deep=True).splits["train"].shards) == list(loaded.splits["train"].shards)


def test_an_index_rebuilt_for_a_changed_shard_of_a_table_is_listed(tabled: Path) -> None:
    from click.testing import CliRunner

    from recordkit.cli import main

    shards = rk.Manifest.load(tabled).splits["train"].shards
    third = tabled / shards[2].file
    (tabled / shards[3].file).write_bytes(third.read_bytes())  # a shard replaced by another
    result = CliRunner().invoke(main, ["index", "--rebuild", str(tabled)])
    assert result.exit_code == 0, result.output
    rebuilt = rk.Manifest.load(tabled).splits["train"].shards
    assert rebuilt[3].index is not None
    assert shards[2].index is not None
    assert rebuilt[3].index.sha256 == shards[2].index.sha256  # the new index is the one listed
