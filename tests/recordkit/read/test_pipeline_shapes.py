"""load_dataset's pipeline shapes give the same batches: a read whose pictures are padded
or fitted parses record by record (pictures and audio decoded there, the other fields'
wire values batched and decoded after ``padded_batch``), any other read parses in
batches, and each gives the values and element spec of the batched parse (the shape
every read took before); and the image codec's format keep decodes JPEG and PNG, in one
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
from recordkit.read import _layout, _traced
from recordkit.read._layout import DecodeLayout
from recordkit.read._open import open_dataset
from recordkit.read._options import PipelineOptions
from recordkit.read._record_parse import parses_per_record
from recordkit.read._traced import UNOPTIMIZED_ATTRIBUTE
from recordkit_codecs.image import ImageCodec

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


@pytest.fixture
def batched_parse(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``read(dataset, fields, **options)``: load_dataset as it reads with no record parsed
    alone (a batch parsed at once, split into records for the pictures and audio, and
    batched again): the shape every read with pictures took before."""

    def read(dataset: Path, fields: list[str], **options: Any) -> Any:
        with monkeypatch.context() as patch:
            patch.setattr(_layout, "_parses_records", lambda *args, **kwargs: False)
            assert not record_by_record(dataset, fields, **options)
            return rk.load_dataset(dataset, fields=fields, **options)

    return read


def assert_same_reads(one: Any, other: Any) -> None:
    """Two reads give the same element spec, and batches of the same keys, dtypes and values."""
    assert one.element_spec == other.element_spec
    first, second = list(one), list(other)
    assert len(first) == len(second) > 0
    for a, b in zip(first, second, strict=True):
        assert sorted(a) == sorted(b)
        left = tf.nest.flatten(a, expand_composites=True)
        right = tf.nest.flatten(b, expand_composites=True)
        assert len(left) == len(right)
        for x, y in zip(left, right, strict=True):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x.numpy(), y.numpy())


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
@pytest.mark.parametrize("fields", [["image", "mask"], ["image", "mask", "id"]], ids=["pictures", "with-id"])
def test_pictures_parsed_record_by_record_give_the_batches_and_element_spec_of_the_batched_parse(
    dataset: Path, options: dict[str, Any], fields: list[str], batched_parse: Any
) -> None:
    """Pictures read alone or with another field (decoded after ``padded_batch`` from its
    batched wire values) give what the batched parse gives."""
    assert record_by_record(dataset, fields, **options)
    assert_same_reads(
        rk.load_dataset(dataset, fields=fields, **options), batched_parse(dataset, fields, **options)
    )


@pytest.mark.parametrize("fields", [["image"], ["image", "id"]])
def test_a_flipped_bit_in_records_parsed_alone_names_the_shard_and_offset_or_is_skipped_and_reported(
    dataset: Path, tmp_path: Path, fields: list[str]
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(dataset, broken)
    shard = sorted(broken.glob("**/*.tfrecord"))[1]  # records 4 to 7
    offsets = record_offsets(shard)
    data = bytearray(shard.read_bytes())
    data[offsets[2] + 30] ^= 0x08  # in the data of the shard's third record
    shard.write_bytes(bytes(data))
    options: dict[str, Any] = {"batch_size": 3, "pad": True}
    assert record_by_record(broken, fields, **options)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"CorruptRecordError: shard {shard.name}, offset {offsets[2]}: .*; 2 of 4 records",
    ):
        batches(broken, fields, **options)
    report = rk.CorruptionReport()
    read = batches(broken, fields, **options, on_corrupt="skip", report=report)
    assert sum(len(batch["image"]) for batch in read) == len(SIZES) - 2
    (skipped,) = report.skipped
    assert (skipped.shard, skipped.offset, skipped.records) == (shard.name, offsets[2], 2)


def parse_ops(read: Any) -> list[str]:
    """The ops of the function of ``read``'s dataset graph that parses the records."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef.FromString(read._as_serialized_graph().numpy())
    (ops,) = [
        ops
        for ops in ([node.op for node in function.node_def] for function in graph.library.function)
        if "ParseExampleV2" in ops
    ]
    return ops


@pytest.mark.parametrize(
    "options",
    [
        {"batch_size": 3, "pad": True},
        {"batch_size": 3, "pad": True, "previous": True},  # batched parse, split into records
        {"batch_size": 5, "image_size": (6, 6), "image_fit": "resize"},
        {"batch_size": 5, "image_size": (6, 6), "image_fit": "crop_or_pad", "pad": True},
        {"pad": True},  # single records
    ],
    ids=["record-parse", "per-record", "resize", "crop", "single"],
)
@pytest.mark.parametrize("fields", [["image"], ["image", "mask", "id"]], ids=["image", "with-mask-and-id"])
def test_a_raster_codec_without_a_record_decode_reads_the_same_batches_through_a_batch_of_one(
    dataset: Path, options: dict[str, Any], fields: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image codec decodes each record's picture from the record's own wire values
    (``Raster.decode_tf_record``); a codec without it (a third party's, or the mask
    codec) is given a batch of one and the record is taken out of it, with the same
    values, dtypes, padding and element spec."""
    options = dict(options)
    if options.pop("previous", False):
        monkeypatch.setattr(_layout, "_parses_records", lambda *args, **kwargs: False)
    own = rk.load_dataset(dataset, fields=fields, **options)
    with monkeypatch.context() as patch:
        patch.setattr(ImageCodec, "decode_tf_record", lambda self, wire: None)
        through_one = rk.load_dataset(dataset, fields=fields, **options)
    assert_same_reads(own, through_one)


def test_pictures_parsed_record_by_record_are_parsed_and_decoded_as_themselves(dataset: Path) -> None:
    """A padded read of pictures parses each record as itself and decodes its picture
    from its own values: no batch of one is made and taken apart (no ExpandDims,
    Squeeze or Reshape), as in the tutorials' per-record pipeline."""
    read = rk.load_dataset(dataset, fields=["image"], batch_size=3, pad=True)
    ops = parse_ops(read)
    assert "DecodePng" in ops
    assert not {"ExpandDims", "Squeeze", "Reshape"} & set(ops)
    with_id = parse_ops(rk.load_dataset(dataset, fields=["image", "id"], batch_size=3, pad=True))
    assert "Squeeze" not in with_id  # the id's parsed value batched as it is


def test_pictures_not_padded_or_single_records_keep_the_batched_parse(dataset: Path) -> None:
    assert not record_by_record(dataset, ["image"], batch_size=3)  # ragged batches
    assert not record_by_record(dataset, ["image"], pad=True)  # single records
    assert not record_by_record(
        dataset, ["image"], batch_size=3, image_size=(6, 6), image_fit="random_crop_or_pad", seed=1
    )


@pytest.mark.parametrize("fields", [["image", "mask"], ["image", "mask", "id"]])
def test_pictures_left_ragged_are_decoded_in_their_batch_with_the_values_of_the_padded_read(
    dataset: Path, fields: list[str]
) -> None:
    """Pictures neither padded nor fitted come ragged ``[B, (H), (W), C]`` from their
    codec's batched decode: the batches are not split into records and batched again
    by ``ragged_batch`` (whose variant decode copies pixels one by one), and each picture
    holds the pixels the padded read gives within its true shape."""
    read = rk.load_dataset(dataset, fields=fields, batch_size=3)
    ops = {node.op for node in graph_nodes(read)}
    assert "UnbatchDataset" not in ops
    assert "PaddedBatchDatasetV2" not in ops
    assert isinstance(read.element_spec["image"], tf.RaggedTensorSpec)
    assert read.element_spec["image"].ragged_rank == 2
    padded = batches(dataset, fields, batch_size=3, pad=True)
    ragged = list(read)
    assert len(ragged) == len(padded) == 4
    for one, other in zip(ragged, padded, strict=True):
        for name in ("image", "mask"):
            for picture, full, shape in zip(one[name], other[name], other[f"{name}/shape"], strict=True):
                height, width = shape[:2]
                np.testing.assert_array_equal(picture.to_tensor().numpy(), full[:height, :width])


def graph_nodes(read: Any) -> list[Any]:
    """The nodes of ``read``'s dataset graph (not of its functions)."""
    from tensorflow.core.framework import graph_pb2

    return list(graph_pb2.GraphDef.FromString(read._as_serialized_graph().numpy()).node)


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


def maps_after_padded_batch(read: Any) -> list[str]:
    """The dataset ops of ``read``'s graph that take the ``padded_batch`` as their input
    (the step after it: the channel check, or the ragged values rebuilt)."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef.FromString(read._as_serialized_graph().numpy())
    (padded,) = [node.name for node in graph.node if node.op == "PaddedBatchDatasetV2"]
    return [node.op for node in graph.node if node.input and node.input[0].split(":")[0] == padded]


#: Gray and colour pictures, stored as JPEG (the benchmark's ``format: keep`` field holds
#: JPEGs) and PNG.
MIXED_PICTURES = [(9, 7, 3), (6, 11, 1), (12, 5, 3), (8, 8, 1), (10, 6, 3)]


def write_pictures(path: Path, options: dict[str, Any]) -> list[np.ndarray]:
    """Write :data:`MIXED_PICTURES` (JPEG and PNG bytes in turn) as an image field with
    ``options`` and a scalar; the pixels the numpy reader gives back."""
    rng = np.random.default_rng(31)
    records = []
    for i, (height, width, depth) in enumerate(MIXED_PICTURES):
        pixels = rng.integers(0, 256, (height, width, depth), dtype=np.uint8)
        fmt = "JPEG" if i % 2 == 0 else "PNG"
        records.append({"image": encoded(pixels if depth == 3 else pixels[..., 0], fmt), "id": i})
    schema = rk.Schema(
        name="channels",
        fields={
            "image": rk.FieldSpec(codec="image", options=options),
            "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
        },
    )
    rk.write_dataset(records, schema, path, progress=False)
    return [record["image"] for record in rk.iter_records(path)]


@pytest.mark.parametrize("fields", [["image"], ["image", "id"]])  # the id decoded after padded_batch
@pytest.mark.parametrize("options", [{"format": "keep", "channels": 3}, {"format": "png", "channels": 1}])
def test_a_padded_read_of_a_field_whose_channels_option_fixes_the_count_adds_no_step_after_padded_batch(
    tmp_path: Path, fields: list[str], options: dict[str, Any]
) -> None:
    """The codec's ``channels`` option gives the decoded pictures a static channel count,
    so no check that a batch holds one count is added after ``padded_batch`` (a map whose
    function every iterator instantiates); gray and colour inputs were converted when
    written and read back as the numpy reader gives them."""
    expected = write_pictures(tmp_path / "data", options)
    assert record_by_record(tmp_path / "data", fields, batch_size=5, pad=True)
    read = rk.load_dataset(tmp_path / "data", fields=fields, batch_size=5, pad=True)
    assert read.element_spec["image"].shape.as_list() == [None, None, None, options["channels"]]
    # The id's batched decode, if any, and no channel check.
    assert maps_after_padded_batch(read) == [
        "PrefetchDataset" if fields == ["image"] else "ParallelMapDatasetV2"
    ]
    assert b"different channel counts" not in read._as_serialized_graph().numpy()
    (batch,) = read
    for picture, pixels in zip(batch["image"].numpy(), expected, strict=True):
        assert pixels.shape[2] == options["channels"]
        np.testing.assert_array_equal(picture[: pixels.shape[0], : pixels.shape[1]], pixels)


@pytest.mark.parametrize("fields", [["image"], ["image", "id"]])
@pytest.mark.parametrize("options", [{"format": "keep"}, {"format": "jpeg"}])
def test_a_padded_read_of_a_field_without_a_channels_option_checks_each_batch_and_refuses_mixed_counts(
    tmp_path: Path, fields: list[str], options: dict[str, Any]
) -> None:
    """Without a ``channels`` option (the benchmark's ``format: keep``; a JPEG may be gray
    or colour too) the channel count is known only per picture: a map after
    ``padded_batch`` checks that each batch holds one count, and a batch of gray and
    colour pictures is refused, naming the field and the option; batches of one count
    read as written."""
    expected = write_pictures(tmp_path / "data", options)
    assert record_by_record(tmp_path / "data", fields, batch_size=2, pad=True)
    read = rk.load_dataset(tmp_path / "data", fields=fields, batch_size=2, pad=True)
    assert read.element_spec["image"].shape.as_list() == [None, None, None, None]
    assert maps_after_padded_batch(read) == ["ParallelMapDatasetV2"]
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"image.*different channel counts.*channels option"
    ):
        list(read)
    alone = rk.load_dataset(tmp_path / "data", fields=fields, batch_size=1, pad=True)
    for batch, pixels in zip(alone, expected, strict=True):
        np.testing.assert_array_equal(batch["image"].numpy()[0], pixels)


def write_lying_records(path: Path, lie: tuple[int, int, int]) -> None:
    """Three records of a 6 x 5 RGB PNG and an id; the second stores ``lie`` as its
    height, width and channels (a damaged or foreign record)."""
    png = encoded(np.full((6, 5, 3), 90, np.uint8), "PNG")
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i, (height, width, channels) in enumerate([(6, 5, 3), lie, (6, 5, 3)]):
            feature = {
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png])),
                "image/height": tf.train.Feature(int64_list=tf.train.Int64List(value=[height])),
                "image/width": tf.train.Feature(int64_list=tf.train.Int64List(value=[width])),
                "image/channels": tf.train.Feature(int64_list=tf.train.Int64List(value=[channels])),
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


@pytest.mark.parametrize(
    "lie", [(6, 4, 3), (7, 5, 3), (5, 6, 3), (6, 5, 1)], ids=["width", "height", "swapped", "channels"]
)
@pytest.mark.parametrize(
    ("fields", "options"),
    [
        (["image"], {"batch_size": 3, "pad": True}),  # parsed record by record
        (["image", "id"], {"batch_size": 3, "pad": True}),  # the id decoded after padded_batch
        (["image", "id"], {"batch_size": 3, "pad": True, "previous": True}),  # batched parse, split
        (["image", "id"], {"batch_size": 3}),  # ragged: decoded in the batch
        (["image"], {}),  # single records
    ],
    ids=["record-parse", "record-parse-and-batch", "per-record", "ragged", "single"],
)
def test_a_picture_whose_stored_shape_disagrees_with_its_decode_stops_every_pipeline_shape(
    tmp_path: Path,
    lie: tuple[int, int, int],
    fields: list[str],
    options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The decoded shape is checked against the stored height, width and channels in
    each pipeline shape, with the codec's message; the records that agree read."""
    schema = rk.Schema(
        name="lying",
        fields={
            "image": rk.FieldSpec(codec="image", options={"format": "png", "channels": 3}),
            "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
        },
    )
    options = dict(options)
    if options.pop("previous", False):  # the shape that parses a batch at once and splits it
        monkeypatch.setattr(_layout, "_parses_records", lambda *args, **kwargs: False)
    path = tmp_path / "lying.tfrecord"
    write_lying_records(path, lie)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"image codec: the decoded image shape \[height, width, channels\] differs from the height, "
        r"width and channels stored with it",
    ):
        list(rk.load_dataset(path, fields=fields, schema=schema, **options))
    write_lying_records(path, (6, 5, 3))
    assert len(list(rk.load_dataset(path, fields=fields, schema=schema, **options))) == (1 if options else 3)


@pytest.fixture(scope="module")
def photos_and_sound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """JPEG photos of 40 to 130 px (large enough to decode at a reduced scale), audio of
    varying length (decoded record by record) and an id."""
    rng = np.random.default_rng(31)
    schema = rk.Schema(
        name="photos-and-sound",
        fields={
            "image": rk.FieldSpec(codec="image", options={"format": "jpeg", "channels": 3}),
            "audio": rk.FieldSpec(codec="audio", options={"sample_rate": 8000}),
            "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
        },
    )
    records = [
        {
            "image": rng.integers(0, 256, (*(int(s) for s in rng.integers(40, 131, 2)), 3), dtype=np.uint8),
            "audio": rng.integers(-3000, 3000, int(rng.integers(800, 2001)), dtype=np.int16),
            "id": i,
        }
        for i in range(9)
    ]
    path = tmp_path_factory.mktemp("photos") / "data"
    rk.write_dataset(records, schema, path, shard_records=4, progress=False)
    return path


@pytest.mark.parametrize(
    "options",
    [
        {"batch_size": 4, "pad": True},
        {"batch_size": 4, "pad": True, "image_size": (16, 12), "image_fit": "resize"},
        {"batch_size": 4, "pad": True, "image_size": (16, 12), "image_fit": "resize_with_pad"},
        {"batch_size": 4, "pad": True, "image_size": (50, 60), "image_fit": "crop_or_pad"},
    ],
)
@pytest.mark.parametrize("fields", [["image", "audio"], ["image", "audio", "id"]], ids=["alone", "with-id"])
def test_photos_and_audio_parsed_record_by_record_as_batches_of_one_equal_the_batched_parse(
    photos_and_sound: Path, options: dict[str, Any], fields: list[str], batched_parse: Any
) -> None:
    """Each record parsed as a batch of one (the record by record shape) gives the values,
    shapes and crop offsets of the batched parse: whole decodes, scaled decodes, windows."""
    assert record_by_record(photos_and_sound, fields, **options)
    read = rk.load_dataset(photos_and_sound, fields=fields, **options)
    assert [len(b["image"]) for b in read] == [4, 4, 1]
    assert_same_reads(read, batched_parse(photos_and_sound, fields, **options))


def test_audio_read_without_pictures_keeps_the_batched_decode(photos_and_sound: Path) -> None:
    """Audio alone is decoded a batch at a time (no picture asks for records parsed
    alone): per record it cost about twice the CPU a record in the benchmark's workload."""
    assert not record_by_record(photos_and_sound, ["audio"], batch_size=4, pad=True)
    assert not record_by_record(photos_and_sound, ["audio", "id"], batch_size=4, pad=True)


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The benchmark's five kinds of field: JPEG photos (gray and colour kept as they
    are), audio, a caption, packed boxes with labels (none in some records) and a label."""
    rng = np.random.default_rng(37)
    schema = rk.Schema(
        name="every-kind",
        fields={
            "image": rk.FieldSpec(codec="image", options={"format": "keep", "channels": 3}),
            "audio": rk.FieldSpec(codec="audio", options={"sample_rate": 8000}),
            "caption": rk.FieldSpec(codec="text"),
            "boxes": rk.FieldSpec(codec="bbox", options={"labels": ["cat", "dog", "bird"]}),
            "label": rk.FieldSpec(codec="label", options={"num_classes": 5}),
        },
    )
    records = []
    for i in range(11):
        count = int(rng.integers(0, 4)) if i % 4 else 0
        corners = np.sort(rng.random((count, 2, 2)), axis=1).reshape(count, 4).astype(np.float32)
        records.append(
            {
                "image": encoded(
                    rng.integers(
                        0, 256, (int(rng.integers(20, 60)), int(rng.integers(20, 60)), 3), dtype=np.uint8
                    ),
                    "JPEG",
                ),
                "audio": rng.integers(-3000, 3000, int(rng.integers(400, 1200)), dtype=np.int16),
                "caption": " ".join(["word"] * int(rng.integers(1, 6))),
                "boxes": {"boxes": corners, "labels": rng.integers(0, 3, count)},
                "label": int(rng.integers(0, 5)),
            }
        )
    path = tmp_path_factory.mktemp("kinds") / "data"
    rk.write_dataset(records, schema, path, shard_records=4, progress=False)
    return path


PADDED_BATCH_OPTIONS = [
    {"batch_size": 4, "pad": True},
    {"batch_size": 4, "pad": True, "drop_remainder": True},
    {"batch_size": 4, "pad": ["image", "audio"]},
    {"batch_size": 4, "pad": ["image"]},
    {"batch_size": 3, "pad": True, "start": 2},
    {"batch_size": 4, "pad": True, "shuffle_files": True, "shuffle_buffer": 5, "seed": 3},
    {"batch_size": 4, "pad": True, "image_size": (24, 32), "image_fit": "resize"},
    {"batch_size": 4, "image_size": (24, 32), "image_fit": "resize_with_pad"},
    {"batch_size": 4, "pad": True, "image_size": (24, 32), "image_fit": "crop_or_pad"},
    {"batch_size": 4, "image_size": (24, 32), "image_fit": "crop_or_pad"},
    {"batch_size": 2, "pad": True, "num_workers": 2, "worker_index": 1},
]
PADDED_BATCH_FIELDS = {
    "all-five": ["image", "audio", "caption", "boxes", "label"],
    "image-label": ["image", "label"],
    "image-boxes-caption": ["image", "boxes", "caption"],
}


@pytest.mark.parametrize(
    ("fields", "options"),
    [
        pytest.param(fields, options, id=f"{name}-{index}")
        for name, fields in PADDED_BATCH_FIELDS.items()
        for index, options in enumerate(PADDED_BATCH_OPTIONS)
        # A pad list naming a field not read is refused; without the sound, the list of
        # the picture and the sound would be the next case, the picture alone.
        if "audio" in fields or not isinstance(options.get("pad"), list) or "audio" not in options["pad"]
    ],
)
def test_fields_decoded_after_padded_batch_give_the_values_and_element_spec_of_the_batched_parse(
    every_kind: Path, options: dict[str, Any], fields: list[str], batched_parse: Any
) -> None:
    """With pictures parsed record by record, the caption, boxes and label travel as
    their wire values through ``padded_batch`` and are decoded after it, batched: the
    same values, dtypes, padding, shapes and element spec as the batched parse, for
    every pad and fit option."""
    assert record_by_record(every_kind, fields, **options)
    read = rk.load_dataset(every_kind, fields=fields, **options)
    assert_same_reads(read, batched_parse(every_kind, fields, **options))
    ops = [node.op for node in graph_nodes(read)]
    assert "UnbatchDataset" not in ops
    assert ops.count("ParallelMapDatasetV2") == 2  # each record's parse, then the batch's decode


def map_functions(read: Any) -> list[Any]:
    """The functions of ``read``'s parallel maps, from its serialized graph."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef.FromString(read._as_serialized_graph().numpy())
    library = {function.signature.name: function for function in graph.library.function}
    names = [node.attr["f"].func.name for node in graph.node if node.op == "ParallelMapDatasetV2"]
    return [library[name] for name in names]


@pytest.mark.parametrize(
    ("fields", "options"),
    [
        (["image", "mask", "id"], {"batch_size": 3, "pad": True}),  # parsed record by record
        (
            ["image", "id"],
            {"batch_size": 3, "pad": True, "image_size": (6, 6), "image_fit": "random_crop_or_pad"},
        ),
        (["id"], {"batch_size": 3}),  # batched
    ],
    ids=["record-parse", "per-record", "batched"],
)
def test_the_pipelines_maps_are_marked_to_run_on_one_device_without_grappler(
    dataset: Path, fields: list[str], options: dict[str, Any]
) -> None:
    """Every map of the read carries the attribute that keeps TensorFlow from optimizing
    its function again at each iterator (a TensorFlow whose internals change fails here)."""
    functions = map_functions(rk.load_dataset(dataset, fields=fields, **options))
    assert functions
    for function in functions:
        assert function.attr[UNOPTIMIZED_ATTRIBUTE].b, function.signature.name


def _internals_missing() -> Any:
    raise AttributeError("module 'map_op' has no attribute '_ParallelMapDataset'")


def _internals_changed() -> Any:
    def build(*args: Any) -> Any:
        raise TypeError("ParallelMapDatasetV2() got an unexpected keyword argument")

    return build


#: The ways a TensorFlow can lack what the marked map needs, each set on ``_traced``.
_WITHOUT_THE_MARKED_MAP = {
    "internals missing": ("_map_without_grappler", _internals_missing),
    "internals changed": ("_map_without_grappler", _internals_changed),
    "a release it was not tested with": ("MARKED_MAP_RELEASES", ("1.0.",)),
}


@pytest.mark.parametrize("way", sorted(_WITHOUT_THE_MARKED_MAP))
def test_a_tensorflow_without_what_the_marked_map_needs_gets_the_plain_map_and_the_same_batches(
    dataset: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    options: dict[str, Any] = {"batch_size": 3, "pad": True}
    fields = ["image", "mask", "id"]
    marked = rk.load_dataset(dataset, fields=fields, **options)
    monkeypatch.setattr(_traced, *_WITHOUT_THE_MARKED_MAP[way])
    plain = rk.load_dataset(dataset, fields=fields, **options)
    assert not any(function.attr[UNOPTIMIZED_ATTRIBUTE].b for function in map_functions(plain))
    assert_same_reads(marked, plain)


def test_a_map_that_computes_int32_values_keeps_the_plain_map_and_reads() -> None:
    """TensorFlow cannot start an iterator of a function run on one device that computes
    an ``int32`` output beside others: such a map is left to Grappler as before."""
    batches = tf.data.Dataset.range(6).batch(2)
    mapped = _traced.parallel_map(
        batches, lambda x: (tf.cast(x, tf.int32), tf.cast(x, tf.float32)), deterministic=True
    )
    assert not any(function.attr[UNOPTIMIZED_ATTRIBUTE].b for function in map_functions(mapped))
    assert [first.numpy().tolist() for first, _ in mapped] == [[0, 1], [2, 3], [4, 5]]
    marked = _traced.parallel_map(batches, lambda x: (x * 2, tf.cast(x, tf.float32)), deterministic=True)
    assert all(function.attr[UNOPTIMIZED_ATTRIBUTE].b for function in map_functions(marked))
    assert [first.numpy().tolist() for first, _ in marked] == [[0, 2], [4, 6], [8, 10]]
