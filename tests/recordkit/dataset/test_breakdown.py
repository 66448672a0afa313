"""rk.byte_breakdown: a serialized record's bytes charged to the fields that own them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.dataset._breakdown import FRAMING, UNKNOWN
from recordkit.format._example import (  # private: builds and reads Example bytes by hand
    encode_example,
    encode_feature,
)

SCHEMA = rk.Schema(
    name="breakdown",
    fields={
        "caption": rk.FieldSpec(codec="text"),
        "weights": rk.FieldSpec(codec="tensor", options={"dtype": "float64", "shape": [None, 8]}),
        "tags": rk.FieldSpec(codec="label", options={"num_classes": 100, "multi": True}),
        "note": rk.FieldSpec(codec="text", optional=True),
        "crops": rk.FieldSpec(codec="tensor", options={"dtype": "uint8", "shape": [None]}, sequence=True),
    },
)

RECORD: dict[str, Any] = {
    "caption": "a caption of some length",
    "weights": np.linspace(0, 1, 64 * 8).reshape(64, 8),
    "tags": [3, 14, 15, 92],
    "note": "present",
    "crops": [np.arange(10, dtype=np.uint8), np.arange(300, dtype=np.uint8)],
}


def test_parts_add_up_to_the_record_and_follow_the_schema_order() -> None:
    bound = SCHEMA.bind()
    data = rk.RecordEncoder(bound).encode(RECORD)
    sizes = rk.byte_breakdown(bound, data)
    assert list(sizes) == [*SCHEMA.fields, FRAMING]
    assert sum(sizes.values()) == len(data)
    assert all(sizes[name] > 0 for name in SCHEMA.fields)
    assert 0 < sizes[FRAMING] <= 10  # the Example and Features headers: tags and lengths


def test_each_field_costs_what_removing_it_saves() -> None:
    """An independent check: a record without the optional field is smaller by exactly
    that field's share (its key, its /present flag and their map-entry overhead)."""
    bound = SCHEMA.bind()
    encoder = rk.RecordEncoder(bound)
    with_note = encoder.encode(RECORD)
    without = encoder.encode({k: v for k, v in RECORD.items() if k != "note"})
    sizes_with = rk.byte_breakdown(bound, with_note)
    sizes_without = rk.byte_breakdown(bound, without)
    assert sizes_without["note"] == 0
    assert sizes_with["note"] == (len(with_note) - sizes_with[FRAMING]) - (
        len(without) - sizes_without[FRAMING]
    )
    for name in ("caption", "weights", "tags", "crops"):
        assert sizes_with[name] == sizes_without[name]


def test_field_shares_include_keys_lengths_and_presence_flags() -> None:
    bound = SCHEMA.bind()
    sizes = rk.byte_breakdown(bound, rk.RecordEncoder(bound).encode(RECORD))
    # entry = tag + len + (tag + len + key + tag + len + feature); the feature holds
    # tag + len + (tag + len + payload) for one bytes value.
    caption = len(RECORD["caption"].encode())
    assert sizes["caption"] == 2 + (2 + len("caption") + 2 + (2 + 2 + caption))
    payload = RECORD["weights"].nbytes
    assert payload < sizes["weights"] <= payload * 1.01 + 40  # raw bytes plus the int64 shape
    crops = sum(c.nbytes for c in RECORD["crops"])
    assert crops < sizes["crops"] <= crops + 60  # the values plus their /lengths key


def test_a_plain_schema_binds_with_the_installed_codecs() -> None:
    data = rk.RecordEncoder(SCHEMA.bind()).encode(RECORD)
    assert rk.byte_breakdown(SCHEMA, data) == rk.byte_breakdown(SCHEMA.bind(), data)


def test_keys_no_field_owns_are_reported_apart() -> None:
    bound = rk.Schema(name="s", fields={"caption": rk.FieldSpec(codec="text")}).bind()
    foreign = encode_feature(rk.WireKind.INT64, np.arange(5, dtype=np.int64))
    data = encode_example(
        [(b"caption", encode_feature(rk.WireKind.BYTES, [b"hello"])), (b"other/tool", foreign)]
    )
    sizes = rk.byte_breakdown(bound, data)
    assert sizes[UNKNOWN] == 2 + 2 + len("other/tool") + 2 + len(foreign)
    assert sum(sizes.values()) == len(data)


def test_examples_serialized_by_tensorflow() -> None:
    tf = pytest.importorskip("tensorflow")
    bound = rk.Schema(
        name="s", fields={"label": rk.FieldSpec(codec="label", options={"num_classes": 5})}
    ).bind()
    example = tf.train.Example(
        features=tf.train.Features(
            feature={"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[3]))}
        )
    )
    data = example.SerializeToString()
    sizes = rk.byte_breakdown(bound, data)
    assert sum(sizes.values()) == len(data)
    assert sizes["label"] == len(data) - sizes[FRAMING] > 0


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x0a\x05\x0a", r"overruns"),
        (b"\x0a", r"truncated varint"),
        (b"\x0f", r"wire type 7"),
        (b"\x0a\x06\x0a\x04\x0a\x02\xff\xfe", r"key at byte 6 is not UTF-8"),
    ],
)
def test_bytes_that_are_not_an_example_are_a_corrupt_record(data: bytes, reason: str) -> None:
    with pytest.raises(rk.errors.CorruptRecordError, match=reason):
        rk.byte_breakdown(SCHEMA.bind(), data)


def test_empty_example() -> None:
    sizes = rk.byte_breakdown(SCHEMA.bind(), b"")
    assert sizes == {**dict.fromkeys(SCHEMA.fields, 0), FRAMING: 0}


def test_every_built_in_codec_agrees_with_protobufs_own_sizes() -> None:
    """A multimodal record (real PNG and WAV bytes, boxes with labels, a mask ...): each
    field's share equals the size protobuf itself gives the field's entries of the
    parsed tf.train.Example, absent optional fields and sequences included."""
    tf = pytest.importorskip("tensorflow")
    bound = rk.Schema(
        name="multimodal",
        fields={
            "image": rk.FieldSpec(codec="image"),
            "mask": rk.FieldSpec(codec="mask", optional=True),
            "speech": rk.FieldSpec(codec="audio", options={"sample_rate": 8000, "format": "flac"}),
            "objects": rk.FieldSpec(codec="bbox", options={"labels": ["a", "b"], "extras": ["score"]}),
            "label": rk.FieldSpec(codec="label", options={"names": ["x", "y"]}),
            "caption": rk.FieldSpec(codec="text", default="none"),
            "id": rk.FieldSpec(codec="scalar", options={"dtype": "float64"}),
            "frames": rk.FieldSpec(codec="tensor", options={"dtype": "int16", "shape": [2]}, sequence=True),
        },
    ).bind()
    rng = np.random.default_rng(0)
    record: dict[str, Any] = {
        "image": rng.integers(0, 256, (24, 32, 3), dtype=np.uint8),
        "speech": rng.integers(-1000, 1000, 800, dtype=np.int16),
        "objects": {"boxes": [[0.1, 0.1, 0.5, 0.5]], "labels": ["b"], "score": [0.5]},
        "label": "y",
        "id": 0.1,
        "frames": [np.array([1, 2], np.int16), np.array([3, 4], np.int16)],
    }
    for extra in ({}, {"mask": rng.integers(0, 5, (24, 32), dtype=np.uint8), "caption": "two"}):
        data = rk.RecordEncoder(bound).encode({**record, **extra})
        sizes = rk.byte_breakdown(bound, data)
        stored = tf.train.Example.FromString(data).features.feature
        for field in bound.fields:
            # A Features message holding only these entries is exactly their bytes.
            entries = {key: stored[key] for key in field.keys if key in stored}
            assert sizes[field.name] == tf.train.Features(feature=entries).ByteSize(), field.name
        assert sum(sizes.values()) == len(data)
        assert (sizes["mask"] > 0) == ("mask" in extra)
        assert all(sizes[name] > 0 for name in record)
