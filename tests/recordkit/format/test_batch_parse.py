"""Many records' Examples parsed at once (sdk/recordkit/format/_batch_parse.py): every
record it parses reads as protobuf reads it, and every record it cannot vouch for (another
layout, varints of another count, a malformed value) is left to protobuf."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
from _reader_support import same_example

from recordkit.format._batch_parse import framed_records, parsed_records
from recordkit.format._example import decode_example
from recordkit.format._tfrecord import frame_record


def example(features: dict[str, Any]) -> bytes:
    """A tf.train.Example serialized by TensorFlow's own protobuf."""
    feature = {}
    for key, value in features.items():
        if isinstance(value, list) and value and isinstance(value[0], bytes):
            feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=value))
        elif isinstance(value, np.ndarray) and value.dtype == np.float32:
            feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=value.tolist()))
        else:
            feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=list(value)))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(deterministic=True)


def framed(records: list[bytes]) -> tuple[bytes, np.ndarray]:
    buffer = b"".join(frame_record(r) for r in records)
    offsets = framed_records(buffer)
    assert offsets is not None
    return buffer, offsets


def test_records_of_one_layout_parse_as_protobuf_parses_them_for_the_keys_asked() -> None:
    rng = np.random.default_rng(5)
    records = [
        example(
            {
                "vector": rng.normal(size=8).astype(np.float32),  # 32 bytes: gathered by one index
                "wide": rng.normal(size=24).astype(np.float32),  # 96 bytes: sliced record by record
                "label": [int(rng.integers(0, 10))],
                "size": [300 + i % 2, 2**40 + i % 3],  # varints of two and six bytes
                "raw": [bytes(rng.integers(0, 256, size=12, dtype=np.uint8))],
                "pair": [b"ab", bytes([i % 200, 7])],
                "unread": [b"x" * 5],
            }
        )
        for i in range(40)
    ]
    buffer, offsets = framed(records)
    keys = {"vector", "wide", "label", "size", "raw", "pair", "absent"}
    chunk = parsed_records(buffer, offsets, keys)
    assert chunk.columns is not None
    for parsed, data in zip(chunk.examples(), records, strict=True):
        assert parsed is not None
        same_example(parsed, {k: v for k, v in decode_example(data).items() if k in keys})


def test_records_of_other_lengths_or_layouts_are_left_to_protobuf() -> None:
    same_length = [example({"a": [1], "b": [2]}) for _ in range(10)]
    other_key = example({"a": [1], "c": [2]})  # same length, another key
    other_count = example({"a": [1], "b": [130]})  # the value takes two bytes: another length
    other_varints = example({"a": [1, 2], "b": [2]})  # ...
    records = [*same_length, other_key, other_count, other_varints]
    buffer, offsets = framed(records)
    chunk = parsed_records(buffer, offsets, {"a", "b", "c"})
    examples = chunk.examples()
    assert all(e is not None for e in examples[:10])
    assert examples[10:] == [None, None, None]
    assert chunk.columns is None


def test_varints_of_another_count_in_the_same_bytes_are_left_to_protobuf() -> None:
    # [300] and [5, 6] both take two bytes of packed varints: the same layout, not the same values.
    records = [example({"n": [300]}) for _ in range(9)] + [example({"n": [5, 6]})]
    buffer, offsets = framed(records)
    examples = parsed_records(buffer, offsets, {"n"}).examples()
    assert examples[-1] is None
    first = examples[0]
    assert first is not None
    assert first["n"][1].tolist() == [300]


def test_negative_numbers_and_malformed_varints_are_left_to_protobuf() -> None:
    good = [example({"n": [1, 2]}) for _ in range(9)]
    negative = [example({"n": [-1]}) for _ in range(9)]  # ten-byte varints
    # A record whose varints run past their list: the same layout, but protobuf refuses it.
    malformed = bytearray(good[0])
    malformed[-1] |= 0x80
    assert len(malformed) == len(good[0])
    records = [*good, *negative, bytes(malformed)]
    buffer, offsets = framed(records)
    examples = parsed_records(buffer, offsets, {"other"}).examples()
    assert all(e == {} for e in examples[:9])
    assert examples[9:] == [None] * 10


def test_a_key_stored_twice_or_an_unknown_field_is_left_to_protobuf() -> None:
    once = example({"k": [1]})
    entry = once[2:]  # the Features message's one map entry
    twice = b"\x0a" + bytes([len(entry) * 2]) + entry + entry
    unknown = once + b"\x10\x01"  # field 2 of Example, a varint: protobuf keeps it unknown
    for record in (twice, unknown):
        buffer, offsets = framed([record] * 10)
        assert parsed_records(buffer, offsets, {"k"}).examples() == [None] * 10
        assert decode_example(record)["k"][1].tolist() == [1]


def test_framing_of_a_whole_file_is_checked_before_anything_is_parsed(tmp_path: Path) -> None:
    records = [example({"n": [i]}) for i in range(20)] + [example({"n": [1, 2, 3]})]
    buffer, offsets = framed(records)
    assert offsets.tolist()[-1] == len(buffer)
    assert framed_records(b"").tolist() == [0]  # type: ignore[union-attr]
    for at in (0, 9, 14, len(buffer) - 1):  # a length, its CRC, the data, a data CRC
        damaged = bytearray(buffer)
        damaged[at] ^= 0x01
        assert framed_records(bytes(damaged)) is None, at
    assert framed_records(buffer[:-1]) is None
