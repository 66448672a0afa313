"""TFRecords recordkit did not write: schemas with key mappings, and infer_schema.

The files here are written the tutorials' way, with tf.train.Example and
tf.io.TFRecordWriter.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from click.testing import CliRunner
from PIL import Image

import recordkit as rk
from recordkit.cli import main as cli_main
from recordkit.errors import SchemaError
from recordkit.storage import location
from recordkit.testing import assert_values_equal

COORDS = ("xmin", "ymin", "xmax", "ymax")


def _bytes(*values: bytes) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(values)))


def _ints(*values: int) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _floats(values: Any) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def write_examples(path: Path, examples: list[dict[str, tf.train.Feature]]) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for features in examples:
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())


@pytest.fixture(scope="module")
def detection(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """The object detection API's layout: image/encoded with image/height, image/width
    and each box coordinate in its own float list."""
    rng = np.random.default_rng(4)
    path = tmp_path_factory.mktemp("od") / "train.tfrecord"
    originals, examples = [], []
    for i in range(5):
        height, width = 6 + i, 9
        pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, format="JPEG", quality=90)
        n = i % 3
        xy = rng.uniform(0.0, 0.5, (n, 2))
        boxes = np.concatenate([xy, xy + 0.4], axis=1).astype(np.float32)
        labels = [1 + (j % 2) for j in range(n)]
        examples.append(
            {
                "image/encoded": _bytes(out.getvalue()),
                "image/format": _bytes(b"jpeg"),
                "image/height": _ints(height),
                "image/width": _ints(width),
                "image/filename": _bytes(f"{i:03d}.jpg".encode()),
                **{f"image/object/bbox/{c}": _floats(boxes[:, k]) for k, c in enumerate(COORDS)},
                "image/object/class/label": _ints(*labels),
                "image/object/class/text": _bytes(*[[b"", b"cat", b"dog"][label] for label in labels]),
            }
        )
        decoded = np.asarray(Image.open(io.BytesIO(out.getvalue())).convert("RGB"))
        originals.append({"image": decoded, "boxes": boxes, "labels": labels, "filename": f"{i:03d}.jpg"})
    write_examples(path, examples)
    return path, originals


DETECTION = rk.Schema(
    name="detection",
    fields={
        "image": rk.FieldSpec(
            codec="image",
            options={"format": "jpeg", "channels": 3},
            keys={"": "image/encoded", "height": "image/height", "width": "image/width", "channels": 3},
        ),
        "objects": rk.FieldSpec(
            codec="bbox",
            options={"labels": ["background", "cat", "dog"]},
            keys={"": [f"image/object/bbox/{c}" for c in COORDS], "labels": "image/object/class/label"},
        ),
        "filename": rk.FieldSpec(codec="text", keys={"": "image/filename"}),
    },
)


@pytest.fixture(scope="module")
def segmentation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """The segmentation tutorial's layout: raw uint8 image_raw and mask_raw with
    height, width and depth as int64."""
    rng = np.random.default_rng(5)
    path = tmp_path_factory.mktemp("voc") / "voc.tfrecord"
    originals, examples = [], []
    for i in range(4):
        height, width = 4 + i, 7 - i
        image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        mask = rng.integers(0, 21, (height, width), dtype=np.uint8)
        mask[0, 0] = 255  # VOC's void border
        examples.append(
            {
                "height": _ints(height),
                "width": _ints(width),
                "depth": _ints(3),
                "image_raw": _bytes(image.tobytes()),
                "mask_raw": _bytes(mask.tobytes()),
            }
        )
        originals.append({"image": image, "mask": mask})
    write_examples(path, examples)
    return path, originals


SEGMENTATION = rk.Schema(
    name="segmentation",
    fields={
        "image": rk.FieldSpec(
            codec="tensor",
            options={"dtype": "uint8", "shape": [None, None, 3]},
            keys={"": "image_raw", "shape": ["height", "width", "depth"]},
        ),
        "mask": rk.FieldSpec(
            codec="tensor",
            options={"dtype": "uint8", "shape": [None, None]},
            keys={"": "mask_raw", "shape": ["height", "width"]},
        ),
    },
)


VOC_YAML = """\
# The Pascal VOC segmentation tutorial's TFRecords: no depth key, the 3 is implied.
name: voc
fields:
  image:
    codec: tensor
    options: {dtype: uint8, shape: [null, null, 3]}
    keys: {"": image_raw, shape: [height, width, 3]}
  mask:
    codec: tensor
    options: {dtype: uint8, shape: [null, null]}
    keys: {"": mask_raw, shape: [height, width]}
"""


@pytest.fixture(scope="module")
def voc_tutorial(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Path, list[tuple[np.ndarray, np.ndarray]]]:
    """The Pascal VOC segmentation tutorial's file, written the way it writes it: JPEG
    photos and palette PNG masks read with ``np.array(Image.open(...))``, then height,
    width, ``image.tobytes()`` and ``mask.tobytes()``, and no depth. Returns the file,
    the schema file that reads it, and the original arrays."""

    def _bytes_feature(value: bytes) -> tf.train.Feature:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    def _int64_feature(value: int) -> tf.train.Feature:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    root = tmp_path_factory.mktemp("voc_tutorial")
    rng = np.random.default_rng(21)
    palette = [int(v) for v in rng.integers(0, 256, 256 * 3)]
    originals = []
    path = root / "voc_train.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(5):
            shape = (9 + 2 * i, 14 - i)
            Image.fromarray(rng.integers(0, 256, (*shape, 3), dtype=np.uint8)).save(root / f"{i}.jpg")
            classes = rng.integers(0, 21, shape, dtype=np.uint8)
            classes[0, :] = 255  # the void border
            annotation = Image.fromarray(classes, mode="P")
            annotation.putpalette(palette)
            annotation.save(root / f"{i}.png")

            img = np.array(Image.open(root / f"{i}.jpg"))
            mask = np.array(Image.open(root / f"{i}.png"))
            height, width = img.shape[0], img.shape[1]
            feature = {
                "height": _int64_feature(height),
                "width": _int64_feature(width),
                "image_raw": _bytes_feature(img.tobytes()),
                "mask_raw": _bytes_feature(mask.tobytes()),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
            originals.append((img, mask))
    schema_file = root / "voc.yaml"
    schema_file.write_text(VOC_YAML, encoding="utf-8")
    return path, schema_file, originals


def check_voc(images: list[Any], masks: list[Any], originals: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Pixel-equal to the tutorial's arrays, in order."""
    assert len(images) == len(masks) == len(originals)
    for i, (image, mask) in enumerate(originals):
        assert_values_equal(image, np.asarray(images[i]), path=f"image[{i}]")
        assert_values_equal(mask, np.asarray(masks[i]), path=f"mask[{i}]")
        assert np.asarray(images[i]).dtype == np.uint8


def rows_of(batches: list[dict[str, Any]], field: str) -> list[Any]:
    """Each record's value of ``field`` from batches of ragged or dense tensors."""
    return [
        row.to_tensor().numpy() if isinstance(row, tf.RaggedTensor) else row.numpy()
        for batch in batches
        for row in batch[field]
    ]


def check_detection(rows: list[dict[str, Any]], originals: list[dict[str, Any]]) -> None:
    assert len(rows) == len(originals)
    for row, original in zip(rows, originals, strict=True):
        assert_values_equal(original["image"], row["image"], path="image")
        assert_values_equal(original["boxes"], row["objects"]["boxes"], atol=1e-6, path="boxes")
        assert_values_equal(original["labels"], row["objects"]["labels"], path="labels")
        assert_values_equal(original["filename"], row["filename"], path="filename")


def unbatch(ds: Any) -> list[dict[str, Any]]:
    return [
        {k: tf.nest.map_structure(lambda t, i=i: t[i], v) for k, v in batch.items()}
        for batch in ds
        for i in range(int(batch["filename"].shape[0]))
    ]


def test_the_detection_layout_reads_through_a_key_mapping(
    detection: tuple[Path, list[dict[str, Any]]],
) -> None:
    path, originals = detection
    spec = rk.feature_spec(DETECTION)
    assert "image/object/bbox/xmin" in spec
    assert "objects" not in spec
    assert "image/channels" not in spec
    check_detection(unbatch(rk.load_dataset(path, schema=DETECTION, batch_size=2)), originals)
    check_detection(list(rk.iter_records(path, schema=DETECTION)), originals)
    parsed = tf.data.TFRecordDataset(str(path)).batch(3).map(rk.make_parser(DETECTION))
    check_detection(unbatch(parsed), originals)


def test_the_segmentation_layout_reads_through_a_key_mapping(
    segmentation: tuple[Path, list[dict[str, Any]]],
) -> None:
    path, originals = segmentation
    assert set(rk.feature_spec(SEGMENTATION)) == {"image_raw", "mask_raw", "height", "width", "depth"}
    for rows in (
        list(rk.load_dataset(path, schema=SEGMENTATION)),
        list(rk.iter_records(path, schema=SEGMENTATION)),
    ):
        assert len(rows) == len(originals)
        for row, original in zip(rows, originals, strict=True):
            assert_values_equal(original["image"], row["image"])
            assert_values_equal(original["mask"], row["mask"])
    # then crop or pad to one size, and shuffled batches, as the tutorial does by hand
    ds = rk.load_dataset(
        path,
        schema=SEGMENTATION,
        batch_size=2,
        shuffle_buffer=4,
        seed=0,
        image_size={"image": (5, 5), "mask": (5, 5)},
        image_fit="crop_or_pad",
    )
    batches = list(ds)
    assert [b["image"].shape for b in batches] == [(2, 5, 5, 3)] * 2
    assert [b["mask"].shape for b in batches] == [(2, 5, 5)] * 2


def test_the_voc_tutorial_layout_reads_through_a_schema_file(
    voc_tutorial: tuple[Path, Path, list[tuple[np.ndarray, np.ndarray]]], tmp_path: Path
) -> None:
    """The tutorial's own file, with no depth key, through the schema file's constant
    (``shape: [height, width, 3]``) in load_dataset, make_parser, iter_records and the
    module ``recordkit codegen`` writes."""
    path, schema_file, originals = voc_tutorial
    schema = rk.Schema.load(schema_file)
    assert set(rk.feature_spec(schema)) == {"image_raw", "mask_raw", "height", "width"}

    rows = list(rk.load_dataset(path, schema=schema))
    check_voc([r["image"] for r in rows], [r["mask"] for r in rows], originals)
    batches = list(rk.load_dataset(path, schema=schema, batch_size=2))
    assert batches[0]["image"].shape.as_list() == [2, None, None, 3]
    check_voc(rows_of(batches, "image"), rows_of(batches, "mask"), originals)
    parsed = list(tf.data.TFRecordDataset(str(path)).batch(3).map(rk.make_parser(schema)))
    check_voc(rows_of(parsed, "image"), rows_of(parsed, "mask"), originals)
    records = list(rk.iter_records(path, schema=schema))
    check_voc([r["image"] for r in records], [r["mask"] for r in records], originals)

    module_file = tmp_path / "voc_parser.py"
    result = CliRunner().invoke(cli_main, ["codegen", str(schema_file), "-o", str(module_file)])
    assert result.exit_code == 0, result.output
    spec = importlib.util.spec_from_file_location("voc_parser", module_file)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    generated = list(module.dataset([str(path)], 2))
    check_voc(rows_of(generated, "image"), rows_of(generated, "mask"), originals)
    # the tutorial's crop-or-pad and shuffled batches, on top
    fitted = rk.load_dataset(
        path,
        schema=schema,
        batch_size=2,
        shuffle_buffer=5,
        seed=0,
        image_size={"image": (8, 8), "mask": (8, 8)},
        image_fit="crop_or_pad",
    )
    assert [b["image"].shape for b in fitted] == [(2, 8, 8, 3), (2, 8, 8, 3), (1, 8, 8, 3)]


def test_generated_code_reads_foreign_layouts(
    detection: tuple[Path, list[dict[str, Any]]], segmentation: tuple[Path, list[dict[str, Any]]]
) -> None:
    for schema, (path, _) in ((DETECTION, detection), (SEGMENTATION, segmentation)):
        namespace: dict[str, Any] = {}
        exec(compile(rk.generate_parser_code(schema), "<generated>", "exec"), namespace)
        want = next(iter(tf.data.TFRecordDataset(str(path)).batch(4).map(rk.make_parser(schema))))
        got = next(iter(namespace["dataset"]([str(path)], 4)))
        assert_values_equal(want, got)


def test_infer_schema_proposes_the_detection_layout(detection: tuple[Path, list[dict[str, Any]]]) -> None:
    path, originals = detection
    schema = rk.infer_schema(path)
    assert schema.fields["objects"].codec == "bbox"
    assert schema.fields["objects"].keys[""] == [f"image/object/bbox/{c}" for c in COORDS]
    assert schema.fields["objects"].options["labels"] == ["class_0", "cat", "dog"]
    assert schema.fields["image"].codec == "image"
    assert schema.fields["image"].keys["channels"] == 3
    assert schema.fields["filename"].codec == "text"
    check_detection(list(rk.iter_records(path, schema=schema)), originals)


def test_infer_schema_proposes_the_segmentation_layout(
    segmentation: tuple[Path, list[dict[str, Any]]],
) -> None:
    path, originals = segmentation
    schema = rk.infer_schema(path, name="voc")
    assert schema.name == "voc"
    assert schema.fields["image"].keys == {"": "image_raw", "shape": ["height", "width", "depth"]}
    assert schema.fields["mask"].keys == {"": "mask_raw", "shape": ["height", "width"]}
    assert schema.fields["mask"].options == {"dtype": "uint8", "shape": [None, None]}
    rows = list(rk.iter_records(path, schema=schema))
    for row, original in zip(rows, originals, strict=True):
        assert_values_equal(original["mask"], row["mask"])
    # a proposal round-trips through a schema file
    assert rk.Schema.loads(schema.dumps()) == schema


def test_infer_schema_proposes_the_channels_of_the_voc_tutorial_layout(
    voc_tutorial: tuple[Path, Path, list[tuple[np.ndarray, np.ndarray]]],
) -> None:
    """The tutorial stores no depth: image_raw holds height x width x 3 bytes in every
    record, so the proposal reads its shape as ``[height, width, 3]``."""
    path, _, originals = voc_tutorial
    schema = rk.infer_schema(path, name="voc")
    assert list(schema.fields) == ["image", "mask"]
    assert schema.fields["image"].keys == {"": "image_raw", "shape": ["height", "width", 3]}
    assert schema.fields["image"].options == {"dtype": "uint8", "shape": [None, None, 3]}
    assert "3 channels that no key stores" in schema.fields["image"].description
    assert schema.fields["mask"].keys == {"": "mask_raw", "shape": ["height", "width"]}
    assert "Keys left out" not in schema.description
    rows = list(rk.iter_records(path, schema=schema))
    assert len(rows) == len(originals)
    for row, (image, mask) in zip(rows, originals, strict=True):
        assert_values_equal(image, row["image"])
        assert_values_equal(mask, row["mask"])
    # the proposal, with its constant, round-trips through a schema file
    again = rk.Schema.loads(schema.dumps())
    assert again == schema
    assert again.fingerprint() == rk.Schema.loads(VOC_YAML).fingerprint()


def test_infer_schema_names_raw_pixels_of_no_one_channel_count(tmp_path: Path) -> None:
    """Bytes that are not the same whole multiple of height x width in every record
    give no shape: the mask is proposed, and the notes say what was seen."""
    path = tmp_path / "voc.tfrecord"
    rng = np.random.default_rng(8)
    masks = [rng.integers(0, 21, (3 + i, 5), dtype=np.uint8) for i in range(3)]
    write_examples(
        path,
        [
            {
                "height": _ints(3 + i),
                "width": _ints(5),
                "image_raw": _bytes(rng.integers(0, 256, (3 + i, 5, 3 + i % 2), dtype=np.uint8).tobytes()),
                "mask_raw": _bytes(mask.tobytes()),
            }
            for i, mask in enumerate(masks)
        ],
    )
    schema = rk.infer_schema(path)
    assert list(schema.fields) == ["mask"]
    assert "image_raw: raw bytes beside height and width, but not the same whole number" in schema.description
    assert "45 bytes for 15, 80 bytes for 20" in schema.description
    for mask, row in zip(masks, rk.iter_records(path, schema=schema), strict=True):
        assert_values_equal(mask, row["mask"])


def test_infer_schema_on_plain_keys(tmp_path: Path) -> None:
    path = tmp_path / "plain.tfrecord"
    write_examples(
        path,
        [
            {
                "label": _ints(i % 3),
                "score": _floats([0.5 * i]),
                "tokens": _ints(*range(i)),
                "text": _bytes(f"t{i}".encode()),
                **({"extra": _bytes(b"x")} if i % 2 else {}),
            }
            for i in range(6)
        ],
    )
    schema = rk.infer_schema(path)
    assert schema.fields["label"].codec == "label"
    assert schema.fields["label"].options == {"num_classes": 3}
    assert schema.fields["score"].options == {"dtype": "float32"}
    assert schema.fields["tokens"].sequence
    assert schema.fields["extra"].sequence
    rows = list(rk.iter_records(path, schema=schema))
    assert [r["tokens"] for r in rows] == [list(range(i)) for i in range(6)]
    assert [r["extra"] for r in rows] == [["x"] if i % 2 else [] for i in range(6)]


def test_a_foreign_layout_is_written_with_its_shared_keys_once_and_read_back(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    records = [
        {
            "image": rng.integers(0, 256, (4 + i, 5, 3), dtype=np.uint8),
            "mask": np.full((4 + i, 5), i, np.uint8),
        }
        for i in range(3)
    ]
    rk.write_dataset(records, SEGMENTATION, tmp_path / "out", progress=False)
    shard = next((tmp_path / "out").glob("train-*.tfrecord"))
    keys = sorted(
        tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(str(shard)))).numpy()).features.feature
    )
    assert keys == ["depth", "height", "image_raw", "mask_raw", "width"]
    back = list(rk.iter_records(tmp_path / "out"))
    for record, read in zip(records, back, strict=True):
        np.testing.assert_array_equal(read["image"], record["image"])
        np.testing.assert_array_equal(read["mask"], record["mask"])


def test_bad_key_mappings_are_named() -> None:
    def bind(**spec: Any) -> None:
        rk.Schema(name="s", fields={"f": rk.FieldSpec(**spec)}).bind()

    with pytest.raises(SchemaError, match="does not end in 3") as err:
        bind(codec="bbox", keys={"": ["a", "b", "c"]})
    assert err.value.field == "f"
    with pytest.raises(SchemaError, match="constant needs a numeric"):
        bind(codec="text", keys={"": 3})
    with pytest.raises(SchemaError, match="sequence"):
        bind(codec="bbox", sequence=True, keys={"": ["a", "b", "c", "d"]})
    with pytest.raises(SchemaError, match="every wire feature a constant"):
        bind(codec="scalar", keys={"": 1})
    with pytest.raises(ValueError, match="at least one key"):
        rk.FieldSpec(codec="bbox", keys={"": []})
    # a number among column keys: only for numeric features of fixed shape, beside a key
    raw = {"codec": "tensor", "options": {"dtype": "uint8", "shape": [None, None, 3]}}
    with pytest.raises(SchemaError, match=r"keys\[''\]\[1\]: a constant needs a numeric wire feature") as err:
        bind(**raw, keys={"": ["image_raw", 3]})  # the pixels are bytes
    assert err.value.field == "f"
    assert "the main wire feature is bytes" in str(err.value)
    with pytest.raises(SchemaError, match=r"keys\[''\]\[3\]: a constant needs .* float of shape \[None, 4\]"):
        bind(codec="bbox", keys={"": ["x0", "y0", "x1", 1.0]})  # boxes vary in number
    with pytest.raises(ValueError, match=r"keys\['shape'\]: a list of columns needs at least one key"):
        rk.FieldSpec(**raw, keys={"shape": [4, 5, 3]})
    with pytest.raises(ValueError, match=r"keys\['shape'\]\[2\]: True is not a key .*a boolean"):
        rk.FieldSpec(**raw, keys={"shape": ["height", "width", True]})
    with pytest.raises(ValueError, match=r"keys\['channels'\]: True is not a key, a list .*a boolean"):
        rk.FieldSpec(codec="image", keys={"channels": True})
    with pytest.raises(ValueError, match=r"keys\['shape'\]\[1\]: an empty key"):
        rk.FieldSpec(**raw, keys={"shape": ["height", "", 3]})
    with pytest.raises(SchemaError, match=r"keys\['shape'\]\[2\]: the int64 feature needs an integer"):
        bind(**raw, keys={"": "image_raw", "shape": ["height", "width", 2.5]})
    with pytest.raises(SchemaError, match="lists a column key twice"):
        bind(**raw, keys={"": "image_raw", "shape": ["side", "side", 3]})
    # 3 and 3.0 are the same column of an int64 feature
    three = rk.Schema(name="s", fields={"f": rk.FieldSpec(**raw, keys={"": "r", "shape": ["h", "w", 3.0]})})
    shape = three.bind()["f"].features[1]
    assert shape.columns == ("h", "w", 3)
    assert isinstance(shape.columns[2], int)
    assert (shape.key, shape.stored_keys) == ("h", ("h", "w"))
    # two fields may share a key only to read it alike, as a column
    plain = {"a": rk.FieldSpec(codec="scalar"), "b": rk.FieldSpec(codec="scalar", keys={"": "a"})}
    with pytest.raises(SchemaError, match="which field 'a' writes too"):
        rk.Schema(name="s", fields=plain).bind()
    SEGMENTATION.bind()  # height and width are columns of both shapes


def test_a_corrupt_foreign_file_is_named(
    detection: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    path, _ = detection
    broken = tmp_path / "broken.tfrecord"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x04
    broken.write_bytes(bytes(data))
    # no manifest, so no record count: the reader checks that it read the file to its end
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"shard broken\.tfrecord, offset \d+"):
        list(rk.load_dataset(broken, schema=DETECTION, fields=["filename"]))
    report = rk.CorruptionReport()
    kept = list(
        rk.load_dataset(broken, schema=DETECTION, fields=["filename"], on_corrupt="skip", report=report)
    )
    assert len(kept) < 5
    assert report.shards == ["broken.tfrecord"]
    assert report.skipped[0].records is None  # unknown without a manifest


def test_a_recordkit_dataset_needs_no_inference(tmp_path: Path) -> None:
    schema = rk.Schema(name="tiny", fields={"x": rk.FieldSpec(codec="scalar")})
    rk.write_dataset([{"x": 1}], schema, tmp_path / "tiny", progress=False)
    assert rk.infer_schema(tmp_path / "tiny") == schema


# -- adoption is the codecs' business: Codec.adopt ------------------------------------------


class CelsiusOptions(rk.CodecOptions):
    """Options of the test codec ``celsius``."""

    scale: int = 100


class Celsius(rk.Codec[CelsiusOptions]):
    """A plugin's codec: temperatures stored as int64 hundredths of a degree, which it
    recognises in foreign records by their key names (``.../temp_c100``)."""

    name = "celsius"
    options_model = CelsiusOptions
    adopt_order = 10  # before the built-in codecs, which would take the ints as scalars

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": round(value * self.options.scale)}

    def decode_numpy(self, wire: Any) -> Any:
        return int(wire[""]) / self.options.scale

    def decode_tf(self, wire: Any) -> Any:
        return tf.cast(wire[""], tf.float64) / self.options.scale

    @classmethod
    def adopt(cls, records: rk.ForeignRecords) -> Any:
        for stats in records.unclaimed():
            if stats.key.endswith("temp_c100") and stats.kind is rk.WireKind.INT64 and stats.scalar:
                yield rk.Adoption(
                    claims=(stats.key,),
                    name=stats.key.removesuffix("_c100"),
                    options={"scale": 100},
                    keys={"": stats.key},
                    description=f"hundredths of a degree in {stats.key}",
                )
            elif stats.key.endswith("temp_f"):
                yield rk.LeftOut((stats.key,), f"{stats.key}: Fahrenheit, which celsius does not read")


def test_a_plugin_codec_adopts_foreign_keys_through_the_contract(tmp_path: Path) -> None:
    """infer_schema asks every codec of the registry, a plugin's as the built-ins: the
    plugin's codec claims its keys (before the built-in scalar could), and what it
    leaves out is noted; the proposal reads the records back."""
    path = tmp_path / "weather.tfrecord"
    write_examples(
        path,
        [
            {
                "station/temp_c100": _ints(2150 + i),
                "station/temp_f": _ints(70 + i),
                "station/label": _ints(i % 2),
            }
            for i in range(4)
        ],
    )
    registry = rk.load_plugins(allow=["recordkit"]).registry
    registry.register(Celsius)
    schema = rk.infer_schema(path, registry=registry)
    assert list(schema.fields) == ["temp", "label"]
    assert schema.fields["temp"].codec == "celsius"
    assert schema.fields["temp"].options == {"scale": 100}
    assert schema.fields["temp"].keys == {"": "station/temp_c100"}
    assert schema.fields["label"].codec == "label"
    assert "station/temp_f: Fahrenheit, which celsius does not read" in schema.description
    rows = list(rk.iter_records(path, schema=schema, registry=registry))
    assert [row["temp"] for row in rows] == [21.5, 21.51, 21.52, 21.53]
    # without the plugin, the built-in scalar codec takes the ints, as ints
    plain = rk.infer_schema(path, registry=rk.load_plugins(allow=["recordkit"]).registry)
    assert plain.fields["temp_c100"].codec == "scalar"
    assert plain.fields["temp_f"].options == {"dtype": "int64"}


def test_the_core_knows_no_codec_only_the_registry_does(detection: tuple[Path, list[dict[str, Any]]]) -> None:
    """With the image and bbox codecs left out of the registry, nothing proposes images
    or boxes: what a layout means comes from the codecs, not from infer_schema."""
    path, _ = detection
    full = rk.load_plugins(allow=["recordkit"]).registry
    registry = rk.CodecRegistry()
    for info in full:
        if info.name not in ("image", "bbox"):
            registry.register(info.codec)
    schema = rk.infer_schema(path, registry=registry)
    assert {spec.codec for spec in schema.fields.values()} <= {"text", "label", "scalar", "tensor"}
    assert "image" not in schema.fields
    assert "objects" not in schema.fields
    assert "image/encoded: bytes no codec reads from these keys alone" in schema.description
    assert schema.fields["xmin"].codec == "scalar"  # the box columns, as plain float lists
    assert schema.fields["xmin"].sequence


def test_built_in_codecs_adopt_what_they_recognise(detection: tuple[Path, list[dict[str, Any]]]) -> None:
    """Each built-in codec answers Codec.adopt for its own layout only."""
    from recordkit.format._example import (  # private: the stored wire values, without TensorFlow
        decode_example,
    )
    from recordkit.format._tfrecord import iter_tfrecords  # private: a shard's raw frames, without TensorFlow
    from recordkit_codecs.bbox import BBoxCodec
    from recordkit_codecs.image import ImageCodec
    from recordkit_codecs.mask import MaskCodec

    path, _ = detection
    keys: dict[str, rk.ForeignKey] = {}
    count = 0
    for _, data in iter_tfrecords(location(path)):
        for key, (kind, values) in decode_example(data).items():
            stats = keys.setdefault(key, rk.ForeignKey(key, lengths=[None] * count, values=[None] * count))
            stats.kinds.add(kind)
            stats.lengths.append(len(values))
            stats.values.append(list(values) or None)
            if kind is not rk.WireKind.BYTES and len(values):
                stats.low, stats.high = (
                    min(stats.low, float(min(values))),
                    max(stats.high, float(max(values))),
                )
        count += 1
    records = rk.ForeignRecords(keys, count)
    (image,) = ImageCodec.adopt(records)
    assert isinstance(image, rk.Adoption)
    assert image.claims == ("image/encoded", "image/height", "image/width")
    assert image.keys == {
        "": "image/encoded",
        "height": "image/height",
        "width": "image/width",
        "channels": 3,
    }
    (boxes,) = BBoxCodec.adopt(records)
    assert isinstance(boxes, rk.Adoption)
    assert boxes.name == "objects"
    assert boxes.options["labels"] == ["class_0", "cat", "dog"]
    assert list(MaskCodec.adopt(records)) == []  # the default: a codec that recognises nothing
