"""dataset.json: the model round-trips, and an unfinished write is recorded only while it lasts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pydantic
import pytest

import recordkit as rk
from recordkit.dataset._manifest import CodecProvenance, GroupShardInfo, UnfinishedWrite
from recordkit.dataset._picture_sizes import PictureSizes
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


def test_codec_versions_are_the_stored_version_of_each_codec() -> None:
    stored = manifest()
    stored.codecs["text"] = CodecProvenance(version="3")
    assert stored.codec_versions == {"scalar": "1", "text": "3"}


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


def test_a_failed_save_keeps_the_previous_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The save is atomic: until the rename, dataset.json is the previous commit."""
    manifest(train=rk.SplitInfo()).save(tmp_path)
    before = (tmp_path / "dataset.json").read_bytes()

    def crash(src: object, dst: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("recordkit.dataset._manifest.os.replace", crash)
    shard = rk.ShardInfo(file="train-00000.tfrecord", records=3, bytes=120, sha256="ab" * 32)
    with pytest.raises(OSError, match="Input/output"):
        manifest(train=rk.SplitInfo(shards=[shard])).save(tmp_path)
    assert (tmp_path / "dataset.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["dataset.json"]  # the temp file is removed


# -- every key is documented -------------------------------------------------------------------

REFERENCE = Path(__file__).parents[3] / "docs" / "reference" / "dataset-format.md"


def model_keys(model: type[pydantic.BaseModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def written_keys(data: Any, skip: frozenset[str] = frozenset({"schema"})) -> set[str]:
    """Every key of a dataset.json, but those under ``schema`` (the schema-file format,
    documented on its own page) and the names of codecs and splits (user data)."""
    keys: set[str] = set()
    if isinstance(data, list):
        for item in data:
            keys |= written_keys(item)
    elif isinstance(data, dict):
        for key, value in data.items():
            keys.add(key)
            if key in skip:
                continue
            if key in ("codecs", "splits"):
                for named in value.values():
                    keys |= written_keys(named)
            else:
                keys |= written_keys(value)
    return keys


def test_every_manifest_and_rejects_key_is_documented(tmp_path: Path) -> None:
    # A real dataset with every optional part: a finished split with rejects, and a
    # split whose write stopped (so it is still marked unfinished).
    from _writer_support import SCHEMA as WRITER_SCHEMA
    from _writer_support import make_records

    rk.write_dataset(
        make_records(30, bad=frozenset({4})),
        WRITER_SCHEMA,
        tmp_path,
        shard_records=10,
        on_error="skip",
        key="id",
    )

    def stopping() -> Any:
        yield from make_records(15)
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        rk.write_dataset(stopping(), WRITER_SCHEMA, tmp_path, split="test", shard_records=10, append=True)
    data = json.loads((tmp_path / "dataset.json").read_text())
    assert "unfinished" in data["splits"]["test"]
    assert "rejects_file" in data["splits"]["train"]
    written = written_keys(data)
    rejects = json.loads((tmp_path / "rejects-train.jsonl").read_text().splitlines()[0])
    written |= written_keys(rejects)
    # The models may hold keys a given dataset leaves out (None values are not written).
    models = set().union(
        *(
            model_keys(m)
            for m in (
                rk.Manifest,
                rk.SplitInfo,
                rk.ShardInfo,
                CodecProvenance,
                UnfinishedWrite,
                rk.FieldGroup,
                GroupShardInfo,
                rk.DatasetCard,
                PictureSizes,
            )
        )
    )
    assert written - {"index", "key", "errors", "field", "reason", "message"} <= models

    reference = REFERENCE.read_text(encoding="utf-8")
    table_keys = set(re.findall(r"^\| `([a-z_0-9]+)` \|", reference, re.MULTILINE))
    missing = (written | models) - table_keys
    assert not missing, f"keys missing from the reference's tables: {sorted(missing)}"
    unknown = table_keys - (written | models)
    assert not unknown, f"the reference documents keys that do not exist: {sorted(unknown)}"
