"""write_dataset and DatasetWriter: shards, manifest, splits, bad records, append, progress."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pytest
from _writer_support import SCHEMA, check_manifest_matches_files, make_records, read_ids, read_split
from PIL import Image

import recordkit as rk
from recordkit.errors import DatasetError, IncompatibleSchemaError, RecordError
from recordkit.format._tfrecord import (  # private: frames records by hand, to build or damage shards
    frame_record,
)


def framed_size(record: dict[str, Any]) -> int:
    return len(frame_record(SCHEMA.bind().encoder().encode(record)))


# -- shards and manifest -------------------------------------------------------------------


def test_shard_sizes_respect_the_target(tmp_path: Path) -> None:
    records = list(make_records(400))
    target = 3000
    manifest = rk.write_dataset(records, SCHEMA, tmp_path, shard_bytes=target, progress=False)

    shards = manifest.split("train").shards
    assert [s.file for s in shards] == [f"train-{i:05d}.tfrecord" for i in range(len(shards))]
    assert len(shards) > 5
    first = 0
    for shard in shards:
        sizes = [framed_size(r) for r in records[first : first + shard.records]]
        assert shard.bytes == sum(sizes) <= target  # uncompressed: the file is the framed records
        following = first + shard.records
        if following < len(records):  # a shard is closed only when the next record does not fit
            assert shard.bytes + framed_size(records[following]) > target
        first = following
    assert first == len(records)
    check_manifest_matches_files(tmp_path)
    assert read_ids(tmp_path) == list(range(400))


def test_a_record_larger_than_the_target_gets_a_shard_of_its_own(tmp_path: Path) -> None:
    records = [{"id": 0, "payload": "a"}, {"id": 1, "payload": "b" * 500}, {"id": 2, "payload": "c"}]
    manifest = rk.write_dataset(records, SCHEMA, tmp_path, shard_bytes=100, progress=False)
    assert [s.records for s in manifest.split("train").shards] == [1, 1, 1]
    assert manifest.split("train").shards[1].bytes > 100
    check_manifest_matches_files(tmp_path)


def test_shard_records_limits_records_per_shard(tmp_path: Path) -> None:
    manifest = rk.write_dataset(
        make_records(125), SCHEMA, tmp_path, shard_records=50, shard_bytes=None, progress=False
    )
    assert [s.records for s in manifest.split("train").shards] == [50, 50, 25]
    assert manifest.split("train").num_records == 125
    check_manifest_matches_files(tmp_path)


def test_manifest_describes_schema_codecs_and_version(tmp_path: Path) -> None:
    manifest = rk.write_dataset(make_records(10), SCHEMA, tmp_path, progress=False)
    stored = rk.Manifest.load(tmp_path)
    assert stored == manifest
    assert stored.schema == SCHEMA
    assert stored.fingerprint == SCHEMA.fingerprint()
    assert stored.recordkit_version == rk.__version__
    scalar = rk.default_registry().info("scalar")
    assert stored.codecs["scalar"].version == scalar.version
    assert stored.codecs["scalar"].distribution == scalar.distribution == "recordkit"
    assert stored.codecs["scalar"].distribution_version == scalar.distribution_version
    assert stored.split("train").unfinished is None
    assert "unfinished" not in json.loads((tmp_path / "dataset.json").read_text())["splits"]["train"]


@pytest.mark.parametrize(("compression", "suffix"), [(None, ""), ("GZIP", ".gz"), ("zlib", ".zz")])
def test_tf_data_reads_every_shard(tmp_path: Path, compression: str | None, suffix: str) -> None:
    tf = pytest.importorskip("tensorflow")
    records = list(make_records(150))
    manifest = rk.write_dataset(
        records, SCHEMA, tmp_path, shard_bytes=2500, compression=compression, progress=False
    )
    shards = manifest.split("train").shards
    assert len(shards) > 2
    assert all(s.file.endswith(f".tfrecord{suffix}") for s in shards)
    assert manifest.compression == (compression or "").upper()
    check_manifest_matches_files(tmp_path)

    files = [str(tmp_path / s.file) for s in shards]
    dataset = tf.data.TFRecordDataset(files, compression_type=manifest.compression).batch(64)
    spec = {"id": tf.io.FixedLenFeature([], tf.int64), "payload": tf.io.FixedLenFeature([], tf.string)}
    ids: list[int] = []
    payloads: list[bytes] = []
    for batch in dataset:
        parsed = tf.io.parse_example(batch, spec)
        ids += parsed["id"].numpy().tolist()
        payloads += parsed["payload"].numpy().tolist()
    assert ids == [r["id"] for r in records]
    assert payloads == [r["payload"].encode() for r in records]


def test_compressed_shards_are_smaller_and_reproducible(tmp_path: Path) -> None:
    plain = rk.write_dataset(make_records(200), SCHEMA, tmp_path / "plain", progress=False)
    gz1 = rk.write_dataset(make_records(200), SCHEMA, tmp_path / "gz1", compression="GZIP", progress=False)
    gz2 = rk.write_dataset(make_records(200), SCHEMA, tmp_path / "gz2", compression="GZIP", progress=False)
    assert gz1.split("train").num_bytes < plain.split("train").num_bytes / 2
    assert [s.sha256 for s in gz1.split("train").shards] == [s.sha256 for s in gz2.split("train").shards]


def test_record_instances_and_record_classes(tmp_path: Path) -> None:
    class Item(rk.Record, name="items"):
        id: Annotated[int, rk.field("scalar")]
        payload: Annotated[str, rk.field("scalar", dtype="str")]

    records = [Item(id=i, payload=f"p{i}") for i in range(20)]
    manifest = rk.write_dataset(records, Item, tmp_path, progress=False)
    assert manifest.schema == rk.schema_of(Item)
    assert [(r["id"], r["payload"]) for r in read_split(tmp_path)] == [(i, f"p{i}") for i in range(20)]


@pytest.mark.parametrize("as_str", [True, False])
def test_a_schema_file_path_is_taken_like_readers_take_it(tmp_path: Path, as_str: bool) -> None:
    schema_file = tmp_path / "items.yaml"
    SCHEMA.dump(schema_file)
    given: str | Path = str(schema_file) if as_str else schema_file
    manifest = rk.write_dataset(make_records(10), given, tmp_path / "data", progress=False)
    assert manifest.schema == SCHEMA
    assert read_ids(tmp_path / "data") == list(range(10))


def test_a_missing_schema_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(rk.errors.SchemaFileError, match=r"nope\.yaml"):
        rk.write_dataset(make_records(1), tmp_path / "nope.yaml", tmp_path / "data", progress=False)
    assert not (tmp_path / "data").exists()


def test_every_writer_takes_the_path_then_the_schema_and_the_older_order_still_works(tmp_path: Path) -> None:
    """write_dataset(records, path, schema) and DatasetWriter(path, schema); the order
    write_dataset took before (schema, then path) writes the same shards, with a Schema
    or with a schema file recognised by its name; a call with no path is a TypeError."""
    schema_file = tmp_path / "items.yaml"
    SCHEMA.dump(schema_file)
    rk.write_dataset(make_records(12), tmp_path / "new", SCHEMA, shard_records=5, progress=False)
    rk.write_dataset(make_records(12), SCHEMA, tmp_path / "old", shard_records=5, progress=False)
    rk.write_dataset(
        make_records(12), str(schema_file), str(tmp_path / "file"), shard_records=5, progress=False
    )
    with rk.DatasetWriter(tmp_path / "writer", schema_file, shard_records=5, progress=False) as writer:
        writer.write_all(make_records(12))
    shards = {
        name: rk.Manifest.load(tmp_path / name).split("train").shards for name in ("new", "old", "file")
    }
    assert shards["new"] == shards["old"] == shards["file"] == writer.manifest.split("train").shards
    with pytest.raises(TypeError, match=r"takes the dataset's path \(a folder or a URL\), then its schema"):
        rk.write_dataset([], SCHEMA, SCHEMA)  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "items.yaml", "new", "old", "writer"]


def test_several_splits_in_one_dataset(tmp_path: Path) -> None:
    with rk.DatasetWriter(tmp_path, SCHEMA, shard_records=30, progress=False) as writer:
        for record in make_records(100):
            writer.write(record, split="train" if record["id"] % 4 else "test")
    manifest = writer.manifest
    assert sorted(manifest.splits) == ["test", "train"]
    assert manifest.split("train").num_records == 75
    assert manifest.split("test").num_records == 25
    assert [s.file for s in manifest.split("test").shards] == ["test-00000.tfrecord"]
    assert read_ids(tmp_path, "test") == list(range(0, 100, 4))
    assert read_ids(tmp_path, "train") == [i for i in range(100) if i % 4]
    assert rk.Manifest.load(tmp_path) == manifest
    check_manifest_matches_files(tmp_path)


def test_an_empty_input_gives_an_empty_split(tmp_path: Path) -> None:
    manifest = rk.write_dataset([], SCHEMA, tmp_path, split="validation", progress=False)
    assert manifest.split("validation").shards == []
    assert manifest.split("validation").unfinished is None
    check_manifest_matches_files(tmp_path)


def test_invalid_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="split name"):
        rk.write_dataset([], SCHEMA, tmp_path / "a", split="../x", progress=False)
    with pytest.raises(ValueError, match="shard_bytes"):
        rk.write_dataset([], SCHEMA, tmp_path / "b", shard_bytes=0)
    with pytest.raises(ValueError, match="on_error"):
        rk.write_dataset([], SCHEMA, tmp_path / "c", on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compression"):
        rk.write_dataset([], SCHEMA, tmp_path / "d", compression="bz2")
    (tmp_path / "file").write_text("x")
    with pytest.raises(DatasetError, match="not a folder"):
        rk.write_dataset([], SCHEMA, tmp_path / "file")


def test_an_existing_dataset_is_not_overwritten(tmp_path: Path) -> None:
    rk.write_dataset(make_records(5), SCHEMA, tmp_path, progress=False)
    before = (tmp_path / "dataset.json").read_bytes()
    with pytest.raises(DatasetError, match="append=True"):
        rk.write_dataset(make_records(5), SCHEMA, tmp_path, split="test", progress=False)
    assert (tmp_path / "dataset.json").read_bytes() == before


def test_foreign_shard_files_are_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "train-00000.tfrecord").write_bytes(b"someone else's")
    with pytest.raises(DatasetError, match="does not list"):
        rk.write_dataset(make_records(5), SCHEMA, tmp_path, progress=False)
    assert (tmp_path / "train-00000.tfrecord").read_bytes() == b"someone else's"


# -- bad records ---------------------------------------------------------------------------


def image_bytes(seed: int, fmt: str) -> bytes:
    """A real 4x5 RGB image file, PNG or JPEG, made with Pillow."""
    pixels = np.random.default_rng(seed).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, fmt)
    return buffer.getvalue()


IMAGE_SCHEMA = rk.Schema(
    name="photos",
    fields={
        "image": rk.FieldSpec(codec="image", options={"format": "keep"}),
        "name": rk.FieldSpec(codec="scalar", options={"dtype": "str"}),
    },
)


def photos(n: int, corrupt: int, fmt: str) -> list[dict[str, Any]]:
    """``n`` photo records; record ``corrupt`` holds its file cut in half (truncated)."""
    records = [{"image": image_bytes(i, fmt), "name": f"photo-{i}.{fmt.lower()}"} for i in range(n)]
    data = records[corrupt]["image"]
    records[corrupt]["image"] = data[: len(data) // 2]
    return records


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_a_corrupt_image_raises_naming_record_and_field(tmp_path: Path, fmt: str) -> None:
    records = photos(10, corrupt=5, fmt=fmt)
    with pytest.raises(RecordError) as caught:
        rk.write_dataset(records, IMAGE_SCHEMA, tmp_path, shard_records=2, progress=False)
    error = caught.value
    assert error.record == 5
    assert error.field == "image"
    assert f"record 5, field 'image': corrupt or truncated {fmt}" in str(error)
    # The complete shards (records 0-3) are valid and listed; the partial one is gone.
    manifest = rk.Manifest.load(tmp_path)
    split = manifest.split("train")
    assert [s.file for s in split.shards] == ["train-00000.tfrecord", "train-00001.tfrecord"]
    assert split.unfinished is not None
    assert split.unfinished.consumed == 4
    check_manifest_matches_files(tmp_path)
    assert [r["name"] for r in read_split(tmp_path)] == [f"photo-{i}.{fmt.lower()}" for i in range(4)]


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_skip_lists_the_corrupt_image_in_the_rejects_file(tmp_path: Path, fmt: str) -> None:
    records = photos(10, corrupt=5, fmt=fmt)
    suffix = fmt.lower()
    manifest = rk.write_dataset(
        records, IMAGE_SCHEMA, tmp_path, shard_records=3, on_error="skip", key="name", progress=False
    )
    split = manifest.split("train")
    assert split.rejected == 1
    assert split.rejects_file == "rejects-train.jsonl"
    (line,) = (tmp_path / "rejects-train.jsonl").read_text().splitlines()
    reject = json.loads(line)
    assert reject["index"] == 5
    assert reject["key"] == f"photo-5.{suffix}"
    assert [e["field"] for e in reject["errors"]] == ["image"]
    assert f"corrupt or truncated {fmt}" in reject["errors"][0]["reason"]
    assert f"record key 'photo-5.{suffix}', field 'image'" in reject["message"]
    written = read_split(tmp_path)
    assert [r["name"] for r in written] == [f"photo-{i}.{suffix}" for i in range(10) if i != 5]
    assert [r["image"].shape for r in written] == [(4, 5, 3)] * 9
    assert split.num_records == 9
    check_manifest_matches_files(tmp_path)


def test_a_record_with_several_bad_fields_is_one_reject(tmp_path: Path) -> None:
    records = [{"id": 0, "payload": "ok"}, {"id": "zero", "payload": 1, "extra": 2}]
    manifest = rk.write_dataset(records, SCHEMA, tmp_path, on_error="skip", progress=False)
    assert manifest.split("train").rejected == 1
    reject = json.loads((tmp_path / "rejects-train.jsonl").read_text())
    assert reject["index"] == 1
    assert "key" not in reject
    assert sorted(e["field"] for e in reject["errors"]) == ["extra", "id", "payload"]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 2])
def test_a_record_that_is_not_a_mapping_is_named(tmp_path: Path, workers: int) -> None:
    records: list[Any] = [{"id": 0, "payload": "fine"}, ["id", 1], {"id": 2, "payload": "fine"}]
    with pytest.raises(RecordError) as caught:
        rk.write_dataset(records, SCHEMA, tmp_path / "raise", workers=workers, progress=False)
    assert caught.value.record == 1
    assert str(caught.value) == "record 1: a record must be a mapping or a Record, not list"
    rk.write_dataset(records, SCHEMA, tmp_path / "skip", on_error="skip", workers=workers, progress=False)
    reject = json.loads((tmp_path / "skip" / "rejects-train.jsonl").read_text())
    assert reject["index"] == 1
    assert reject["errors"] == [{"field": None, "reason": "a record must be a mapping or a Record, not list"}]
    assert read_ids(tmp_path / "skip") == [0, 2]


def test_the_key_names_the_record_in_errors(tmp_path: Path) -> None:
    records = list(make_records(6, bad=frozenset({4})))
    with pytest.raises(RecordError, match="record key 'item-4', field 'payload'") as caught:
        rk.write_dataset(records, SCHEMA, tmp_path, key=lambda r: f"item-{r['id']}", progress=False)
    assert caught.value.record == "item-4"


def test_a_writer_stops_after_an_error(tmp_path: Path) -> None:
    writer = rk.DatasetWriter(tmp_path, SCHEMA, progress=False)
    writer.write({"id": 0, "payload": "fine"})
    with pytest.raises(RecordError):
        writer.write({"id": 1, "payload": 1})
    with pytest.raises(DatasetError, match="aborted"):
        writer.write({"id": 2, "payload": "fine"})
    assert not list(tmp_path.glob(".*.tmp"))
    with rk.DatasetWriter(tmp_path / "closed", SCHEMA, progress=False) as closed:
        closed.write({"id": 0, "payload": "fine"})
    with pytest.raises(DatasetError, match="closed"):
        closed.write({"id": 1, "payload": "too late"})
    assert read_ids(tmp_path / "closed") == [0]


def test_an_exception_in_the_input_keeps_the_complete_shards(tmp_path: Path) -> None:
    def records() -> Any:
        yield from make_records(25)
        raise KeyError("the source failed")

    with pytest.raises(KeyError):
        rk.write_dataset(records(), SCHEMA, tmp_path, shard_records=10, progress=False)
    split = rk.Manifest.load(tmp_path).split("train")
    assert [s.records for s in split.shards] == [10, 10]
    check_manifest_matches_files(tmp_path)


# -- resume and append ---------------------------------------------------------------------


def test_resume_after_an_error_writes_every_record_once(tmp_path: Path) -> None:
    records = list(make_records(60, bad=frozenset({33})))
    with pytest.raises(RecordError):
        rk.write_dataset(records, SCHEMA, tmp_path, shard_records=10, progress=False)
    assert rk.Manifest.load(tmp_path).split("train").unfinished.consumed == 30  # type: ignore[union-attr]
    records[33] = {"id": 33, "payload": "fixed"}
    seen: list[int] = []

    def tracked() -> Any:
        for record in records:
            seen.append(record["id"])
            yield record

    manifest = rk.write_dataset(tracked(), SCHEMA, tmp_path, shard_records=10, resume=True, progress=False)
    assert read_ids(tmp_path) == list(range(60))
    assert manifest.split("train").unfinished is None
    assert len(manifest.split("train").shards) == 6
    check_manifest_matches_files(tmp_path)
    # Resuming a finished write writes nothing and does not even read the input.
    seen.clear()
    again = rk.write_dataset(tracked(), SCHEMA, tmp_path, resume=True, progress=False)
    assert seen == []
    assert again.splits == manifest.splits


def test_a_streaming_writer_resumes_record_by_record(tmp_path: Path) -> None:
    records = list(make_records(50))

    def stopped_write() -> None:
        with rk.DatasetWriter(tmp_path, SCHEMA, shard_records=8, progress=False) as writer:
            for record in records[:30]:
                writer.write(record, split="train")
                writer.write(record, split="copy")
            raise RuntimeError("stopped")

    with pytest.raises(RuntimeError):
        stopped_write()
    assert [len(rk.Manifest.load(tmp_path).split(s).shards) for s in ("train", "copy")] == [3, 3]
    with rk.DatasetWriter(tmp_path, SCHEMA, shard_records=8, resume=True, progress=False) as writer:
        for record in records:
            writer.write(record, split="train")
        for record in records[:40]:
            writer.write(record, split="copy")
    assert read_ids(tmp_path, "train") == list(range(50))
    assert read_ids(tmp_path, "copy") == list(range(40))
    check_manifest_matches_files(tmp_path)


def test_resume_removes_debris_of_the_stopped_write(tmp_path: Path) -> None:
    records = list(make_records(40, bad=frozenset({25})))
    with pytest.raises(RecordError):
        rk.write_dataset(records, SCHEMA, tmp_path, shard_records=10, progress=False)
    # What a killed process can leave: a temp shard, a shard renamed but not yet listed,
    # and a half-written manifest temp file.
    (tmp_path / ".train-00002.tfrecord.tmp").write_bytes(b"partial")
    (tmp_path / "train-00002.tfrecord").write_bytes(b"renamed, never listed")
    (tmp_path / ".dataset.abc123.json.tmp").write_text("{")
    with pytest.raises(DatasetError, match="unfinished write"):
        rk.write_dataset(records, SCHEMA, tmp_path, append=True, progress=False)
    records[25] = {"id": 25, "payload": "fixed"}
    rk.write_dataset(records, SCHEMA, tmp_path, shard_records=10, resume=True, progress=False)
    assert read_ids(tmp_path) == list(range(40))
    check_manifest_matches_files(tmp_path)


def test_resume_with_skip_keeps_each_reject_once(tmp_path: Path) -> None:
    bad = frozenset({3, 23, 33})

    def records() -> Any:
        yield from make_records(24, bad=bad)
        raise OSError("the source went away")

    with pytest.raises(OSError, match="went away"):
        rk.write_dataset(records(), SCHEMA, tmp_path, shard_records=10, on_error="skip", progress=False)
    split = rk.Manifest.load(tmp_path).split("train")
    # Shards 0 and 1 hold 0-21 but 3; 23 was rejected after the last complete shard.
    assert [s.records for s in split.shards] == [10, 10]
    assert split.rejected == 1
    check_manifest_matches_files(tmp_path)
    manifest = rk.write_dataset(
        make_records(40, bad=bad), SCHEMA, tmp_path, shard_records=10, on_error="skip", resume=True,
        progress=False,
    )  # fmt: skip
    rejects = [
        json.loads(line)["index"] for line in (tmp_path / "rejects-train.jsonl").read_text().splitlines()
    ]
    assert rejects == sorted(bad)
    assert manifest.split("train").rejected == 3
    assert read_ids(tmp_path) == [i for i in range(40) if i not in bad]
    check_manifest_matches_files(tmp_path)


def test_append_adds_shards_and_splits(tmp_path: Path) -> None:
    rk.write_dataset(make_records(30), SCHEMA, tmp_path, shard_records=20, progress=False)
    more = [{"id": 100 + i, "payload": "more"} for i in range(25)]
    manifest = rk.write_dataset(more, SCHEMA, tmp_path, shard_records=20, append=True, progress=False)
    assert [s.file for s in manifest.split("train").shards] == [f"train-{i:05d}.tfrecord" for i in range(4)]
    assert read_ids(tmp_path) == list(range(30)) + [100 + i for i in range(25)]
    rk.write_dataset(make_records(5), SCHEMA, tmp_path, split="test", append=True, progress=False)
    assert read_ids(tmp_path, "test") == list(range(5))
    check_manifest_matches_files(tmp_path)


def test_append_keeps_the_dataset_compression(tmp_path: Path) -> None:
    rk.write_dataset(make_records(5), SCHEMA, tmp_path, compression="GZIP", progress=False)
    manifest = rk.write_dataset(make_records(5), SCHEMA, tmp_path, split="test", append=True, progress=False)
    assert manifest.split("test").shards[0].file == "test-00000.tfrecord.gz"
    with pytest.raises(DatasetError, match="compression 'GZIP'"):
        rk.write_dataset(make_records(5), SCHEMA, tmp_path, append=True, compression="ZLIB", progress=False)


def test_append_with_an_incompatible_schema_names_the_fields(tmp_path: Path) -> None:
    rk.write_dataset(make_records(5), SCHEMA, tmp_path, progress=False)
    other = rk.Schema(
        name="writer-test",
        fields={
            "id": rk.FieldSpec(codec="scalar", options={"dtype": "int32"}),
            "payload": rk.FieldSpec(codec="scalar", options={"dtype": "str"}),
            "score": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}),
        },
    )
    before = (tmp_path / "dataset.json").read_bytes()
    with pytest.raises(IncompatibleSchemaError) as caught:
        rk.write_dataset([], other, tmp_path, append=True, progress=False)
    message = str(caught.value)
    assert "'id'" in message
    assert "'score'" in message
    assert "'payload'" not in message
    assert any("dtype" in d for d in caught.value.differences)
    assert (tmp_path / "dataset.json").read_bytes() == before
    # A description is not part of the stored layout: appending with it changed is fine.
    described = SCHEMA.model_copy(update={"description": "now with a description"})
    rk.write_dataset(make_records(3), described, tmp_path, append=True, progress=False)
    assert read_ids(tmp_path) == [0, 1, 2, 3, 4, 0, 1, 2]


WITH_NOTE = rk.Schema(
    name="writer-test-v2",
    version="2.0.0",
    description="the writer test schema, with notes",
    fields={**SCHEMA.fields, "note": rk.FieldSpec(codec="text", optional=True)},
)


def test_append_with_an_added_optional_field_grows_the_dataset_schema(tmp_path: Path) -> None:
    rk.write_dataset(make_records(30), SCHEMA, tmp_path, shard_records=20, progress=False)
    old_shards = rk.Manifest.load(tmp_path).split("train").shards
    more = [{"id": 100 + i, "payload": "more", "note": f"note {i}" if i % 2 else None} for i in range(10)]
    manifest = rk.write_dataset(more, WITH_NOTE, tmp_path, shard_records=20, append=True, progress=False)

    # The dataset's schema becomes the appending one, which describes every record.
    assert manifest.schema == WITH_NOTE
    assert manifest.fingerprint == WITH_NOTE.fingerprint() != SCHEMA.fingerprint()
    assert manifest.codecs["text"].version == rk.default_registry().info("text").version
    assert rk.Manifest.load(tmp_path) == manifest
    assert manifest.split("train").shards[:2] == old_shards
    check_manifest_matches_files(tmp_path)
    # Every record, old and new, is a valid record of the grown schema.
    notes = [r["note"] for r in read_split(tmp_path)]
    assert notes == [None] * 30 + [f"note {i}" if i % 2 else None for i in range(10)]

    # Plain tf.data through the generated parser reads the old shards with the note absent.
    pytest.importorskip("tensorflow")
    (batch,) = list(rk.load_dataset(tmp_path, batch_size=64))
    assert batch["id"].numpy().tolist() == list(range(30)) + [100 + i for i in range(10)]
    assert batch["note/present"].numpy().tolist() == [False] * 30 + [bool(i % 2) for i in range(10)]

    # The narrower schema may still append (its records leave the optional note out),
    # and the dataset's schema stays as it is: it keeps the note.
    again = rk.write_dataset(make_records(3), SCHEMA, tmp_path, append=True, progress=False)
    assert again.schema == WITH_NOTE
    assert again.fingerprint == manifest.fingerprint
    assert read_ids(tmp_path)[-3:] == [0, 1, 2]
    check_manifest_matches_files(tmp_path)


def test_a_grown_schema_keeps_the_optional_fields_the_appending_one_leaves_out(tmp_path: Path) -> None:
    with_flag = rk.Schema(
        name="writer-test", fields={**SCHEMA.fields, "flag": rk.FieldSpec(codec="scalar", optional=True)}
    )
    rk.write_dataset([{"id": 0, "payload": "a", "flag": 1}], with_flag, tmp_path, progress=False)
    # Leaves "flag" out, adds "note": the dataset's schema has both.
    without_flag = WITH_NOTE.model_copy(
        update={"fields": {**SCHEMA.fields, "note": WITH_NOTE.fields["note"]}}
    )
    records = [{"id": 1, "payload": "b", "note": "n"}]
    manifest = rk.write_dataset(records, without_flag, tmp_path, append=True, progress=False)
    assert list(manifest.schema.fields) == ["id", "payload", "note", "flag"]
    assert manifest.schema.version == WITH_NOTE.version
    assert [(r["flag"], r["note"]) for r in read_split(tmp_path)] == [(1, None), (None, "n")]
    check_manifest_matches_files(tmp_path)


def test_an_added_field_that_is_not_optional_is_refused(tmp_path: Path) -> None:
    rk.write_dataset(make_records(5), SCHEMA, tmp_path, progress=False)
    before = (tmp_path / "dataset.json").read_bytes()
    required = rk.Schema(
        name="writer-test", fields={**SCHEMA.fields, "note": rk.FieldSpec(codec="text", default="")}
    )
    with pytest.raises(IncompatibleSchemaError, match="'note' differ") as caught:
        rk.write_dataset([{"id": 9, "payload": "x", "note": "n"}], required, tmp_path, append=True)
    assert caught.value.differences == [
        "field 'note': added: stored records do not have it, and it is not optional (incompatible)"
    ]
    assert (tmp_path / "dataset.json").read_bytes() == before


def test_a_failed_append_keeps_everything_committed_before_it(tmp_path: Path) -> None:
    """Crash safety: an append that stops (here at a bad record) loses nothing already
    written: the earlier shards and splits stay listed, unchanged and readable, and
    the append can be resumed."""
    rk.write_dataset(make_records(45), SCHEMA, tmp_path, shard_records=20, progress=False)
    rk.write_dataset(make_records(7), SCHEMA, tmp_path, split="test", append=True, progress=False)
    before = rk.Manifest.load(tmp_path)
    unlisted = ("dataset.json", ".recordkit.lock")
    files_before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name not in unlisted}

    more = [{"id": 100 + i, "payload": "more"} for i in range(50)]
    more[27]["payload"] = 27  # a bad record, after one complete new shard
    with pytest.raises(RecordError, match="record 27, field 'payload'"):
        rk.write_dataset(more, SCHEMA, tmp_path, shard_records=20, append=True, progress=False)

    after = rk.Manifest.load(tmp_path)
    train = after.split("train")
    assert train.shards[:3] == before.split("train").shards  # listed as before
    assert [s.records for s in train.shards[3:]] == [20]  # plus the complete new shard
    assert after.split("test") == before.split("test")
    assert (after.schema, after.fingerprint, after.codecs) == (
        before.schema,
        before.fingerprint,
        before.codecs,
    )
    for name, data in files_before.items():
        assert (tmp_path / name).read_bytes() == data  # not rewritten
    check_manifest_matches_files(tmp_path)  # no partial shard, every listed shard valid
    assert read_ids(tmp_path) == list(range(45)) + [100 + i for i in range(20)]
    assert read_ids(tmp_path, "test") == list(range(7))
    assert train.unfinished is not None
    assert train.unfinished.consumed == 20

    more[27]["payload"] = "fixed"
    manifest = rk.write_dataset(more, SCHEMA, tmp_path, shard_records=20, resume=True, progress=False)
    assert manifest.split("train").unfinished is None
    assert read_ids(tmp_path) == list(range(45)) + [100 + i for i in range(50)]
    assert read_ids(tmp_path, "test") == list(range(7))
    check_manifest_matches_files(tmp_path)


# -- progress ------------------------------------------------------------------------------


def test_progress_bar_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rk.write_dataset(list(make_records(300)), SCHEMA, tmp_path / "on", progress=True)
    err = capsys.readouterr().err
    assert "300/300" in err  # records (the total is known: the input is a list)
    assert "rec/s" in err  # rate
    assert "B written" in err  # bytes


def test_no_progress_bar_when_stderr_is_not_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rk.write_dataset(make_records(300), SCHEMA, tmp_path / "auto")
    assert capsys.readouterr().err == ""


def test_the_writer_and_write_dataset_take_the_one_list_of_write_options(tmp_path: Path) -> None:
    """Both take ``**options: Unpack[WriteOptions]``: one list, documented once."""
    import inspect

    for function in (rk.DatasetWriter.__init__, rk.write_dataset):
        (variadic,) = [p for p in inspect.signature(function).parameters.values() if p.kind is p.VAR_KEYWORD]
        assert "Unpack[WriteOptions]" in str(variadic.annotation)
    documented = rk.WriteOptions.__doc__ or ""
    assert all(f":param {name}:" in documented for name in rk.WriteOptions.__annotations__)
    # One dict of options serves both.
    options: rk.WriteOptions = {"shard_records": 100, "progress": False, "durable": False}
    first = rk.write_dataset(make_records(250), SCHEMA, tmp_path / "a", **options)
    with rk.DatasetWriter(tmp_path / "b", SCHEMA, **options) as writer:
        writer.write_all(make_records(250))
    assert [s.sha256 for s in first.split("train").shards] == [
        s.sha256 for s in writer.manifest.split("train").shards
    ]
    assert len(first.split("train").shards) == 3


def test_an_unknown_write_option_is_named(tmp_path: Path) -> None:
    with pytest.raises(
        TypeError, match=r"unknown write option\(s\) \['shards'\]; the options are \['shard_bytes'"
    ):
        rk.write_dataset([], SCHEMA, tmp_path / "a", shards=3)  # type: ignore[call-arg]
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("durable", [True, False])
def test_durable_fsyncs_shards_folder_rejects_and_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        synced.append(Path(target).name if Path(target) != tmp_path / "out" else "(folder)")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    records = [*make_records(30), {"id": "not an int", "payload": "x"}]
    options = {"shard_records": 10, "on_error": "skip", "progress": False}
    rk.write_dataset(records, SCHEMA, tmp_path / "out", durable=durable, **options)
    if not durable:
        assert synced == []
    else:
        temps = [
            name for name in synced if ".tfrecord." in name and name.endswith(".tmp") and ".index" not in name
        ]
        shards = [name.split(".tfrecord")[0] for name in temps]
        assert shards == [f".train-0000{i}" for i in range(3)]  # each before its rename
        assert "(folder)" in synced  # the renames, before a manifest lists them
        assert any(name.startswith(".dataset.") for name in synced)  # every manifest save
        assert "rejects-train.jsonl" in synced
    monkeypatch.setattr(os, "fsync", real_fsync)
    # The same files either way: only when they reach the disk differs.
    rk.write_dataset(records, SCHEMA, tmp_path / "other", durable=not durable, **options)
    for name in ("train-00000.tfrecord", "train-00002.tfrecord", "rejects-train.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "other" / name).read_bytes()


def test_a_shard_is_fsynced_and_listed_while_the_next_is_encoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fsync that completes a durable shard runs on the shard's background thread,
    not on the encoding thread; every shard ends up listed, in order."""
    import threading

    threads: dict[str, str] = {}
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        threads[Path(os.readlink(f"/proc/self/fd/{fd}")).name] = threading.current_thread().name
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    manifest = rk.write_dataset(make_records(50), SCHEMA, tmp_path / "out", shard_records=10, progress=False)
    shard_temp = re.compile(r"^(\.train-\d+\.tfrecord)\.[0-9a-f]+-[0-9a-f]+\.tmp$")
    shards = {name: thread for name, thread in threads.items() if shard_temp.match(name)}
    finals = sorted(shard_temp.sub(r"\1", name) for name in shards)
    assert finals == [f".train-0000{i}.tfrecord" for i in range(5)]
    assert all(thread.startswith("recordkit-shard") for thread in shards.values()), shards
    assert [s.file for s in manifest.split("train").shards] == [f"train-0000{i}.tfrecord" for i in range(5)]
    check_manifest_matches_files(tmp_path / "out")


def test_a_shard_that_fails_to_complete_stops_the_write_and_keeps_the_ones_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        if name.startswith(".train-00002.tfrecord.") and name.endswith(".tmp") and ".index" not in name:
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="Input/output error"):
        rk.write_dataset(make_records(50), SCHEMA, tmp_path / "out", shard_records=10, progress=False)
    manifest = rk.Manifest.load(tmp_path / "out")
    assert [s.file for s in manifest.split("train").shards] == [
        "train-00000.tfrecord",
        "train-00001.tfrecord",
    ]
    assert manifest.split("train").unfinished is not None
    check_manifest_matches_files(tmp_path / "out")
    monkeypatch.setattr(os, "fsync", real_fsync)
    rk.write_dataset(
        make_records(50), SCHEMA, tmp_path / "out", shard_records=10, progress=False, resume=True
    )
    assert read_ids(tmp_path / "out") == list(range(50))
