"""The record index beside each shard (sdk/recordkit/format/_index.py), the manifest's
format 2 that lists it, ``recordkit verify``'s check of it and ``recordkit index``
(sdk/recordkit/_cli/index.py), on real shards."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import recordkit as rk
from recordkit._cli import (  # private: patches the index command's checkpoints and builder
    index as index_command,
)
from recordkit.cli import main
from recordkit.errors import CorruptRecordError
from recordkit.format._index import INDEX_MAGIC, RecordIndex, build_index, read_index
from recordkit.format._tfrecord import iter_tfrecords
from recordkit.storage import location

SCHEMA = rk.Schema(
    name="ids",
    fields={"id": rk.FieldSpec(codec="scalar"), "text": rk.FieldSpec(codec="text")},
)


def records(n: int) -> list[dict[str, object]]:
    return [{"id": i, "text": "x" * (i * 7 % 50)} for i in range(n)]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    rk.write_dataset(records(23), SCHEMA, root, shard_records=10, progress=False)
    return root


def test_the_index_file_is_magic_count_and_offsets_little_endian(dataset: Path) -> None:
    shard = rk.Manifest.load(dataset).splits["train"].shards[0]
    assert shard.index is not None
    data = (dataset / shard.index.file).read_bytes()
    assert data[:8] == INDEX_MAGIC
    assert int.from_bytes(data[8:16], "little") == 10
    offsets = np.frombuffer(data[16:], "<u8").tolist()
    read = list(iter_tfrecords(location(dataset / shard.file)))
    assert offsets[:-1] == [o for o, _ in read]
    assert offsets[-1] == (dataset / shard.file).stat().st_size  # the end of the last record


def test_a_malformed_index_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "x.tfrecord.index"
    bad.write_bytes(b"PICKLE??" + bytes(8))
    with pytest.raises(CorruptRecordError, match="not a recordkit record index") as info:
        read_index(bad)
    assert info.value.context.shard == "x.tfrecord.index"
    good = RecordIndex.from_offsets([0, 30], 70).to_bytes()
    bad.write_bytes(good[:-3])
    with pytest.raises(CorruptRecordError, match="truncated"):
        read_index(bad)


def test_the_manifest_is_format_2_and_old_manifests_still_load(dataset: Path) -> None:
    raw = json.loads((dataset / "dataset.json").read_text())
    assert raw["format"] == "recordkit.dataset/2"
    # A format 1 manifest (written before indexes): no index keys.
    raw["format"] = "recordkit.dataset/1"
    for shard in raw["splits"]["train"]["shards"]:
        del shard["index"]
    (dataset / "dataset.json").write_text(json.dumps(raw))
    old = rk.Manifest.load(dataset)
    assert old.format == "recordkit.dataset/1"
    assert all(s.index is None for s in old.splits["train"].shards)
    assert [r["id"] for r in rk.iter_records(dataset)] == list(range(23))


def _make_old(dataset: Path) -> None:
    """Turn ``dataset`` into one written before indexes existed."""
    raw = json.loads((dataset / "dataset.json").read_text())
    raw["format"] = "recordkit.dataset/1"
    for shard in raw["splits"]["train"]["shards"]:
        (dataset / shard.pop("index")["file"]).unlink()
    (dataset / "dataset.json").write_text(json.dumps(raw))


def test_an_interrupted_index_run_keeps_the_indexes_it_listed(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest is saved after the index files it lists (here after each, as on a long
    run): a run that stops keeps those, and the next run builds the rest."""
    _make_old(dataset)
    monkeypatch.setattr(index_command, "CHECKPOINT_SECONDS", 0.0)
    built: list[object] = []

    def failing(shard: object, compression: object) -> RecordIndex:
        built.append(shard)
        if len(built) == 3:
            raise OSError("the disk went away (injected)")
        return build_index(location(shard), compression)  # type: ignore[arg-type]

    monkeypatch.setattr(index_command, "build_index", failing)
    with pytest.raises(OSError, match="injected"):
        index_command.index_dataset(location(dataset))
    shards = rk.Manifest.load(dataset).splits["train"].shards
    assert [s.index is not None for s in shards] == [True, True, False]
    assert all((dataset / s.index.file).is_file() for s in shards if s.index is not None)
    monkeypatch.undo()
    assert index_command.index_dataset(location(dataset)) == [f"{shards[2].file}.index"]
    assert CliRunner().invoke(main, ["verify", str(dataset)]).exit_code == 0


def test_recordkit_index_upgrades_an_old_dataset(dataset: Path) -> None:
    shards = rk.Manifest.load(dataset).splits["train"].shards
    expected = {s.file: (dataset / s.index.file).read_bytes() for s in shards if s.index}
    _make_old(dataset)
    result = CliRunner().invoke(main, ["index", str(dataset)])
    assert result.exit_code == 0, result.output
    assert "indexed 3 shards" in result.output
    manifest = rk.Manifest.load(dataset)
    assert manifest.format == "recordkit.dataset/2"
    for shard in manifest.splits["train"].shards:
        assert shard.index is not None
        assert (dataset / shard.index.file).read_bytes() == expected[shard.file]  # same as the writer's
    again = CliRunner().invoke(main, ["index", str(dataset)])
    assert "indexed 0 shards" in again.output
    verified = CliRunner().invoke(main, ["verify", str(dataset)])
    assert verified.exit_code == 0, verified.output


def test_verify_fails_a_changed_or_missing_index(dataset: Path, tmp_path: Path) -> None:
    manifest = rk.Manifest.load(dataset)
    first, second = (s.index for s in manifest.splits["train"].shards[:2])
    assert first is not None
    assert second is not None
    data = bytearray((dataset / first.file).read_bytes())
    data[24] ^= 0x01  # the second record's offset, off by one byte
    (dataset / first.file).write_bytes(bytes(data))
    (dataset / second.file).unlink()
    result = CliRunner().invoke(main, ["verify", str(dataset)])
    assert result.exit_code == 1
    assert f"record index {first.file}: sha256" in result.output
    assert f"record index {second.file}: cannot be read" in result.output
    # An index with the right sha256 in the manifest but wrong offsets is caught too.
    fixed = tmp_path / "fixed"
    shutil.copytree(dataset, fixed)
    raw = json.loads((fixed / "dataset.json").read_text())
    raw["splits"]["train"]["shards"][0]["index"]["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
    (fixed / "dataset.json").write_text(json.dumps(raw))
    result = CliRunner().invoke(main, ["verify", str(fixed), "-q"])
    assert "its offsets are not those of the shard's records" in result.output


def test_recordkit_index_writes_sidecars_for_foreign_files(tmp_path: Path) -> None:
    paths = []
    for n in (3, 5):
        path = tmp_path / f"foreign-{n}.tfrecord"
        import tensorflow as tf  # a file written by another tool: TensorFlow's own writer

        with tf.io.TFRecordWriter(str(path)) as writer:
            for i in range(n):
                writer.write(rk.RecordEncoder(SCHEMA.bind()).encode({"id": i, "text": f"t{i}"}))
        paths.append(path)
    result = CliRunner().invoke(main, ["index", str(tmp_path / "foreign-*.tfrecord")])
    assert result.exit_code == 0, result.output
    for path in paths:
        sidecar = path.with_name(path.name + ".index")
        assert read_index(sidecar).offsets.tolist() == build_index(location(path)).offsets.tolist()
    # RandomAccess reads them through a schema, with the sidecars.
    ds = rk.RandomAccess(sorted(paths), schema=SCHEMA)
    assert len(ds) == 8
    assert [r["id"] for r in ds[[0, 2, 3, 7]]] == [0, 2, 0, 4]
