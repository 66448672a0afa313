"""The hand-written tf.train.Example encoder and the TF-free decoder (sdk/recordkit/format/_example.py),
checked against TensorFlow's own parsers."""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import assume, given
from hypothesis import strategies as st

from recordkit import WireKind
from recordkit.format._example import (
    _varint,
    array_entry,
    decode_example,
    encode_entry,
    encode_example,
    encode_feature,
    encode_int64_scalar_entry,
    encode_int64_scalar_feature,
    join_entries,
    normalize_values,
    payload_entry_head,
)
from recordkit.format._tfrecord import FRAMING_BYTES, frame_into, frame_pieces, frame_record

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

int64s = st.one_of(
    st.sampled_from([0, 1, -1, 127, 128, -128, 2**31, -(2**31) - 1, INT64_MIN, INT64_MAX]),
    st.integers(INT64_MIN, INT64_MAX),
)
float32s = st.floats(width=32, allow_nan=False)  # infinities and subnormals included
keys = st.text(min_size=1, max_size=20)

feature_values = st.one_of(
    st.tuples(st.just(WireKind.BYTES), st.lists(st.binary(max_size=40), max_size=5)),
    st.tuples(st.just(WireKind.INT64), st.lists(int64s, max_size=8)),
    st.tuples(st.just(WireKind.FLOAT), st.lists(float32s, max_size=8)),
)
examples = st.dictionaries(keys, feature_values, max_size=6)


def encode(features: dict[str, tuple[WireKind, list[Any]]]) -> bytes:
    return encode_example(
        (key.encode("utf-8"), encode_feature(kind, normalize_values(kind, values)))
        for key, (kind, values) in features.items()
    )


def tf_values(feature: tf.train.Feature) -> tuple[WireKind, list[Any]]:
    which = feature.WhichOneof("kind")
    kind = {"bytes_list": WireKind.BYTES, "int64_list": WireKind.INT64, "float_list": WireKind.FLOAT}[which]
    return kind, list(getattr(feature, which).value)


@given(examples)
def test_protobuf_reads_what_the_encoder_writes(features: dict[str, tuple[WireKind, list[Any]]]) -> None:
    parsed = tf.train.Example.FromString(encode(features))
    assert set(parsed.features.feature) == set(features)
    for key, (kind, values) in features.items():
        got_kind, got = tf_values(parsed.features.feature[key])
        assert got_kind is kind
        if kind is WireKind.FLOAT:
            np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(values, np.float32))
        else:
            assert got == values


@given(examples)
def test_same_message_as_protobuf_builds(features: dict[str, tuple[WireKind, list[Any]]]) -> None:
    expected = tf.train.Example(features=tf.train.Features())
    for key, (kind, values) in features.items():
        feature = expected.features.feature[key]
        if kind is WireKind.BYTES:
            feature.bytes_list.value.extend(values)
        elif kind is WireKind.INT64:
            feature.int64_list.value.extend(values)
        else:
            feature.float_list.value.extend(values)
    assert tf.train.Example.FromString(encode(features)) == expected


@given(examples)
def test_decode_example_round_trip(features: dict[str, tuple[WireKind, list[Any]]]) -> None:
    decoded = decode_example(encode(features))
    assert set(decoded) == set(features)
    for key, (kind, values) in features.items():
        got_kind, got = decoded[key]
        assert got_kind is kind
        if kind is WireKind.BYTES:
            assert got == values
        else:
            assert got.dtype == kind.numpy_dtype
            np.testing.assert_array_equal(got, np.asarray(values, kind.numpy_dtype))


@given(st.integers(0, 600), st.randoms(use_true_random=False))
def test_a_long_float_list_decodes_bit_for_bit_as_tensorflow_parses_it_packed_or_not(
    count: int, random: Any
) -> None:
    """Long float lists are read from their packed bytes: every bit pattern (NaN payloads,
    -0.0, infinities, subnormals) must come back as TensorFlow parses it, from the packed
    wire form the encoder writes and from the unpacked form another writer may use."""
    bits = np.asarray([random.getrandbits(32) for _ in range(count)], np.uint32)
    bits[: min(count, 4)] = np.asarray([0x7FC00001, 0x80000000, 0x7F800000, 0x00000001], np.uint32)[
        : min(count, 4)
    ]
    floats = bits.view(np.float32)
    payload = floats.astype("<f4").tobytes()
    packed_list = (b"\x0a" + _varint(len(payload)) + payload) if count else b""
    unpacked_list = b"".join(b"\x0d" + value.tobytes() for value in floats.astype("<f4"))
    for float_list in (packed_list, unpacked_list):
        feature = b"\x12" + _varint(len(float_list)) + float_list
        entry = b"\x0a\x01f" + b"\x12" + _varint(len(feature)) + feature
        features = b"\x0a" + _varint(len(entry)) + entry
        data = b"\x0a" + _varint(len(features)) + features
        kind, got = decode_example(data)["f"]
        expected = tf.io.parse_single_example(data, {"f": tf.io.RaggedFeature(tf.float32)})["f"].numpy()
        assert kind is WireKind.FLOAT
        assert got.dtype == np.float32
        assert got.flags.writeable
        np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
        np.testing.assert_array_equal(got.view(np.uint32), bits)


@given(
    st.lists(
        st.tuples(
            st.binary(max_size=30),
            st.lists(int64s, min_size=1, max_size=4),
            st.lists(float32s, min_size=3, max_size=3),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_tf_parse_example_reads_a_batch(rows: list[tuple[bytes, list[int], list[float]]]) -> None:
    batch = [
        encode({
            "image/encoded": (WireKind.BYTES, [data]),
            "label/ids": (WireKind.INT64, ids),
            "rgb": (WireKind.FLOAT, rgb),
        })
        for data, ids, rgb in rows
    ]  # fmt: skip
    spec = {
        "image/encoded": tf.io.FixedLenFeature([], tf.string),
        "label/ids": tf.io.RaggedFeature(tf.int64),
        "rgb": tf.io.FixedLenFeature([3], tf.float32),
    }
    parsed = tf.io.parse_example(tf.constant(batch), spec)
    assert parsed["image/encoded"].numpy().tolist() == [data for data, _, _ in rows]
    assert parsed["label/ids"].to_list() == [ids for _, ids, _ in rows]
    np.testing.assert_array_equal(parsed["rgb"].numpy(), np.asarray([rgb for _, _, rgb in rows], np.float32))


def test_empty_example_and_empty_lists() -> None:
    assert tf.train.Example.FromString(encode_example([])) == tf.train.Example(features=tf.train.Features())
    data = encode({"b": (WireKind.BYTES, []), "i": (WireKind.INT64, []), "f": (WireKind.FLOAT, [])})
    decoded = decode_example(data)
    assert decoded["b"] == (WireKind.BYTES, [])
    assert decoded["i"][0] is WireKind.INT64
    assert decoded["i"][1].size == 0
    assert decoded["f"][0] is WireKind.FLOAT
    parsed = tf.io.parse_example(tf.constant([data]), {"i": tf.io.RaggedFeature(tf.int64)})
    assert parsed["i"].to_list() == [[]]


def test_large_payload_lengths_use_multi_byte_varints() -> None:
    blob = bytes(range(256)) * 1000  # 256000 bytes: a 3-byte length varint
    parsed = tf.train.Example.FromString(encode({"blob": (WireKind.BYTES, [blob])}))
    assert parsed.features.feature["blob"].bytes_list.value == [blob]


@given(examples, st.sets(keys, max_size=8))
def test_decode_example_of_some_keys_gives_at_least_those_the_example_holds_as_the_full_decode_does(
    features: dict[str, tuple[WireKind, list[Any]]], wanted: set[str]
) -> None:
    data = encode(features)
    full = decode_example(data)
    some = decode_example(data, wanted)
    assert wanted & set(features) <= set(some) <= set(features)
    if len(wanted) < len(features):
        assert set(some) == wanted & set(features)
    for key, (kind, values) in some.items():
        assert kind is full[key][0]
        if kind is WireKind.BYTES:
            assert values == full[key][1]
        else:
            np.testing.assert_array_equal(values, full[key][1])


def test_decode_example_rejects_garbage() -> None:
    with pytest.raises(ValueError, match=r"not a valid tf\.train\.Example"):
        decode_example(b"\x0a\xff\xff\xff")


# -- normalize_values ------------------------------------------------------------------------


def test_normalize_accepts_the_documented_forms() -> None:
    assert normalize_values(WireKind.BYTES, b"x") == [b"x"]
    assert normalize_values(WireKind.BYTES, bytearray(b"ab")) == [b"ab"]
    assert normalize_values(WireKind.BYTES, np.array([b"a", b"bc"])) == [b"a", b"bc"]
    assert list(normalize_values(WireKind.INT64, 5)) == [5]
    assert normalize_values(WireKind.INT64, np.array([[1, 2], [3, 4]], np.int32)).tolist() == [1, 2, 3, 4]
    assert normalize_values(WireKind.INT64, [True, False]).tolist() == [1, 0]
    assert normalize_values(WireKind.INT64, [2.0, -3.0]).tolist() == [2, -3]
    floats = normalize_values(WireKind.FLOAT, [1, 2.5])
    assert floats.dtype == np.float32
    assert floats.tolist() == [1.0, 2.5]


@pytest.mark.parametrize(
    ("kind", "value", "error", "match"),
    [
        (WireKind.BYTES, ["text"], TypeError, "takes bytes, got str"),
        (WireKind.INT64, [1.5], ValueError, "takes integers"),
        (WireKind.INT64, ["1"], TypeError, "takes integers"),
        (WireKind.INT64, 2**63, ValueError, "does not fit in int64"),
        (WireKind.INT64, [2**63], ValueError, "does not fit in int64"),
        (WireKind.INT64, np.array([2**64 - 1], np.uint64), ValueError, "does not fit in int64"),
        (WireKind.INT64, [1e30], ValueError, "does not fit in int64"),
        (WireKind.FLOAT, ["1.0"], TypeError, "takes numbers"),
    ],
)
def test_normalize_refuses_values_of_the_wrong_kind(
    kind: WireKind, value: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        normalize_values(kind, value)


@given(examples, st.binary(max_size=20_000))
def test_entries_with_an_uncopied_payload_make_the_example(
    features: dict[str, tuple[WireKind, list[Any]]], payload: bytes
) -> None:
    assume("payload" not in features)
    entries = [
        encode_entry(key.encode("utf-8"), encode_feature(kind, normalize_values(kind, values)))
        for key, (kind, values) in features.items()
    ]
    entries += [payload_entry_head(b"payload", len(payload)), payload]
    pieces = join_entries(entries)
    example = b"".join(pieces)
    assert example == encode({**features, "payload": (WireKind.BYTES, [payload])})
    assert tf.train.Example.FromString(example).features.feature["payload"].bytes_list.value == [payload]
    assert frame_pieces(pieces, len(example)) == frame_record(example)
    chunk = mmap.mmap(-1, len(example) + 40)  # framed into place, at an offset
    chunk.write(b"\xee" * len(chunk))
    end = frame_into(chunk, 7, pieces, len(example))
    assert end == 7 + len(example) + FRAMING_BYTES
    assert bytes(chunk[7:end]) == frame_record(example)
    assert chunk[:7] == b"\xee" * 7  # nothing else touched
    assert chunk[end:] == b"\xee" * (len(chunk) - end)


@given(int64s)
def test_the_cached_int64_scalar_feature_is_the_general_one(value: int) -> None:
    assert encode_int64_scalar_feature(value) == encode_feature(WireKind.INT64, [value])
    general = encode_entry(b"k", encode_feature(WireKind.INT64, [value]))
    assert encode_int64_scalar_entry(b"k", value) == general


#: Every value where a varint gains a byte, and the largest (uint64's maximum).
VARINT_BOUNDARIES = sorted({0, 2**64 - 1} | {2 ** (7 * k) + d for k in range(1, 10) for d in (-1, 0)})


@pytest.mark.parametrize("value", VARINT_BOUNDARIES)
def test_varint_matches_protobuf_at_every_width_boundary(value: int) -> None:
    from google.protobuf.internal.encoder import _VarintBytes

    assert _varint(value) == _VarintBytes(value)


#: Payload sizes around every change of width of the entry's four lengths (the
#: three-byte case, 16 KB to 2 MB, has a path of its own), for a short and a long key.
PAYLOAD_SIZES = [0, 127, 128, 16_370, 16_383, 16_384, 16_385, 50_000]
PAYLOAD_SIZES += [2**21 - d for d in (300, 250, 230, 225, 224, 20, 16, 15, 12, 11, 10, 1)] + [2**21, 2**22]


@pytest.mark.parametrize("key", ["image", "k" * 200])
@pytest.mark.parametrize("size", PAYLOAD_SIZES)
def test_payload_entry_head_at_varint_boundaries(size: int, key: str) -> None:
    payload = b"p" * size
    example = b"".join(join_entries([payload_entry_head(key.encode(), size), payload]))
    assert example == encode({key: (WireKind.BYTES, [payload])})


@given(keys, st.lists(int64s, min_size=1, max_size=8), st.lists(float32s, min_size=1, max_size=8))
def test_array_entries_are_the_general_entries(key: str, ints: list[int], floats: list[float]) -> None:
    """The one-step entry of a non-empty int64 or float32 array (boxes, label lists) is
    the message protobuf builds."""
    entries = [
        array_entry(key.encode(), WireKind.INT64, np.asarray(ints, np.int64)),
        array_entry(f"{key}/f".encode(), WireKind.FLOAT, np.asarray(floats, np.float32)),
    ]
    expected = tf.train.Example()
    expected.features.feature[key].int64_list.value.extend(ints)
    expected.features.feature[f"{key}/f"].float_list.value.extend(floats)
    assert tf.train.Example.FromString(b"".join(join_entries(entries))) == expected


def test_int64_scalar_out_of_range() -> None:
    with pytest.raises(ValueError, match="does not fit in int64"):
        encode_int64_scalar_feature(2**63)
