"""Two versions of one codec, ``versioned``, for the tests of reading datasets with the
codec version that stored them (``Codec.for_stored_version``).

Both hold ``size`` small integers per record and decode them to int32 ``[size]``; they
store them differently:

* version 1 (:class:`VersionedV1`) as an int64 list of ``size`` values;
* version 2 (:class:`VersionedV2`) as one bytes value, ``size`` little-endian int32, and
  reads version 1's records by handing them to :class:`VersionedV1`.

Each version is registered by a plugin of its own (:class:`VersionPlugin`), as two
releases of one distribution would be; a registry holds one of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pydantic

import recordkit as rk
import recordkit_codecs.scalar

NAME = "versioned"
#: The schema of the tests' datasets: a versioned field and a plain id.
SCHEMA = rk.Schema(
    name="versions",
    fields={
        "numbers": rk.FieldSpec(codec=NAME, options={"size": 3}),
        "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
    },
)


class VersionedOptions(rk.CodecOptions):
    size: int = pydantic.Field(default=3, ge=1, le=64, description="Integers per record.")


def _numbers(value: Any, size: int) -> np.ndarray:
    """``value`` as ``size`` int32 numbers, or InvalidValueError saying why not."""
    array = np.asarray(value)
    if array.shape != (size,) or array.dtype.kind not in "iu":
        raise rk.errors.InvalidValueError(f"expected {size} integers, got {array.dtype} {array.shape}")
    if (array < -(2**31)).any() or (array >= 2**31).any():
        raise rk.errors.InvalidValueError("an integer is out of the int32 range")
    return array.astype(np.int32)


def decode_versioned_v1_tf(wire: Mapping[str, Any]) -> Any:
    """Version 1's batched decode: the int64 list, [B, size], as int32."""
    import tensorflow as tf

    return tf.cast(wire[""], tf.int32)


def decode_versioned_v2_tf(wire: Mapping[str, Any]) -> Any:
    """Version 2's batched decode: each record's bytes as int32, [B, size]."""
    import tensorflow as tf

    return tf.io.decode_raw(wire[""], tf.int32, little_endian=True)


class VersionedV1(rk.Codec[VersionedOptions]):
    """Version 1: the integers as an int64 list."""

    name = NAME
    version = "1"
    options_model = VersionedOptions

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64, (self.options.size,)),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": _numbers(value, self.options.size).astype(np.int64)}

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        return np.asarray(wire[""], dtype=np.int32)

    def decode_tf_source(self) -> rk.DecodeSource:
        return rk.DecodeSource(decode_versioned_v1_tf)

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return self.decode_tf_source()(wire)


class VersionedV2(rk.Codec[VersionedOptions]):
    """Version 2: the integers as one bytes value (little-endian int32); reads the
    records version 1 stored."""

    name = NAME
    version = "2"
    options_model = VersionedOptions

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.BYTES, ()),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": _numbers(value, self.options.size).astype("<i4").tobytes()}

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        return np.frombuffer(wire[""], dtype="<i4").astype(np.int32)

    def decode_tf_source(self) -> rk.DecodeSource:
        return rk.DecodeSource(decode_versioned_v2_tf)

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return self.decode_tf_source()(wire)

    def for_stored_version(self, version: str) -> rk.Codec[Any]:
        if version == "1":
            return VersionedV1(self.options)
        return super().for_stored_version(version)


class VersionPlugin:
    """A plugin registering one version of the ``versioned`` codec."""

    def __init__(self, codec: type[rk.Codec[Any]]) -> None:
        self.codec = codec

    @rk.hookimpl
    def recordkit_register_codecs(self, registry: rk.CodecRegistry) -> None:
        registry.register(self.codec)


def registry(codec: type[rk.Codec[Any]]) -> rk.CodecRegistry:
    """The built-in ``scalar`` codec and ``codec``, each through its plugin."""
    plugins = rk.load_plugins(
        entry_points=False,
        extra_plugins=[
            ("scalar", recordkit_codecs.scalar),
            (f"versioned-v{codec.version}", VersionPlugin(codec)),
        ],
    )
    return plugins.registry


def records(count: int) -> list[dict[str, Any]]:
    """``count`` records of :data:`SCHEMA`, their numbers all different."""
    rng = np.random.default_rng(7)
    return [{"numbers": rng.integers(-(2**31), 2**31, size=3, dtype=np.int64), "id": i} for i in range(count)]


#: A plugin module (for a throwaway distribution) registering version ``{version}``.
PLUGIN_MODULE = """
import recordkit as rk
from _versioned_codecs import VersionedV{version}


@rk.hookimpl
def recordkit_register_codecs(registry):
    registry.register(VersionedV{version})
"""
