"""entry_sizes (sdk/recordkit/format/_entry_sizes.py): a serialized Example's bytes by
key, checked against the sizes protobuf itself gives TensorFlow's Example messages."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import recordkit as rk
from recordkit.format._entry_sizes import entry_sizes
from recordkit.format._example import encode_example, encode_feature


def test_sizes_by_key_are_protobufs_own_and_add_up_with_the_headers() -> None:
    entries = [
        (b"image", encode_feature(rk.WireKind.BYTES, [bytes(range(256)) * 40])),
        (b"label", encode_feature(rk.WireKind.INT64, np.array([3, 300, 70000], np.int64))),
        (b"score", encode_feature(rk.WireKind.FLOAT, np.linspace(0, 1, 17, dtype=np.float32))),
    ]
    data = encode_example(entries)
    sizes = entry_sizes(data)
    stored = tf.train.Example.FromString(data).features.feature
    assert sizes.by_key == {
        key: tf.train.Features(feature={key: stored[key]}).ByteSize() for key in ("image", "label", "score")
    }
    assert sum(sizes.by_key.values()) + sizes.framing == len(data)
    assert 0 < sizes.framing <= 10  # the Example and Features headers: tags and lengths


def test_an_example_serialized_by_tensorflow() -> None:
    example = tf.train.Example(
        features=tf.train.Features(
            feature={"text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"hello"]))}
        )
    )
    data = example.SerializeToString()
    sizes = entry_sizes(data)
    assert sizes.by_key == {"text": example.features.ByteSize()}
    assert sizes.framing == len(data) - example.features.ByteSize()


def test_a_key_repeated_in_the_map_is_charged_for_every_entry() -> None:
    feature = encode_feature(rk.WireKind.INT64, np.arange(4, dtype=np.int64))
    data = encode_example([(b"k", feature), (b"k", feature)])
    sizes = entry_sizes(data)
    assert sizes.by_key["k"] == len(data) - sizes.framing == 2 * (2 + 2 + 1 + 2 + len(feature))


def test_empty_bytes_are_an_empty_example() -> None:
    sizes = entry_sizes(b"")
    assert (sizes.by_key, sizes.framing) == ({}, 0)


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"\x0a\x05\x0a", "overruns"), (b"\x0a", "truncated varint"), (b"\x0f", "wire type 7")],
)
def test_bytes_that_are_not_an_example_are_a_corrupt_record(data: bytes, reason: str) -> None:
    with pytest.raises(rk.errors.CorruptRecordError, match=reason):
        entry_sizes(data)
