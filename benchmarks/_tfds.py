"""The TensorFlow Datasets alternative: ``FeaturesDict.serialize_example`` and
``deserialize_example``, used the way a dataset builder uses them.

TFDS stores audio as decoded samples (``Audio`` is a tensor of int16 samples, which
Example holds as an int64 list) and takes an array or a file it decodes with pydub; the
benchmark decodes each WAV with soundfile, inside the timed section, because a TFDS
user holding WAV bytes has to do the same. JPEG bytes are stored as given; raw arrays
are encoded by TFDS itself (``tf.io.encode_jpeg`` / ``encode_png`` through its graph
runner). Reading maps ``deserialize_example`` over records then ``padded_batch``, as
``as_dataset`` does; the projection uses TFDS's own ``PartialDecoding``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import soundfile

from benchmarks._data import BOX_LABELS, NUM_CLASSES, SAMPLE_RATE, MixedRecord

__all__ = ["mixed_dataset", "mixed_features", "raw_features", "write_mixed", "write_raw"]


def _tfds() -> Any:
    import tensorflow_datasets as tfds

    return tfds


def mixed_features() -> Any:
    """The FeaturesDict of the mixed workload."""
    tfds = _tfds()
    features = tfds.features
    return features.FeaturesDict(
        {
            "image": features.Image(encoding_format="jpeg"),
            "audio": features.Audio(sample_rate=SAMPLE_RATE, dtype=np.int16),
            "caption": features.Text(),
            "objects": features.Sequence(
                {"bbox": features.BBoxFeature(), "label": features.ClassLabel(names=BOX_LABELS)}
            ),
            "label": features.ClassLabel(num_classes=NUM_CLASSES),
        }
    )


def raw_features(image_format: str) -> Any:
    tfds = _tfds()
    return tfds.features.FeaturesDict(
        {
            "image": tfds.features.Image(encoding_format=image_format),
            "label": tfds.features.ClassLabel(num_classes=NUM_CLASSES),
        }
    )


def _mixed_example(record: MixedRecord) -> dict[str, Any]:
    bbox = _tfds().features.BBox
    samples, _ = soundfile.read(io.BytesIO(record.wav), dtype="int16")
    # TFDS boxes are (ymin, xmin, ymax, xmax), normalised.
    boxes = [bbox(float(b[1]), float(b[0]), float(b[3]), float(b[2])) for b in record.boxes]
    return {
        "image": record.jpeg,
        "audio": samples,
        "caption": record.caption,
        "objects": {"bbox": boxes, "label": record.box_labels.tolist()},
        "label": record.label,
    }


def write_mixed(records: Sequence[MixedRecord], out_dir: Path, features: Any) -> list[Path]:
    import tensorflow as tf

    path = out_dir / "mixed.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(features.serialize_example(_mixed_example(record)))
    return [path]


def write_raw(
    records: Sequence[tuple[np.ndarray, int]], out_dir: Path, image_format: str, features: Any
) -> list[Path]:
    import tensorflow as tf

    path = out_dir / f"raw-{image_format}.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for image, label in records:
            writer.write(features.serialize_example({"image": image, "label": label}))
    return [path]


def mixed_dataset(files: Sequence[Path], mode: str, batch_size: int, features: Any) -> Any:
    """``map(deserialize_example)`` then ``padded_batch``. ``parse`` skips the image
    decode (TFDS's ``SkipDecoding``); ``projection`` decodes only the label
    (``PartialDecoding``)."""
    import tensorflow as tf

    tfds = _tfds()
    autotune = tf.data.AUTOTUNE
    decoders = None
    if mode == "projection":
        features = tfds.decode.PartialDecoding({"label": True}).extract_features(features)
    elif mode == "parse":
        decoders = {"image": tfds.decode.SkipDecoding()}

    def deserialize(serialized: Any) -> Any:
        return features.deserialize_example(serialized, decoders=decoders)

    ds = tf.data.TFRecordDataset([str(f) for f in files]).map(deserialize, num_parallel_calls=autotune)
    return ds.padded_batch(batch_size).prefetch(autotune)
