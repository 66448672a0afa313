"""tf.train.Example bytes without TensorFlow.

Encoding is written out by hand: an Example is a map of string keys to one of three
packed lists, and emitting that wire format directly from bytes and numpy buffers is
several times faster than building protobuf messages field by field (the writer's hot
path). The output is byte-for-byte what protobuf would accept and TensorFlow parses;
tests check it against ``tf.train.Example`` and ``tf.io.parse_example``.

Decoding uses the protobuf runtime with the Example messages declared in a private
descriptor pool, so reading needs neither TensorFlow nor generated code, and does not
clash with TensorFlow's own ``tensorflow.Example`` when both are imported. The pool and
its message class are made once per process, under a lock, by the first decode (or
:func:`load_decoder`): readers decode from many threads at once (Grain's 16 prefetch
threads), and each would otherwise build a pool and a class of its own on first use.
"""

from __future__ import annotations

import functools
import os
import struct
import threading
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import numpy as np

from recordkit.codec._wire import WireKind

__all__ = ["decode_example", "encode_example", "load_decoder"]

_TAG_1_LEN = b"\x0a"  # field 1, wire type 2 (length-delimited)
_TAG_2_LEN = b"\x12"
_TAG_3_LEN = b"\x1a"
_SMALL_VARINTS = [bytes((i,)) for i in range(128)]


def _varint(value: int) -> bytes:
    # Unrolled up to four bytes (values below 2**28): every length in a record is one.
    if value < 0x80:
        return _SMALL_VARINTS[value]
    if value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if value < 0x200000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    if value < 0x10000000:
        return bytes(
            ((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, ((value >> 14) & 0x7F) | 0x80, value >> 21)
        )
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _len_prefixed(tag: bytes, payload: bytes) -> bytes:
    return tag + _varint(len(payload)) + payload


def _bytes_list(values: Sequence[bytes]) -> bytes:
    parts = []
    for value in values:
        parts.append(_TAG_1_LEN)
        parts.append(_varint(len(value)))
        parts.append(value)
    return b"".join(parts)


def _float_list(values: np.ndarray) -> bytes:
    if len(values) == 0:
        return b""
    return _len_prefixed(_TAG_1_LEN, values.astype("<f4", copy=False).tobytes())


def _int64_list(values: Sequence[int] | np.ndarray) -> bytes:
    if len(values) == 0:
        return b""
    items = values.tolist() if isinstance(values, np.ndarray) else values
    return _len_prefixed(_TAG_1_LEN, _int64_payload(items))


def _int64_payload(items: Sequence[int]) -> bytes:
    """The packed varints of a non-empty list of int64 values."""
    if min(items) >= 0 and max(items) < 0x80:  # each value is its own one-byte varint
        return bytes(items)
    # Negative int64 values are varint-encoded as their 64-bit two's complement.
    return b"".join([_varint(v & 0xFFFFFFFFFFFFFFFF) for v in items])


@functools.lru_cache(maxsize=4096)
def encode_int64_scalar_feature(value: int) -> bytes:
    """The serialized ``tf.train.Feature`` holding one int64 (ValueError if it does not
    fit). Cached: heights, widths, sample rates and labels repeat from record to record."""
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{value} does not fit in int64")
    return _len_prefixed(_TAG_3_LEN, _int64_list([value]))


_FLOAT_SCALAR_HEAD = _TAG_2_LEN + b"\x06" + _TAG_1_LEN + b"\x04"
_F32 = struct.Struct("<f")


def encode_float_scalar_feature(value: float) -> bytes:
    """The serialized ``tf.train.Feature`` holding one float32 (rounded as numpy rounds;
    OverflowError beyond float32's range, where numpy would give an infinity)."""
    return _FLOAT_SCALAR_HEAD + _F32.pack(value)


def encode_feature(kind: WireKind, values: Any) -> bytes:
    """The serialized ``tf.train.Feature`` holding ``values`` (already normalised)."""
    if kind is WireKind.BYTES:
        return _len_prefixed(_TAG_1_LEN, _bytes_list(values))
    if kind is WireKind.FLOAT:
        return _len_prefixed(_TAG_2_LEN, _float_list(values))
    return _len_prefixed(_TAG_3_LEN, _int64_list(values))


# -- Examples as pieces -------------------------------------------------------------------
#
# An Example is a Features message whose map entries are ``key: Feature``. The writer
# builds each entry as soon as its feature is encoded and keeps the entries as a list of
# pieces; a large payload (an encoded image or audio clip) is a piece of its own, so it
# is copied once, when the record is framed, rather than at every level of nesting.


@functools.lru_cache(maxsize=4096)
def _entry_prefix(key: bytes) -> bytes:
    # A map entry's key field and the tag of its value field: fixed for a key.
    return _TAG_1_LEN + _varint(len(key)) + key + _TAG_2_LEN


def encode_entry(key: bytes, feature: bytes) -> bytes:
    """One ``key: feature`` map entry of an Example, for a serialized Feature."""
    body = _entry_prefix(key) + _varint(len(feature)) + feature
    return _TAG_1_LEN + _varint(len(body)) + body


@functools.lru_cache(maxsize=8192)
def encode_int64_scalar_entry(key: bytes, value: int) -> bytes:
    """:func:`encode_entry` of one int64, cached (see :func:`encode_int64_scalar_feature`)."""
    return encode_entry(key, encode_int64_scalar_feature(value))


def array_entry(key: bytes, kind: WireKind, values: np.ndarray) -> bytes:
    """:func:`encode_entry` of :func:`encode_feature` for a non-empty 1-D float32 or
    int64 array, the nesting sized and joined in one step (boxes, label lists: the
    writer makes a few of these per record)."""
    if kind is WireKind.FLOAT:
        payload, list_tag = values.astype("<f4", copy=False).tobytes(), _TAG_2_LEN
    else:
        payload, list_tag = _int64_payload(values.tolist()), _TAG_3_LEN
    return _entry_head(key, list_tag, len(payload)) + payload


def payload_entry_head(key: bytes, size: int) -> bytes:
    """The map entry holding one bytes value of ``size`` bytes, up to the value: the
    entry is ``payload_entry_head(key, len(value)) + value``."""
    prefix = _entry_prefix(key)
    if 0x4000 <= size < 0x1FFFF0 - len(prefix):
        # The common payload (16 KB to 2 MB: images, audio clips): each of the four
        # lengths is a three-byte varint, packed here in two calls rather than four.
        list_size = size + 4  # a tag and three bytes of varint
        feature_size = list_size + 4
        body_size = len(prefix) + 3 + feature_size
        return b"".join(
            (
                bytes((0x0A, body_size & 0x7F | 0x80, body_size >> 7 & 0x7F | 0x80, body_size >> 14)),
                prefix,
                # One flat tuple (unpacking three made it a quarter slower).
                bytes(
                    (
                        feature_size & 0x7F | 0x80,
                        feature_size >> 7 & 0x7F | 0x80,
                        feature_size >> 14,
                        0x0A,
                        list_size & 0x7F | 0x80,
                        list_size >> 7 & 0x7F | 0x80,
                        list_size >> 14,
                        0x0A,
                        size & 0x7F | 0x80,
                        size >> 7 & 0x7F | 0x80,
                        size >> 14,
                    )
                ),
            )
        )
    return _entry_head(key, _TAG_1_LEN, size)


def _entry_head(key: bytes, list_tag: bytes, size: int) -> bytes:
    """The map entry ``key`` -> Feature holding one list (field ``list_tag``: bytes,
    float or int64) whose one length-delimited value has ``size`` bytes, up to that
    value: the entry is ``_entry_head(key, list_tag, len(value)) + value``."""
    # Innermost first: the list's value, then the list, then the Feature, then the entry.
    size_varint = _varint(size)
    list_size = 1 + len(size_varint) + size
    list_varint = _varint(list_size)
    feature_size = 1 + len(list_varint) + list_size
    feature_varint = _varint(feature_size)
    prefix = _entry_prefix(key)
    body_size = len(prefix) + len(feature_varint) + feature_size
    head = (_TAG_1_LEN, _varint(body_size), prefix, feature_varint)
    return b"".join((*head, list_tag, list_varint, _TAG_1_LEN, size_varint))


def join_entries(entries: list[bytes]) -> list[bytes]:
    """The pieces of the serialized Example made of ``entries`` (pieces of map entries,
    in order): the Features header, then the entries themselves."""
    return example_pieces(entries)[0]


def example_pieces(entries: list[bytes]) -> tuple[list[bytes], int]:
    """:func:`join_entries` and the size of the Example, summed once (the writer needs both)."""
    size = sum(map(len, entries))
    header = _TAG_1_LEN + _varint(size)
    return [header, *entries], len(header) + size


def encode_example(features: Iterable[tuple[bytes, bytes]]) -> bytes:
    """A serialized ``tf.train.Example`` from ``(encoded key, serialized Feature)`` pairs.

    Keys are passed pre-encoded (UTF-8) so the hot path does not re-encode them.
    """
    return b"".join(join_entries([encode_entry(key, feature) for key, feature in features]))


def normalize_values(kind: WireKind, value: Any) -> Any:
    """Bring one feature's value to the form :func:`encode_feature` takes.

    BYTES: a list of bytes. INT64: a list of ints or an int64 numpy array. FLOAT: a
    float32 numpy array. Raises ``TypeError``/``ValueError`` on values of the wrong kind;
    callers turn them into recordkit errors with context.
    """
    if type(value) is int and kind is WireKind.INT64:  # the common scalar: skip numpy
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"{value} does not fit in int64")
        return [value]
    if type(value) is np.ndarray and value.dtype == (np.float32 if kind is WireKind.FLOAT else np.int64):
        return value.reshape(-1)  # already in the stored type: nothing to check
    if kind is WireKind.BYTES:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return [bytes(value)]
        if isinstance(value, np.ndarray) and value.dtype.kind == "S":
            return [bytes(v) for v in value.reshape(-1)]
        items = list(value)
        for item in items:
            if not isinstance(item, bytes):
                raise TypeError(f"a bytes feature takes bytes, got {type(item).__name__}")
        return items
    dtype = np.int64 if kind is WireKind.INT64 else np.float32
    array = np.asarray(value)
    if kind is WireKind.INT64 and array.dtype.kind not in "iub":
        if array.size and array.dtype.kind == "f" and not np.all(np.mod(array, 1) == 0):
            raise ValueError("an int64 feature takes integers")
        if array.dtype.kind not in "f" and array.size:
            raise TypeError(f"an int64 feature takes integers, got dtype {array.dtype}")
    # uint64 (what numpy makes of ints above 2**63 - 1) and floats would wrap silently.
    out_of_range = kind is WireKind.INT64 and array.size and array.dtype.kind in "uf"
    if out_of_range and not (np.all(array >= -(2**63)) and np.all(array < 2**63)):
        raise ValueError("a value does not fit in int64")
    if kind is WireKind.FLOAT and array.size and array.dtype.kind not in "fiub":
        raise TypeError(f"a float feature takes numbers, got dtype {array.dtype}")
    return array.astype(dtype, copy=False).reshape(-1)


# -- decoding ---------------------------------------------------------------------------


def _example_class() -> Any:
    """A new descriptor pool holding the Example messages, and its Example class (made
    once, by :func:`_load_parser`)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(
        name="recordkit/_private/example.proto", package="recordkit_private", syntax="proto3"
    )
    field = descriptor_pb2.FieldDescriptorProto
    repeated = field.LABEL_REPEATED

    def message(name: str) -> Any:
        msg = fdp.message_type.add()
        msg.name = name
        return msg

    def add(
        msg: Any,
        name: str,
        number: int,
        type_: int,
        label: int = field.LABEL_OPTIONAL,
        type_name: str | None = None,
        packed: bool = False,
        oneof: int | None = None,
    ) -> None:
        f = msg.field.add(name=name, number=number, type=type_, label=label)
        if type_name:
            f.type_name = type_name
        if packed:
            f.options.packed = True
        if oneof is not None:
            f.oneof_index = oneof

    add(message("BytesList"), "value", 1, field.TYPE_BYTES, repeated)
    add(message("FloatList"), "value", 1, field.TYPE_FLOAT, repeated, packed=True)
    add(message("Int64List"), "value", 1, field.TYPE_INT64, repeated, packed=True)
    feature = message("Feature")
    feature.oneof_decl.add(name="kind")
    add(feature, "bytes_list", 1, field.TYPE_MESSAGE, type_name=".recordkit_private.BytesList", oneof=0)
    add(feature, "float_list", 2, field.TYPE_MESSAGE, type_name=".recordkit_private.FloatList", oneof=0)
    add(feature, "int64_list", 3, field.TYPE_MESSAGE, type_name=".recordkit_private.Int64List", oneof=0)
    features = message("Features")
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    add(entry, "key", 1, field.TYPE_STRING)
    add(entry, "value", 2, field.TYPE_MESSAGE, type_name=".recordkit_private.Feature")
    add(
        features,
        "feature",
        1,
        field.TYPE_MESSAGE,
        repeated,
        type_name=".recordkit_private.Features.FeatureEntry",
    )
    add(message("Example"), "features", 1, field.TYPE_MESSAGE, type_name=".recordkit_private.Features")

    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("recordkit_private.Example"))


def decode_example(data: bytes, keys: Collection[str] | None = None) -> dict[str, tuple[WireKind, Any]]:
    """Parse a serialized Example into ``{key: (kind, values)}``; with ``keys`` fewer
    than the Example's, only those of them it holds (the rest are parsed but never
    converted: a reader of two fields does not copy the record's image and audio bytes).

    Bytes features give a ``list[bytes]``, numeric ones a 1-D numpy array (int64 or
    float32). Raises ``ValueError`` when ``data`` is not a valid Example.

    The numeric lists become arrays through ``np.fromiter`` with their length, half the
    cost of ``np.array`` on protobuf's repeated fields (a few values per key, for every
    key of every record the numpy reader reads); long float lists through their packed
    bytes (:func:`_float_array`).
    """
    example_class, proto_decode_error = _parser()
    example = example_class()
    try:
        example.ParseFromString(data)
    except proto_decode_error as exc:
        raise ValueError(f"not a valid tf.train.Example: {exc}") from None
    features = example.features.feature
    if keys is None or len(keys) >= len(features):
        return {key: _values(feature) for key, feature in features.items()}
    return {key: _values(features[key]) for key in keys if key in features}


def _values(feature: Any) -> tuple[WireKind, Any]:
    """One parsed ``Feature`` as ``(kind, values)`` (see :func:`decode_example`)."""
    which = feature.WhichOneof("kind")
    if which == "bytes_list":
        return WireKind.BYTES, list(feature.bytes_list.value)
    if which == "int64_list":
        ints = feature.int64_list.value
        return WireKind.INT64, np.fromiter(ints, np.int64, len(ints))
    if which == "float_list":
        return WireKind.FLOAT, _float_array(feature.float_list)
    return WireKind.BYTES, []  # an empty Feature: TensorFlow treats it as an empty list of any kind


#: From this many values on, a float list is read from its packed bytes: ``np.fromiter``
#: boxes every value as a Python float, re-serializing the list is one copy.
_PACKED_FLOATS_FROM = 16


def _float_array(float_list: Any) -> np.ndarray:
    """A parsed ``FloatList`` as a writable float32 array.

    A long list (an embedding) is serialized again and its values taken from the bytes:
    protobuf writes a parsed float list packed (tag, length, then 4 little-endian bytes a
    value) whatever form the wire had, so its values are the last ``4 * n`` bytes.
    """
    floats = float_list.value
    count = len(floats)
    if count < _PACKED_FLOATS_FROM:
        return np.fromiter(floats, np.float32, count)
    packed = float_list.SerializeToString()
    return np.frombuffer(packed, "<f4", count, len(packed) - 4 * count).astype(np.float32)


def load_decoder() -> None:
    """Make protobuf's Example class now rather than at the first :func:`decode_example`
    (a process forked after it inherits it; threads started after it find it made)."""
    _parser()


#: The Example class and protobuf's DecodeError, once made (see :func:`_parser`).
_loaded: list[tuple[Any, type[Exception]]] = []
_loading = threading.Lock()


def _new_lock_after_fork() -> None:
    # A thread of the parent may have held the lock at the fork: it never releases it here.
    global _loading
    _loading = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_after_fork)


def _parser() -> tuple[Any, type[Exception]]:
    """The Example message class and protobuf's DecodeError (made on first use)."""
    if _loaded:
        return _loaded[0]
    return _load_parser()


def _load_parser() -> tuple[Any, type[Exception]]:
    """:func:`_parser`'s first call: the class made by one thread, under the lock, while
    the others that ask meanwhile wait for it and share it."""
    with _loading:
        if not _loaded:
            from google.protobuf.message import DecodeError as ProtoDecodeError

            _loaded.append((_example_class(), ProtoDecodeError))
        return _loaded[0]
