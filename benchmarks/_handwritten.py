"""The hand-written alternative: tf.train.Example and tf.data code as the tutorials teach.

Writing builds ``tf.train.Example`` messages with the tutorials' ``_bytes_feature`` /
``_int64_feature`` / ``_float_feature`` helpers and writes them with
``tf.io.TFRecordWriter``; images get their height and width from the JPEG header
(Pillow, which is cheaper than the tutorials' full ``tf.io.decode_jpeg``), raw arrays
are encoded with ``tf.io.encode_jpeg`` / ``tf.io.encode_png``. The layout stores the
same content as recordkit's schema (boxes as the object-detection API's
``xmin/ymin/xmax/ymax`` float lists), so the file sizes compare like for like.

Reading comes in the two styles users write: per record (``map(parse_single_example)``
then ``padded_batch``), and the best hand-written pipeline (``batch``, then
``tf.io.parse_example``, then a parallel batched decode).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._data import MixedRecord, StreamRecord

__all__ = [
    "batched_dataset",
    "per_record_dataset",
    "write_mixed",
    "write_raw",
    "write_stream",
]


def _tf() -> Any:
    import tensorflow as tf

    return tf


# The tutorials' helpers, as they appear there.
def _bytes_feature(value: bytes) -> Any:
    tf = _tf()
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _int64_feature(value: int) -> Any:
    tf = _tf()
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def _int64_list_feature(values: Sequence[int]) -> Any:
    tf = _tf()
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _float_feature(value: float) -> Any:
    tf = _tf()
    return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))


def _float_list_feature(values: Sequence[float]) -> Any:
    tf = _tf()
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def _mixed_example(record: MixedRecord) -> Any:
    tf = _tf()
    height, width = record.height_width
    boxes = record.boxes
    feature = {
        "image/encoded": _bytes_feature(record.jpeg),
        "image/height": _int64_feature(height),
        "image/width": _int64_feature(width),
        "image/channels": _int64_feature(3),
        "audio/encoded": _bytes_feature(record.wav),
        "caption": _bytes_feature(record.caption.encode("utf-8")),
        "image/object/bbox/xmin": _float_list_feature(boxes[:, 0].tolist()),
        "image/object/bbox/ymin": _float_list_feature(boxes[:, 1].tolist()),
        "image/object/bbox/xmax": _float_list_feature(boxes[:, 2].tolist()),
        "image/object/bbox/ymax": _float_list_feature(boxes[:, 3].tolist()),
        "image/object/class/label": _int64_list_feature(record.box_labels.tolist()),
        "label": _int64_feature(record.label),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_mixed(records: Sequence[MixedRecord], out_dir: Path) -> list[Path]:
    """Write the mixed workload the tutorials' way; returns the files written."""
    tf = _tf()
    path = out_dir / "mixed.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(_mixed_example(record).SerializeToString())
    return [path]


def write_raw(records: Sequence[tuple[np.ndarray, int]], out_dir: Path, image_format: str) -> list[Path]:
    """Encode raw arrays with TensorFlow's encoders and write them (quality 95 JPEG,
    TensorFlow's default, the same as recordkit's)."""
    tf = _tf()
    path = out_dir / f"raw-{image_format}.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for image, label in records:
            if image_format == "jpeg":
                encoded = tf.io.encode_jpeg(image, quality=95).numpy()
            else:
                encoded = tf.io.encode_png(image).numpy()
            height, width, channels = image.shape
            feature = {
                "image/encoded": _bytes_feature(encoded),
                "image/height": _int64_feature(height),
                "image/width": _int64_feature(width),
                "image/channels": _int64_feature(channels),
                "label": _int64_feature(label),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return [path]


def write_stream(records: Iterable[StreamRecord], out_dir: Path) -> list[Path]:
    """Write the long stream of small records (an iterator of dicts)."""
    tf = _tf()
    path = out_dir / "stream.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            feature = {
                "id": _int64_feature(record["id"]),
                "caption": _bytes_feature(record["caption"].encode("utf-8")),
                "label": _int64_feature(record["label"]),
                "score": _float_feature(record["score"]),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return [path]


# -- reading ----------------------------------------------------------------------------

_BOX_KEYS = ("xmin", "ymin", "xmax", "ymax")


def _scalar_spec() -> dict[str, Any]:
    tf = _tf()
    return {
        "image/encoded": tf.io.FixedLenFeature([], tf.string),
        "image/height": tf.io.FixedLenFeature([], tf.int64),
        "image/width": tf.io.FixedLenFeature([], tf.int64),
        "image/channels": tf.io.FixedLenFeature([], tf.int64),
        "audio/encoded": tf.io.FixedLenFeature([], tf.string),
        "caption": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }


def per_record_dataset(files: Sequence[Path], mode: str, batch_size: int | None) -> Any:
    """``map(parse_single_example)`` then ``padded_batch``: the tutorials' reader
    (single records when ``batch_size`` is None).

    ``mode`` is ``full`` (decode the image and audio), ``parse`` (parse every feature,
    decode nothing) or ``projection`` (parse only the label).
    """
    tf = _tf()
    autotune = tf.data.AUTOTUNE
    if mode == "projection":
        spec = {"label": tf.io.FixedLenFeature([], tf.int64)}

        def parse_label(serialized: Any) -> Any:
            return tf.io.parse_single_example(serialized, spec)["label"]

        ds = tf.data.TFRecordDataset([str(f) for f in files]).map(parse_label, num_parallel_calls=autotune)
        return (ds if batch_size is None else ds.batch(batch_size)).prefetch(autotune)

    spec = _scalar_spec()
    for key in _BOX_KEYS:
        spec[f"image/object/bbox/{key}"] = tf.io.VarLenFeature(tf.float32)
    spec["image/object/class/label"] = tf.io.VarLenFeature(tf.int64)

    def parse(serialized: Any) -> dict[str, Any]:
        example = tf.io.parse_single_example(serialized, spec)
        boxes = tf.stack([tf.sparse.to_dense(example[f"image/object/bbox/{k}"]) for k in _BOX_KEYS], axis=-1)
        out = {
            "image": example["image/encoded"],
            "audio": example["audio/encoded"],
            "caption": example["caption"],
            "boxes": boxes,
            "box_labels": tf.sparse.to_dense(example["image/object/class/label"]),
            "label": example["label"],
            "size": tf.stack([example["image/height"], example["image/width"]]),
        }
        if mode == "full":
            out["image"] = tf.io.decode_jpeg(out["image"], channels=3)
            out["audio"] = tf.audio.decode_wav(out["audio"], desired_channels=1).audio
        return out

    ds = tf.data.TFRecordDataset([str(f) for f in files]).map(parse, num_parallel_calls=autotune)
    if batch_size is None:
        return ds.prefetch(autotune)
    return ds.padded_batch(batch_size).prefetch(autotune)


def batched_dataset(files: Sequence[Path], mode: str, batch_size: int) -> Any:
    """The best hand-written pipeline: ``batch``, ``tf.io.parse_example``, then each
    batch's images and audio decoded (``tf.map_fn``) with batches in parallel."""
    tf = _tf()
    autotune = tf.data.AUTOTUNE
    ds = tf.data.TFRecordDataset([str(f) for f in files]).batch(batch_size)
    if mode == "projection":
        spec = {"label": tf.io.FixedLenFeature([], tf.int64)}
        return ds.map(lambda s: tf.io.parse_example(s, spec)["label"], num_parallel_calls=autotune).prefetch(
            autotune
        )

    spec = _scalar_spec()
    for key in _BOX_KEYS:
        spec[f"image/object/bbox/{key}"] = tf.io.RaggedFeature(tf.float32, row_splits_dtype=tf.int64)
    spec["image/object/class/label"] = tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64)

    def parse(serialized: Any) -> dict[str, Any]:
        example = tf.io.parse_example(serialized, spec)
        return {
            "image": example["image/encoded"],
            "audio": example["audio/encoded"],
            "caption": example["caption"],
            "boxes": tf.stack([example[f"image/object/bbox/{k}"] for k in _BOX_KEYS], axis=-1),
            "box_labels": example["image/object/class/label"],
            "label": example["label"],
            "size": tf.stack([example["image/height"], example["image/width"]], axis=-1),
        }

    def decode(batch: dict[str, Any]) -> dict[str, Any]:
        height = tf.cast(tf.reduce_max(batch["size"][:, 0]), tf.int32)
        width = tf.cast(tf.reduce_max(batch["size"][:, 1]), tf.int32)

        def decode_image(data: Any) -> Any:
            return tf.image.pad_to_bounding_box(tf.io.decode_jpeg(data, channels=3), 0, 0, height, width)

        images = tf.map_fn(
            decode_image, batch["image"], fn_output_signature=tf.TensorSpec([None, None, 3], tf.uint8)
        )
        audio = tf.map_fn(
            lambda data: tf.audio.decode_wav(data, desired_channels=1).audio,
            batch["audio"],
            fn_output_signature=tf.TensorSpec([None, 1], tf.float32),
        )
        return {**batch, "image": images, "audio": audio}

    ds = ds.map(parse, num_parallel_calls=autotune)
    if mode == "full":
        ds = ds.map(decode, num_parallel_calls=autotune)
    return ds.prefetch(autotune)
