"""recordkit as a user would call it: a schema, ``write_dataset``, ``load_dataset``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import recordkit as rk
from benchmarks._data import BOX_LABELS, NUM_CLASSES, SAMPLE_RATE, MixedRecord
from recordkit.write._shard_file import DEFAULT_SHARD_BYTES

__all__ = [
    "MIXED_FIELDS",
    "data_files",
    "missing_codecs",
    "mixed_dataset",
    "mixed_record",
    "mixed_schema",
    "raw_schema",
    "stream_dataset",
    "stream_schema",
    "write",
]

#: The mixed workload's fields and the codecs they need.
MIXED_FIELDS = {"image": "image", "audio": "audio", "caption": "text", "boxes": "bbox", "label": "label"}


def missing_codecs(codecs: Iterable[str]) -> list[str]:
    """The codecs among ``codecs`` that no installed plugin registers."""
    registry = rk.default_registry()
    return [name for name in codecs if name not in registry]


def mixed_schema(channels: int | None = None) -> rk.Schema:
    """The mixed workload's schema; ``channels``: the image codec's option (None, the
    default, keeps each file's channel count; 3 declares RGB pictures, kept unchanged)."""
    image: dict[str, Any] = {"format": "keep"}
    if channels is not None:
        image["channels"] = channels
    return rk.Schema(
        name="bench_mixed",
        fields={
            "image": rk.FieldSpec(codec="image", options=image),
            "audio": rk.FieldSpec(codec="audio", options={"format": "wav", "sample_rate": SAMPLE_RATE}),
            "caption": rk.FieldSpec(codec="text"),
            "boxes": rk.FieldSpec(codec="bbox", options={"labels": BOX_LABELS}),
            "label": rk.FieldSpec(codec="label", options={"num_classes": NUM_CLASSES}),
        },
    )


def mixed_record(record: MixedRecord) -> dict[str, Any]:
    """A mixed record as recordkit takes it: the encoded bytes as they are."""
    return {
        "image": record.jpeg,
        "audio": record.wav,
        "caption": record.caption,
        "boxes": {"boxes": record.boxes, "labels": record.box_labels},
        "label": record.label,
    }


def raw_schema(image_format: str) -> rk.Schema:
    options: dict[str, Any] = {"format": image_format}
    if image_format == "jpeg":
        options["quality"] = 95
    return rk.Schema(
        name=f"bench_raw_{image_format}",
        fields={
            "image": rk.FieldSpec(codec="image", options=options),
            "label": rk.FieldSpec(codec="label", options={"num_classes": NUM_CLASSES}),
        },
    )


def stream_schema() -> rk.Schema:
    return rk.Schema(
        name="bench_stream",
        fields={
            "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
            "caption": rk.FieldSpec(codec="text"),
            "label": rk.FieldSpec(codec="label", options={"num_classes": NUM_CLASSES}),
            "score": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}),
        },
    )


def write(
    records: Iterable[Any],
    schema: rk.Schema,
    out_dir: Path,
    *,
    workers: int = 1,
    durable: bool = True,
    shard_bytes: int | None = DEFAULT_SHARD_BYTES,
) -> list[Path]:
    """Write ``records`` as a recordkit dataset under ``out_dir``; the data files written."""
    rk.write_dataset(
        records,
        out_dir,
        schema,
        split="train",
        workers=workers,
        progress=False,
        durable=durable,
        shard_bytes=shard_bytes,
    )
    return data_files(out_dir)


def data_files(out_dir: Path) -> list[Path]:
    """The TFRecord shards of a dataset directory (not its manifest, nor the shards'
    record indexes: 8 bytes a record, which the other contenders do not write)."""
    return sorted(
        p
        for p in out_dir.rglob("*")
        if p.is_file() and ".tfrecord" in p.name and not p.name.endswith(".index")
    )


def mixed_dataset(schema: rk.Schema, out_dir: Path, mode: str, batch_size: int) -> Any:
    """The read pipeline of one ``mode``.

    ``full``: ``load_dataset`` decoding every field, images and audio padded to the
    batch's largest (as ``padded_batch`` gives; boxes stay ragged). ``parse``:
    recordkit's generated parse spec (``rk.feature_spec``) after ``batch``, nothing
    decoded. ``projection``: ``load_dataset(fields=["label"])``.
    """
    import tensorflow as tf

    if mode == "parse":
        autotune = tf.data.AUTOTUNE
        spec = rk.feature_spec(schema)
        ds = tf.data.TFRecordDataset([str(f) for f in data_files(out_dir)]).batch(batch_size)
        return ds.map(lambda s: tf.io.parse_example(s, spec), num_parallel_calls=autotune).prefetch(autotune)
    if mode == "projection":
        return rk.load_dataset(out_dir, "train", fields=["label"], batch_size=batch_size)
    return rk.load_dataset(out_dir, "train", batch_size=batch_size, pad=["image", "audio"])


def stream_dataset(out_dir: Path, batch_size: int) -> Any:
    """Every field of the long stream, decoded, in batches."""
    return rk.load_dataset(out_dir, "train", batch_size=batch_size)
