"""Writing other tools' layouts: the schema files in schemas/layouts/ write the keys the
Object Detection API and the TensorFlow tutorials read, and those tools' own feature
specs (written out here from their public documentation, not imported) parse them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import recordkit as rk
from recordkit.errors import InvalidValueError

LAYOUTS = Path(__file__).resolve().parents[3] / "schemas" / "layouts"

# The Object Detection API's TfExampleDecoder (object_detection/data_decoders/
# tf_example_decoder.py), its keys_to_features for boxes, classes and the image.
OD_API_FEATURES = {
    "image/encoded": tf.io.FixedLenFeature((), tf.string, default_value=""),
    "image/format": tf.io.FixedLenFeature((), tf.string, default_value="jpeg"),
    "image/filename": tf.io.FixedLenFeature((), tf.string, default_value=""),
    "image/source_id": tf.io.FixedLenFeature((), tf.string, default_value=""),
    "image/height": tf.io.FixedLenFeature((), tf.int64, default_value=1),
    "image/width": tf.io.FixedLenFeature((), tf.int64, default_value=1),
    "image/object/bbox/xmin": tf.io.VarLenFeature(tf.float32),
    "image/object/bbox/xmax": tf.io.VarLenFeature(tf.float32),
    "image/object/bbox/ymin": tf.io.VarLenFeature(tf.float32),
    "image/object/bbox/ymax": tf.io.VarLenFeature(tf.float32),
    "image/object/class/label": tf.io.VarLenFeature(tf.int64),
    "image/object/class/text": tf.io.VarLenFeature(tf.string),
}

# "TFRecord and tf.train.Example" tutorial's image_feature_description.
TUTORIAL_FEATURES = {
    "height": tf.io.FixedLenFeature([], tf.int64),
    "width": tf.io.FixedLenFeature([], tf.int64),
    "depth": tf.io.FixedLenFeature([], tf.int64),
    "label": tf.io.FixedLenFeature([], tf.int64),
    "image_raw": tf.io.FixedLenFeature([], tf.string),
}


def shard_examples(folder: Path) -> list[bytes]:
    shards = sorted(str(p) for p in folder.glob("*.tfrecord"))
    return [raw.numpy() for raw in tf.data.TFRecordDataset(shards)]


def jpeg(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(array).save(out, format="JPEG")
    return out.getvalue()


def detection_records() -> list[dict[str, Any]]:
    rng = np.random.default_rng(39)
    names = ["background", "cat", "dog"]
    records = []
    for i in range(5):
        n = i % 3
        low = rng.uniform(0, 0.5, (n, 2))
        boxes = np.concatenate([low, low + rng.uniform(0.1, 0.5, (n, 2))], axis=1).round(3)
        labels = [int(x) for x in rng.integers(1, 3, n)]
        records.append(
            {
                "image": rng.integers(0, 256, (30 + i, 40, 3), dtype=np.uint8),
                "source_id": str(100 + i),
                "filename": f"{i}.jpg",
                "objects": {"boxes": boxes.tolist(), "labels": labels},
                "class_text": [names[x] for x in labels],
            }
        )
    return records


def test_records_written_with_the_object_detection_api_layout_parse_with_its_own_feature_spec(
    tmp_path: Path,
) -> None:
    schema = rk.Schema.load(LAYOUTS / "object-detection-api.yaml")
    records = detection_records()
    rk.write_dataset(records, schema, tmp_path / "od", progress=False)
    examples = shard_examples(tmp_path / "od")
    assert len(examples) == len(records)
    for record, example in zip(records, examples, strict=True):
        parsed = tf.io.parse_single_example(example, OD_API_FEATURES)
        dense = {k: tf.sparse.to_dense(v) if isinstance(v, tf.SparseTensor) else v for k, v in parsed.items()}
        boxes = np.stack(
            [dense[f"image/object/bbox/{c}"].numpy() for c in ("xmin", "ymin", "xmax", "ymax")], -1
        )
        np.testing.assert_allclose(
            boxes.reshape(-1, 4), np.asarray(record["objects"]["boxes"]).reshape(-1, 4), atol=1e-6
        )
        assert dense["image/object/class/label"].numpy().tolist() == record["objects"]["labels"]
        assert [t.decode() for t in dense["image/object/class/text"].numpy()] == record["class_text"]
        height, width = record["image"].shape[:2]
        assert (int(dense["image/height"]), int(dense["image/width"])) == (height, width)
        assert tf.io.decode_jpeg(dense["image/encoded"]).shape == (height, width, 3)
        assert dense["image/format"].numpy() == b"jpeg"
        assert dense["image/source_id"].numpy().decode() == record["source_id"]
    # ... and recordkit reads them back with its generated parser and checks them.
    back = list(rk.iter_records(tmp_path / "od"))
    for record, read in zip(records, back, strict=True):
        np.testing.assert_allclose(
            read["objects"]["boxes"].reshape(-1, 4),
            np.asarray(record["objects"]["boxes"]).reshape(-1, 4),
            atol=1e-6,
        )
        assert read["objects"]["labels"].tolist() == record["objects"]["labels"]
        assert read["class_text"] == record["class_text"]
    batch = next(iter(rk.load_dataset(tmp_path / "od", batch_size=5, image_size=(16, 16))))
    assert batch["objects"]["labels"].to_list() == [r["objects"]["labels"] for r in records]


def test_records_written_with_the_tutorial_layout_parse_with_the_tutorials_feature_description(
    tmp_path: Path,
) -> None:
    schema = rk.Schema.load(LAYOUTS / "tutorial-tfrecord.yaml")
    rng = np.random.default_rng(1)
    images = [rng.integers(0, 256, (20 + i, 24, 3), dtype=np.uint8) for i in range(3)]
    rk.write_dataset(
        [{"image": jpeg(image), "label": i} for i, image in enumerate(images)],
        schema,
        tmp_path / "t",
        progress=False,
    )
    for i, example in enumerate(shard_examples(tmp_path / "t")):
        parsed = tf.io.parse_single_example(example, TUTORIAL_FEATURES)
        decoded = tf.io.decode_image(parsed["image_raw"]).numpy()
        assert decoded.shape == images[i].shape
        assert [int(parsed[k]) for k in ("height", "width", "depth", "label")] == [20 + i, 24, 3, i]


def test_raw_arrays_and_masks_written_with_the_tutorial_layouts_come_back_equal(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    arrays = [rng.integers(0, 256, (4, 5 + i, 3), dtype=np.uint8) for i in range(3)]
    rk.write_dataset(
        [{"image": a, "label": i} for i, a in enumerate(arrays)],
        rk.Schema.load(LAYOUTS / "tutorial-raw-arrays.yaml"),
        tmp_path / "raw",
        progress=False,
    )
    for i, example in enumerate(shard_examples(tmp_path / "raw")):
        parsed = tf.io.parse_single_example(example, TUTORIAL_FEATURES)
        shape = [int(parsed[k]) for k in ("height", "width", "depth")]
        restored = np.frombuffer(parsed["image_raw"].numpy(), np.uint8).reshape(shape)
        np.testing.assert_array_equal(restored, arrays[i])
    masks = [rng.integers(0, 21, a.shape[:2], dtype=np.uint8) for a in arrays]
    segmentation = rk.Schema.load(LAYOUTS / "tutorial-segmentation.yaml")
    rk.write_dataset(
        [{"image": a, "mask": m} for a, m in zip(arrays, masks, strict=True)],
        segmentation,
        tmp_path / "seg",
        progress=False,
    )
    for read, array, mask in zip(rk.iter_records(tmp_path / "seg"), arrays, masks, strict=True):
        np.testing.assert_array_equal(read["image"], array)
        np.testing.assert_array_equal(read["mask"], mask)


def test_a_record_that_does_not_fit_the_layout_is_refused_naming_the_record_the_field_and_what_differs(
    tmp_path: Path,
) -> None:
    segmentation = rk.Schema.load(LAYOUTS / "tutorial-segmentation.yaml")
    image = np.zeros((4, 5, 3), np.uint8)
    good = {"image": image, "mask": np.zeros((4, 5), np.uint8)}
    bad = {"image": image, "mask": np.zeros((4, 6), np.uint8)}
    with pytest.raises(InvalidValueError) as caught:
        rk.write_dataset([good, bad], segmentation, tmp_path / "seg", progress=False)
    message = str(caught.value)
    assert "record 1" in message
    assert "field 'mask'" in message
    assert "Example key 'width' is [6] here, but field 'image' writes [5] under it" in message

    raw = rk.Schema.loads(
        """
name: raw
fields:
  image:
    codec: tensor
    options: {dtype: uint8, shape: [null, null, null]}
    keys: {"": image_raw, shape: [height, width, 3]}
"""
    )
    with pytest.raises(
        InvalidValueError, match=r"field 'image'.*column 2 is \[4\].*it must be 3 in every row"
    ):
        raw.bind().validate_record({"image": np.zeros((2, 2, 4), np.uint8)})
