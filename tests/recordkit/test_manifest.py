"""dataset.json: the model round-trips, and an unfinished write is recorded only while it lasts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import recordkit as rk
from recordkit._manifest import UnfinishedWrite
from recordkit.errors import ManifestError

SCHEMA = rk.Schema(name="m", fields={"id": rk.FieldSpec(codec="scalar")})


def manifest(**splits: rk.SplitInfo) -> rk.Manifest:
    return rk.Manifest(
        recordkit_version=rk.__version__,
        schema=SCHEMA,
        fingerprint=SCHEMA.fingerprint(),
        codecs={"scalar": {"version": "1", "plugin": "scalar", "distribution": "recordkit"}},
        splits=splits,
    )


def test_round_trip_through_the_file(tmp_path: Path) -> None:
    shard = rk.ShardInfo(file="train-00000.tfrecord", records=3, bytes=120, sha256="ab" * 32)
    written = manifest(
        train=rk.SplitInfo(shards=[shard, shard], rejected=1, rejects_file="rejects-train.jsonl")
    )
    written.save(tmp_path)
    loaded = rk.Manifest.load(tmp_path)
    assert loaded == written
    assert loaded.split("train").num_records == 6
    assert loaded.split("train").num_bytes == 240
    assert [p.name for p in tmp_path.iterdir()] == ["dataset.json"]  # no temp file left


def test_unfinished_is_stored_only_while_a_write_lasts(tmp_path: Path) -> None:
    running = manifest(
        train=rk.SplitInfo(unfinished=UnfinishedWrite(consumed=40, started="2024-01-01T00:00:00+00:00"))
    )
    running.save(tmp_path)
    stored = json.loads((tmp_path / "dataset.json").read_text())
    assert stored["splits"]["train"]["unfinished"] == {"consumed": 40, "started": "2024-01-01T00:00:00+00:00"}
    assert rk.Manifest.load(tmp_path).split("train").unfinished == running.split("train").unfinished
    manifest(train=rk.SplitInfo()).save(tmp_path)
    assert "unfinished" not in json.loads((tmp_path / "dataset.json").read_text())["splits"]["train"]


def test_a_bad_manifest_names_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="not a recordkit dataset"):
        rk.Manifest.load(tmp_path)
    data = json.loads(manifest(train=rk.SplitInfo()).to_json())
    data["splits"]["train"]["unfinished"] = {"consumed": -1, "started": "now"}
    (tmp_path / "dataset.json").write_text(json.dumps(data))
    with pytest.raises(ManifestError, match=r"splits\.train\.unfinished\.consumed"):
        rk.Manifest.load(tmp_path)
    with pytest.raises(ManifestError, match="no split 'test'"):
        manifest(train=rk.SplitInfo()).split("test")
