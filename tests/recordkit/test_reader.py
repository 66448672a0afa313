"""recordkit.load_dataset: a dataset as a tf.data pipeline of decoded dicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _reader_support import SCHEMA, assert_record, expected, make_records, rows, write

import recordkit as rk
from recordkit.errors import CorruptRecordError, DatasetError, IncompatibleSchemaError, UnknownCodecError

N = 10


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("reader") / "data"
    write(path, records)  # 3 shards of 4, 4 and 2 records
    return path


def read_rows(ds: Any) -> list[dict[str, Any]]:
    return [row for batch in ds for row in rows(batch)]


def flip_bit(shard: Path, at: int) -> None:
    data = bytearray(shard.read_bytes())
    data[at] ^= 0x08
    shard.write_bytes(bytes(data))


def shard_files(path: Path) -> list[Path]:
    manifest = json.loads((path / "dataset.json").read_text())
    return [path / s["file"] for s in manifest["splits"]["train"]["shards"]]


def test_batches_decode_every_field_equal_to_what_was_written(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    ds = rk.load_dataset(dataset, batch_size=4)
    spec = ds.element_spec
    assert isinstance(spec["image"], tf.RaggedTensorSpec)  # variable-size images come ragged
    assert spec["image"].shape.rank == 4  # [B, (H), (W), C]
    assert spec["image"].ragged_rank == 2
    assert isinstance(spec["objects"]["boxes"], tf.RaggedTensorSpec)
    got = read_rows(ds)
    assert len(got) == N
    for record, row in zip(records, got, strict=True):
        assert_record(expected(record), row)


def test_single_records_are_dense_per_record(dataset: Path, records: list[dict[str, Any]]) -> None:
    ds = rk.load_dataset(dataset)
    assert isinstance(ds.element_spec["image"], tf.TensorSpec)
    assert ds.element_spec["image"].shape.rank == 3
    assert isinstance(ds.element_spec["words"], tf.TensorSpec)  # a list of strings per record
    got = list(ds)
    assert len(got) == N
    for record, row in zip(records, got, strict=True):
        assert_record(expected(record), row)


def test_one_field_is_all_that_is_parsed_and_decoded(dataset: Path, records: list[dict[str, Any]]) -> None:
    ds = rk.load_dataset(dataset, "train", ["label"], batch_size=3)
    assert set(ds.element_spec) == {"label"}
    labels = [int(v) for batch in ds for v in batch["label"]]
    assert labels == [expected(r)["label"] for r in records]


def test_batch_size_and_drop_remainder(dataset: Path) -> None:
    sizes = [int(b["label"].shape[0]) for b in rk.load_dataset(dataset, fields=["label"], batch_size=3)]
    assert sizes == [3, 3, 3, 1]
    kept = [
        int(b["label"].shape[0])
        for b in rk.load_dataset(dataset, fields=["label"], batch_size=3, drop_remainder=True)
    ]
    assert kept == [3, 3, 3]
    # the manifest's counts give the number of steps (Keras, tf.distribute)
    assert int(rk.load_dataset(dataset, fields=["label"], batch_size=3).cardinality()) == 4
    assert (
        int(
            rk.load_dataset(
                dataset, fields=["label"], batch_size=3, drop_remainder=True, repeat=2
            ).cardinality()
        )
        == 6
    )
    assert int(rk.load_dataset(dataset, fields=["label"], on_corrupt="skip").cardinality()) < 0  # unknown


def test_shuffling_with_a_seed_is_reproducible_and_complete(dataset: Path) -> None:
    def order(seed: int) -> list[str]:
        ds = rk.load_dataset(
            dataset, fields=["caption"], shuffle_files=True, shuffle_buffer=8, seed=seed, repeat=2
        )
        return [r["caption"].numpy().decode() for r in ds]

    first, again, other = order(1), order(1), order(2)
    assert first == again
    assert first != other
    assert sorted(first) == sorted(f"record {i} — ünïcode" for i in range(N) for _ in range(2))
    assert first[:N] != first[N:]  # each epoch is shuffled anew


def test_unshuffled_reading_keeps_the_written_order_and_repeat_counts(dataset: Path) -> None:
    ds = rk.load_dataset(dataset, fields=["label"], repeat=3, block_length=1, cycle_length=1)
    labels = [int(r["label"]) for r in ds]
    assert labels == [i % 3 for i in range(N)] * 3


def test_pad_gives_dense_batches_with_each_true_shape(dataset: Path, records: list[dict[str, Any]]) -> None:
    ds = rk.load_dataset(dataset, fields=["image", "objects", "caption"], batch_size=4, pad=True)
    batch = next(iter(ds))
    assert isinstance(batch["image"], tf.Tensor)
    assert isinstance(batch["objects"]["boxes"], tf.Tensor)
    shapes = batch["image/shape"].numpy()
    heights = [r["image"].shape[0] for r in records[:4]]
    widths = [r["image"].shape[1] for r in records[:4]]
    assert shapes.tolist() == [[h, w, 3] for h, w in zip(heights, widths, strict=True)]
    assert batch["image"].shape == (4, max(heights), max(widths), 3)
    for i, record in enumerate(records[:4]):
        h, w = record["image"].shape[:2]
        np.testing.assert_array_equal(batch["image"][i, :h, :w].numpy(), record["image"])
        assert not batch["image"][i, h:].numpy().any()
    counts = batch["objects/boxes/shape"].numpy()[:, 0]
    assert counts.tolist() == [len(r["objects"]["boxes"]) for r in records[:4]]
    assert batch["objects"]["labels"].shape == (4, max(counts))
    assert "caption/shape" not in batch  # a dense field is left alone


def test_images_brought_to_a_named_size(dataset: Path, records: list[dict[str, Any]]) -> None:
    for fit in ("resize", "resize_with_pad", "crop_or_pad"):
        ds = rk.load_dataset(
            dataset, fields=["image", "mask"], batch_size=5, image_size=(4, 6), image_fit=fit
        )
        batch = next(iter(ds))
        assert batch["image"].shape == (5, 4, 6, 3)
        assert batch["image"].dtype == tf.uint8
        assert batch["mask"].shape == (5, 4, 6)
        assert batch["mask"].dtype == tf.uint8
        assert batch["image/shape"].numpy().tolist() == [list(r["image"].shape) for r in records[:5]]
        # masks are resized with nearest neighbour: only indices that exist (or 0, padding)
        for i, record in enumerate(records[:5]):
            assert set(np.unique(batch["mask"][i].numpy())) <= {0, *np.unique(record["mask"])}
    # crop_or_pad does not resample: the centre crop (or zero padding) of the original
    batch = next(iter(rk.load_dataset(dataset, fields=["image"], image_size=(3, 3), image_fit="crop_or_pad")))
    want = tf.image.resize_with_crop_or_pad(records[0]["image"], 3, 3).numpy()
    np.testing.assert_array_equal(batch["image"].numpy(), want)


def test_image_size_for_single_records(dataset: Path) -> None:
    ds = rk.load_dataset(dataset, fields=["image"], image_size={"image": (5, 5)})
    assert ds.element_spec["image"].shape.as_list()[:2] == [5, 5]
    assert len(list(ds)) == N


def test_input_context_splits_the_shards_or_the_records(dataset: Path) -> None:
    def captions(pipelines: int, index: int) -> list[str]:
        context = tf.distribute.InputContext(num_input_pipelines=pipelines, input_pipeline_id=index)
        ds = rk.load_dataset(dataset, fields=["caption"], input_context=context)
        return [r["caption"].numpy().decode() for r in ds]

    for pipelines in (2, 4):  # 3 shards: by shard for 2, by record for 4
        parts = [captions(pipelines, i) for i in range(pipelines)]
        everything = [c for part in parts for c in part]
        assert sorted(everything) == sorted(f"record {i} — ünïcode" for i in range(N))
        assert all(parts)


def test_a_reader_schema_is_checked_against_the_stored_one(dataset: Path) -> None:
    fields = dict(SCHEMA.fields)
    fields["extra"] = rk.FieldSpec(codec="text", optional=True)
    newer = SCHEMA.model_copy(update={"fields": fields})
    batch = next(iter(rk.load_dataset(dataset, fields=["label", "extra"], batch_size=4, schema=newer)))
    assert not batch["extra/present"].numpy().any()  # not in the stored data: absent
    fields["label"] = rk.FieldSpec(codec="label", options={"names": ["x", "y"]})
    changed = SCHEMA.model_copy(update={"fields": fields})
    with pytest.raises(IncompatibleSchemaError, match="'label'"):
        rk.load_dataset(dataset, schema=changed)
    # a field the reader does not ask for does not matter
    rk.load_dataset(dataset, fields=["caption"], schema=changed)


def test_a_missing_codec_names_the_distribution_that_wrote_it(dataset: Path) -> None:
    registry = rk.load_plugins(allow=["scalar", "text", "label"]).registry
    with pytest.raises(UnknownCodecError) as err:
        rk.load_dataset(dataset, registry=registry)
    assert err.value.context.codec == "image"
    assert "distribution 'recordkit'" in str(err.value)
    assert "pip install recordkit" in str(err.value)
    # the fields whose codecs are installed still read
    assert len(list(rk.load_dataset(dataset, fields=["label", "caption"], registry=registry))) == N


def test_a_flipped_bit_names_the_shard_and_skip_reports_the_loss(
    dataset: Path, tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(dataset, broken)
    shard = shard_files(broken)[1]
    first = next(iter(rk.iter_records(broken, fields=["caption"])))  # noqa: F841 - the data is readable
    flip_bit(shard, shard.stat().st_size // 2)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=rf"CorruptRecordError: shard {shard.name}, offset \d+"
    ):
        list(rk.load_dataset(broken, fields=["caption"], batch_size=4))
    report = rk.CorruptionReport()
    got = [
        r["caption"].numpy().decode()
        for r in rk.load_dataset(broken, fields=["caption"], on_corrupt="skip", report=report)
    ]
    assert report.shards == [shard.name]
    assert len(got) + report.records_skipped == N
    assert report.records_skipped >= 1
    assert set(got) <= {r["caption"] for r in records}
    with pytest.raises(CorruptRecordError, match="sha256") as err:
        rk.load_dataset(broken, verify_sha256=True)
    assert err.value.shard == shard.name
    assert err.value.context.offset is not None


def test_a_truncated_shard_is_named_before_reading(dataset: Path, tmp_path: Path) -> None:
    broken = tmp_path / "truncated"
    shutil.copytree(dataset, broken)
    shard = shard_files(broken)[0]
    shard.write_bytes(shard.read_bytes()[:-7])
    with pytest.raises(CorruptRecordError, match="truncated") as err:
        rk.load_dataset(broken)
    assert err.value.shard == shard.name
    report = rk.CorruptionReport()
    got = list(rk.load_dataset(broken, fields=["label"], on_corrupt="skip", report=report))
    assert len(got) == N - 1
    assert report.records_skipped == 1


def test_files_without_a_manifest_need_a_schema(dataset: Path) -> None:
    shards = shard_files(dataset)
    with pytest.raises(DatasetError, match="pass schema="):
        rk.load_dataset(shards)
    ds = rk.load_dataset([str(s) for s in shards], fields=["label"], schema=SCHEMA)
    assert len(list(ds)) == N
    pattern = str(dataset / "train-*.tfrecord")
    assert len(list(rk.load_dataset(pattern, fields=["label"], schema=SCHEMA, batch_size=4))) == 3


def test_compressed_datasets_read_and_check(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    write(tmp_path / "gz", records[:5], compression="GZIP")
    got = read_rows(rk.load_dataset(tmp_path / "gz", batch_size=2))
    for record, row in zip(records[:5], got, strict=True):
        assert_record(expected(record), row)


def test_bad_options_are_errors(dataset: Path) -> None:
    with pytest.raises(ValueError, match="on_corrupt"):
        rk.load_dataset(dataset, on_corrupt="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="image_size"):
        rk.load_dataset(dataset, image_size={"nope": (2, 2)})
    with pytest.raises(ValueError, match="pad"):
        rk.load_dataset(dataset, pad=["nope"])


def test_a_field_the_records_lack_reads_as_the_readers_default(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    fields = dict(SCHEMA.fields)
    fields["source"] = rk.FieldSpec(codec="text", default="unknown")
    fields["boxes2"] = rk.FieldSpec(codec="bbox", default=[[0.0, 0.0, 0.5, 0.5]])
    newer = SCHEMA.model_copy(update={"fields": fields})
    wanted = ["label", "source", "boxes2"]
    batch = next(iter(rk.load_dataset(dataset, fields=wanted, schema=newer, batch_size=4)))
    assert list(batch) == wanted
    assert batch["source"].numpy().tolist() == [b"unknown"] * 4
    assert batch["boxes2"].to_list() == [[[0.0, 0.0, 0.5, 0.5]]] * 4
    rows = list(rk.iter_records(dataset, fields=wanted, schema=newer))
    assert [r["source"] for r in rows] == ["unknown"] * N
    assert [r["label"] for r in rows] == [expected(r)["label"] for r in records]
    np.testing.assert_array_equal(rows[0]["boxes2"], [[0.0, 0.0, 0.5, 0.5]])
