"""load_dataset's two pipeline shapes give the same batches: a read whose every field is
decoded record by record (pictures alone) parses record by record, any other read
parses in batches; and the image codec's format keep decodes JPEG and PNG, in one
batch, to the numpy reader's pixels."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _reader_support import record_offsets
from PIL import Image

import recordkit as rk
from recordkit.read._layout import DecodeLayout
from recordkit.read._open import open_dataset
from recordkit.read._options import PipelineOptions
from recordkit.read._record_parse import parses_per_record

#: (height, width) of each record's picture.
SIZES = [(4, 9), (8, 3), (6, 6), (9, 10), (3, 4), (7, 8), (10, 5), (5, 7), (8, 8), (9, 9), (2, 2)]

SCHEMA = rk.Schema(
    name="pipeline-shapes",
    fields={
        "image": rk.FieldSpec(codec="image", options={"format": "png", "channels": 3}),
        "mask": rk.FieldSpec(codec="mask", options={"num_classes": 21}),
        "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
    },
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(30)
    records = [
        {
            "image": rng.integers(0, 256, (height, width, 3), dtype=np.uint8),
            "mask": rng.integers(0, 21, (height, width), dtype=np.uint8),
            "id": i,
        }
        for i, (height, width) in enumerate(SIZES)
    ]
    path = tmp_path_factory.mktemp("shapes") / "data"
    rk.write_dataset(records, SCHEMA, path, shard_records=4, progress=False)
    return path


def batches(dataset: Path, fields: list[str], **options: Any) -> list[dict[str, np.ndarray]]:
    read = rk.load_dataset(dataset, fields=fields, **options)
    return [{key: value.numpy() for key, value in batch.items()} for batch in read]


#: load_dataset's options that are not the pipeline's (they choose the records read).
NOT_PIPELINE = ("start", "num_workers", "worker_index")


def record_by_record(dataset: Path, fields: list[str], **options: Any) -> bool:
    """Whether load_dataset takes the record by record shape for this read."""
    pipeline = PipelineOptions(**{k: v for k, v in options.items() if k not in NOT_PIPELINE})
    return parses_per_record(DecodeLayout.build(open_dataset(dataset, "train", fields), pipeline), pipeline)


@pytest.mark.parametrize(
    "options",
    [
        {"batch_size": 3, "pad": True},
        {"batch_size": 4, "pad": True, "drop_remainder": True},
        {"batch_size": 3, "pad": True, "start": 4},
        {"batch_size": 3, "pad": True, "shuffle_files": True, "shuffle_buffer": 5, "seed": 7},
        {"batch_size": 5, "image_size": (6, 6), "image_fit": "resize"},
        {"batch_size": 5, "image_size": (6, 6), "image_fit": "crop_or_pad", "pad": True},
        {"batch_size": 2, "pad": True, "num_workers": 2, "worker_index": 1},
    ],
)
def test_pictures_read_alone_are_parsed_record_by_record_into_the_batches_a_batched_parse_gives(
    dataset: Path, options: dict[str, Any]
) -> None:
    pictures = ["image", "mask"]
    assert record_by_record(dataset, pictures, **options)
    assert not record_by_record(dataset, [*pictures, "id"], **options)
    alone = batches(dataset, pictures, **options)
    with_id = batches(dataset, [*pictures, "id"], **options)
    assert len(alone) == len(with_id) > 0
    for one, other in zip(alone, with_id, strict=True):
        assert sorted(one) == sorted(key for key in other if key != "id")
        for key, value in one.items():
            assert value.dtype == other[key].dtype, key
            np.testing.assert_array_equal(value, other[key], err_msg=key)


def test_a_flipped_bit_in_pictures_read_alone_names_the_shard_and_offset_or_is_skipped_and_reported(
    dataset: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(dataset, broken)
    shard = sorted(broken.glob("**/*.tfrecord"))[1]  # records 4 to 7
    offsets = record_offsets(shard)
    data = bytearray(shard.read_bytes())
    data[offsets[2] + 30] ^= 0x08  # in the data of the shard's third record
    shard.write_bytes(bytes(data))
    options: dict[str, Any] = {"batch_size": 3, "pad": True}
    assert record_by_record(broken, ["image"], **options)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"CorruptRecordError: shard {shard.name}, offset {offsets[2]}: .*; 2 of 4 records",
    ):
        batches(broken, ["image"], **options)
    report = rk.CorruptionReport()
    read = batches(broken, ["image"], **options, on_corrupt="skip", report=report)
    assert sum(len(batch["image"]) for batch in read) == len(SIZES) - 2
    (skipped,) = report.skipped
    assert (skipped.shard, skipped.offset, skipped.records) == (shard.name, offsets[2], 2)


def test_pictures_not_padded_or_single_records_keep_the_batched_parse(dataset: Path) -> None:
    assert not record_by_record(dataset, ["image"], batch_size=3)  # ragged batches
    assert not record_by_record(dataset, ["image"], pad=True)  # single records
    assert not record_by_record(
        dataset, ["image"], batch_size=3, image_size=(6, 6), image_fit="random_crop_or_pad", seed=1
    )


def encoded(array: np.ndarray, fmt: str, **save: Any) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, fmt, **save)
    return buffer.getvalue()


def test_kept_jpegs_and_pngs_in_one_batch_decode_to_the_numpy_readers_pixels(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    y, x = np.mgrid[0:12, 0:16]
    gradient = np.stack([x * 16, y * 20, (x + y) * 8], -1).astype(np.uint8)
    images = [
        encoded(gradient, "JPEG", quality=80),
        encoded(rng.integers(0, 256, (7, 5, 3), dtype=np.uint8), "PNG"),
        encoded(gradient[:9, :11], "JPEG", quality=95),
        encoded(rng.integers(0, 256, (10, 3, 3), dtype=np.uint8), "PNG", compress_level=9),
    ]
    schema = rk.Schema(name="kept", fields={"image": rk.FieldSpec(codec="image", options={"format": "keep"})})
    path = tmp_path / "kept"
    rk.write_dataset([{"image": data} for data in images], schema, path, progress=False)
    expected = [record["image"] for record in rk.iter_records(path)]
    assert [data[:2] for data in images] == [b"\xff\xd8", b"\x89P", b"\xff\xd8", b"\x89P"]
    for fields in (["image"], None):  # parsed record by record, and the whole record
        (batch,) = rk.load_dataset(path, fields=fields, batch_size=4, pad=True)
        for picture, shape, pixels in zip(batch["image"], batch["image/shape"], expected, strict=True):
            np.testing.assert_array_equal(shape.numpy(), pixels.shape)
            height, width, _ = pixels.shape
            np.testing.assert_array_equal(picture.numpy()[:height, :width], pixels)
    for picture, pixels in zip(rk.load_dataset(path), expected, strict=True):  # single records
        np.testing.assert_array_equal(picture["image"].numpy(), pixels)
