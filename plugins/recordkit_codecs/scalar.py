"""The ``scalar`` codec: one int, float, bool or string per record.

Stored as a single Example value of the matching kind. ``float64`` is stored as the
int64 bit pattern of the double, so it comes back exact (a float list would round it to
float32); ``bool`` as an int64 0/1; ``str`` as UTF-8 bytes.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import numpy as np

import recordkit as rk
from recordkit_codecs._foreign import plain_key
from recordkit_codecs._hf import plain_value, value_entry
from recordkit_codecs._tfds import tensor_entry, text_feature
from recordkit_codecs.text import utf8_column

__all__ = ["ScalarCodec", "ScalarOptions"]

ScalarDtype = Literal["int64", "int32", "float32", "float64", "bool", "str"]

_INT_RANGE = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}


class ScalarOptions(rk.CodecOptions):
    """Options of the ``scalar`` codec."""

    dtype: ScalarDtype = "int64"


class ScalarCodec(rk.Codec[ScalarOptions]):
    """A single number, boolean or short string per record."""

    name = "scalar"
    version = "1"

    def data_type(self) -> str:
        """The Croissant data type of its values (:class:`recordkit.DataTyped`)."""
        return "sc:Float" if str(self.options.dtype).startswith("float") else "sc:Integer"

    options_model = ScalarOptions
    summary = "one int, float, bool or str per record"
    adopt_order = 900

    @classmethod
    def adopt(cls, records: rk.ForeignRecords) -> Iterator[rk.Adoption | rk.LeftOut]:
        """Any foreign number key no other codec took, as int64 or float32 values (lists
        of them when records hold other than one)."""
        for stats in records.unclaimed():
            if records.claimed(stats.key) or records.flags_an_unclaimed_key(stats.key):
                continue
            if stats.kind not in (rk.WireKind.INT64, rk.WireKind.FLOAT):
                continue
            plain = plain_key(records, stats)
            dtype = "int64" if stats.kind is rk.WireKind.INT64 else "float32"
            what = "one value" if stats.scalar else "lists of values"
            yield rk.Adoption(
                claims=plain.claims,
                name=stats.key,
                options={"dtype": dtype},
                keys=plain.keys,
                description=f"{dtype}: {what} {plain.every}",
                optional=plain.optional,
                sequence=plain.sequence,
            )

    def wire_spec(self) -> rk.WireSpec:
        kind = {
            "int64": rk.WireKind.INT64,
            "int32": rk.WireKind.INT64,
            "float32": rk.WireKind.FLOAT,
            "float64": rk.WireKind.INT64,
            "bool": rk.WireKind.INT64,
            "str": rk.WireKind.BYTES,
        }[self.options.dtype]
        return rk.WireSpec((rk.WireFeature("", kind, (), f"the {self.options.dtype} value"),))

    # -- showing, counting and converting (optional capabilities) ------------------

    def tfds_features(self) -> tuple[rk.TfdsFeature, ...]:
        """TFDS's ``Tensor`` of shape ``()`` and the same dtype reads the stored number
        (ints and bools are int64 values, as TFDS stores them), ``Text`` the text
        (rk.TfdsDescribed). float64 is stored as its bits, which TFDS would read as an
        integer."""
        dtype = self.options.dtype
        if dtype == "float64":
            raise ValueError(
                "float64 is stored as the int64 bits of the double, which TFDS would read as an integer "
                "(dtype: float32 stores a float TFDS reads)"
            )
        if dtype == "str":
            return (text_feature(),)
        kind = rk.WireKind.FLOAT if dtype == "float32" else rk.WireKind.INT64
        return (rk.TfdsFeature(tensor_entry(dtype), kind),)

    def hf_feature(self) -> rk.HfFeature:
        """Hugging Face's ``Value`` of the same dtype (rk.HfDescribed)."""
        return rk.HfFeature(value_entry(self.options.dtype), plain_value(self.decode_numpy))

    def summarize(self, value: Any) -> rk.Statistics:
        """Its value, or its length as text (rk.Summarized)."""
        if isinstance(value, str):
            return {"length": [float(len(value))]}
        return {"values": [float(value)]}

    def to_native(self, request: rk.NativeRequest) -> rk.NativeField:
        """Kept as it is; a list of numbers that TFDS recorded as audio without a sample
        rate cannot become an audio file (rk.Convertible)."""
        if request.audio is not None and "Audio" in request.description:
            raise ValueError(
                f"TFDS recorded no sample rate for this audio, so it cannot be stored as {request.audio}; "
                "convert without --audio to keep its samples as numbers"
            )
        return rk.NativeField(dict(request.options))

    def encode(self, value: Any) -> rk.WireValues:
        dtype = self.options.dtype
        if isinstance(value, np.generic):
            value = value.item()
        if dtype == "str":
            if not isinstance(value, str):
                raise rk.errors.InvalidValueError(f"expected a str, got {type(value).__name__}")
            try:
                return {"": value.encode("utf-8")}
            except UnicodeEncodeError as exc:
                raise rk.errors.InvalidValueError(f"not encodable as UTF-8: {exc.reason}") from None
        if dtype == "bool":
            if not isinstance(value, bool):
                raise rk.errors.InvalidValueError(f"expected a bool, got {type(value).__name__}")
            return {"": int(value)}
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise rk.errors.InvalidValueError(f"expected a number, got {type(value).__name__}")
        if dtype in _INT_RANGE:
            if not isinstance(value, numbers.Integral):
                raise rk.errors.InvalidValueError(f"expected an integer, got {value!r}")
            low, high = _INT_RANGE[dtype]
            if not low <= int(value) <= high:
                raise rk.errors.InvalidValueError(f"{value} is outside the {dtype} range")
            return {"": int(value)}
        if dtype == "float32":
            number = float(value)
            if math.isfinite(number) and abs(number) > float(np.finfo(np.float32).max):
                raise rk.errors.InvalidValueError(f"{value} overflows float32")
            return {"": number}
        return {"": int(np.float64(value).view(np.int64))}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        value = wire[""]
        dtype = self.options.dtype
        if dtype == "str":
            try:
                return bytes(value).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise rk.errors.DecodeError(f"stored text is not valid UTF-8 at byte {exc.start}") from None
        if dtype == "bool":
            return bool(value)
        if dtype == "float32":
            return float(value)
        if dtype == "float64":
            return float(np.int64(value).view(np.float64))
        return int(value)

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> list[Any] | None:
        """Numbers of many records at once (:class:`recordkit.DecodedInColumns`): the
        Python values ``decode_numpy`` gives, from one array; text from its column
        (:func:`~recordkit_codecs.text.utf8_column`)."""
        values = wire[""]
        dtype = self.options.dtype
        if dtype == "str":
            return utf8_column(values)
        if dtype == "bool":
            return (values != 0).tolist()  # type: ignore[no-any-return]
        if dtype == "float64":
            return values.view(np.float64).tolist()  # type: ignore[no-any-return]
        return values.tolist()  # type: ignore[no-any-return]

    def decode_tf_source(self) -> rk.DecodeSource:
        """:func:`decode_scalar_tf` with this field's dtype: what decode_tf runs and
        ``recordkit codegen`` copies."""
        return rk.DecodeSource(decode_scalar_tf, {"dtype": self.options.dtype})


def decode_scalar_tf(wire: Mapping[str, Any], dtype: str) -> Any:
    """The batched TensorFlow decode of a scalar field of ``dtype`` (TensorFlow only:
    generated parser modules carry a copy of this function)."""
    import tensorflow as tf

    value = wire[""]
    if dtype == "bool":
        return tf.not_equal(value, 0)
    if dtype == "int32":
        return tf.cast(value, tf.int32)
    if dtype == "float64":
        return tf.bitcast(value, tf.float64)
    return value


@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    """Register the ``scalar`` codec."""
    registry.register(ScalarCodec)
