"""The ``tensor`` codec: a numpy array of a declared dtype, fixed or variable shape.

Arrays are stored as their raw little-endian bytes in C order under the field's main
key (one bytes value per record, so a float64 tensor costs 8 bytes a number and comes
back exact, instead of being rounded to float32 or bloated into an int64 list). When
the declared ``shape`` has variable dimensions (``None``), or is ``None`` altogether
(any rank), each record's shape is stored too, as int64 under ``<field>/shape``; a
fully fixed shape lives only in the schema.

Which values a field takes:

* numpy arrays and numpy scalars whose dtype casts *safely* to the declared one
  (numpy's ``can_cast(..., "safe")``: ``uint8`` into ``int16`` or ``float32`` into
  ``float64`` are fine; ``float64`` into ``float32`` or ``int64`` into ``int32`` are an
  error, never a silent narrowing: cast explicitly with ``.astype``);
* Python numbers and nested lists, whose values must be representable: integers must
  fit the integer dtype exactly, floats may round to a narrower float but never
  overflow it, and floats are never stored in an integer or bool field.

Decoding gives numpy arrays of the declared dtype and the record's shape. In
TensorFlow (``tf.io.decode_raw``, in the graph): a fixed shape decodes to a dense
``[B, *shape]`` tensor; a shape with ``None`` dimensions to a ragged tensor with one
ragged dimension per ``None`` (``[B, (n), 3]`` for ``shape: [null, 3]``); any rank
(``shape: null``) to a dict ``{"values": [B, (n)] ragged flat values, "shape": [B,
(rank)] int64}``.

``stored: numbers`` reads (and writes) arrays stored as a flat list of numbers, int64
for integer and bool dtypes and float for float ones, as TensorFlow Datasets stores its
``Tensor`` features: no shape is stored, so the declared shape may have at most one
``None`` dimension, which each record's count of numbers gives.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import numpy as np
import pydantic

import recordkit as rk
from recordkit_codecs._foreign import formats
from recordkit_codecs._hf import plain_value, value_entry

__all__ = ["SUPPORTED_DTYPES", "TensorCodec", "TensorOptions"]

#: The dtypes a tensor field can declare (numpy names).
SUPPORTED_DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)

#: With ``stored: numbers``: the wire kind of each dtype (as TFDS stores them; uint64
#: and complex values have no lossless int64 or float form).
_NUMBER_KINDS = {
    **dict.fromkeys(("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"), "int64"),
    **dict.fromkeys(("float16", "float32", "float64"), "float"),
}


class TensorOptions(rk.CodecOptions):
    """Options of the ``tensor`` codec."""

    dtype: str = pydantic.Field(default="float32", description="numpy dtype name of the stored values.")
    shape: list[int | None] | None = pydantic.Field(
        default=None, description="Shape of every record's array; None dims vary per record; None: any rank."
    )
    stored: Literal["bytes", "numbers"] = pydantic.Field(
        default="bytes",
        description=(
            "bytes: raw little-endian values (recordkit's); numbers: a flat int64 or float list, "
            "as TensorFlow Datasets stores tensors (a shape with at most one null dimension)."
        ),
    )

    @pydantic.field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        try:
            name: str | None = str(np.dtype(value).name)
        except TypeError:
            name = None
        if name is None or name not in SUPPORTED_DTYPES:
            raise ValueError(f"unsupported dtype {value!r} (supported: {', '.join(SUPPORTED_DTYPES)})")
        return name

    @pydantic.field_validator("shape")
    @classmethod
    def _valid_shape(cls, value: list[int | None] | None) -> list[int | None] | None:
        if value is not None and any(dim is not None and dim < 0 for dim in value):
            raise ValueError(f"dimensions must be non-negative or null, got {value}")
        if value is not None and math.prod(dim for dim in value if dim is not None) > 2**63 - 1:
            raise ValueError(f"shape {value} holds more values than int64 can count")
        return value

    @pydantic.model_validator(mode="after")
    def _numbers_need_a_shape(self) -> TensorOptions:
        if self.stored != "numbers":
            return self
        if self.shape is None or self.shape.count(None) > 1:
            raise ValueError(
                f"stored: numbers keeps no shape, so the declared shape needs at most one null "
                f"dimension (got {self.shape})"
            )
        if self.dtype not in _NUMBER_KINDS:
            raise ValueError(f"stored: numbers holds int64 or float values, not {self.dtype}")
        return self

    @property
    def is_fixed(self) -> bool:
        """True when the shape is fully declared (no per-record shape is stored)."""
        return self.shape is not None and None not in self.shape


class TensorCodec(rk.Codec[TensorOptions]):
    """A numpy array per record, stored as raw bytes with its shape."""

    name = "tensor"
    version = "1"

    def data_type(self) -> str:
        """The Croissant data type of its values (:class:`recordkit.DataTyped`)."""
        return "sc:Float" if str(self.options.dtype).startswith("float") else "sc:Integer"

    options_model = TensorOptions
    summary = "a numpy array of any dtype, fixed or variable shape, stored as raw bytes"
    adopt_order = 300

    @classmethod
    def adopt(cls, records: rk.ForeignRecords) -> Iterator[rk.Adoption | rk.LeftOut]:
        """Foreign raw arrays: one bytes value per record (not text, or under a key named
        ``...raw``) whose length is, in every record, the product of int64 dimension keys
        (``height``, ``width`` and ``depth`` or ``channels``) times 1 (uint8) or 4
        (float32); or ``height x width`` times one channel count that no key stores
        (the segmentation tutorial's ``image_raw``), proposed as a constant dimension.
        Fields may share the dimension keys (an image and its mask)."""
        for stats in records.unclaimed():
            key = stats.key
            if records.claimed(key) or stats.kind is not rk.WireKind.BYTES or not stats.scalar:
                continue
            if "binary" not in formats(stats) and not re.search(r"raw", key):
                continue
            found = _raw_dims(records, stats)
            if found is not None:
                dims, dtype = found
                yield _raw_array(
                    key, [*dims], dtype, f"raw {dtype} values in {key}, shaped by {', '.join(dims)}"
                )
                continue
            implicit = _implicit_channels(records, stats)
            if implicit is not None:
                yield implicit

    def __init__(self, options: TensorOptions | Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        self._dtype = np.dtype(self.options.dtype)
        self._wire_dtype = self._dtype.newbyteorder("<")
        #: A fixed shape's dimensions and bytes (None: stored per record), computed once
        #: rather than for every record decoded.
        self._fixed_shape = (
            tuple(d for d in self.options.shape or () if d is not None) if self.options.is_fixed else None
        )
        self._fixed_bytes = (
            None if self._fixed_shape is None else math.prod(self._fixed_shape) * self._dtype.itemsize
        )

    def wire_bytes(self) -> dict[str, int]:
        """Raw values of a fixed shape: every record's bytes are the shape's (rk.FixedWireBytes)."""
        if self.options.stored == "numbers" or self._fixed_bytes is None:
            return {}
        return {"": self._fixed_bytes}

    def raw_array(self) -> rk.RawArray | None:
        """A fixed shape stored as bytes is one raw little-endian array a record
        (rk.DecodedAsRawArray): what ``decode_tensor_tf`` and ``decode_numpy`` read."""
        if self.options.stored == "numbers" or self._fixed_shape is None:
            return None
        return rk.RawArray("", self._dtype.name, self._fixed_shape)

    def wire_spec(self) -> rk.WireSpec:
        shape = self.options.shape
        if self.options.stored == "numbers":
            kind = rk.WireKind.INT64 if _NUMBER_KINDS[self.options.dtype] == "int64" else rk.WireKind.FLOAT
            count = math.prod(d for d in shape or () if d is not None) if self.options.is_fixed else None
            what = f"the {self.options.dtype} values as a flat list, C order"
            return rk.WireSpec((rk.WireFeature("", kind, (count,), what),))
        what = f"raw little-endian {self.options.dtype} values, C order"
        features = [rk.WireFeature("", rk.WireKind.BYTES, (), what)]
        if not self.options.is_fixed:
            rank: tuple[int | None, ...] = (None,) if shape is None else (len(shape),)
            features.append(rk.WireFeature("shape", rk.WireKind.INT64, rank, "the array's shape"))
        return rk.WireSpec(tuple(features))

    # -- encoding -------------------------------------------------------------------

    # -- showing, counting and converting (optional capabilities) ------------------

    def hf_feature(self) -> rk.HfFeature:
        """Nested Hugging Face ``List``\\ s of ``Value``, one per dimension, a fixed
        dimension as the list's ``length`` (rk.HfDescribed); a tensor of any rank has
        no such feature."""
        shape = self.options.shape
        if shape is None:
            raise ValueError("a Hugging Face feature needs the tensor's rank: give the field a shape")
        if not shape:
            return rk.HfFeature(value_entry(self.options.dtype), plain_value(self.decode_numpy))
        entry: dict[str, Any] = value_entry(self.options.dtype)
        for size in reversed(shape):
            entry = {"feature": entry, "_type": "List", **({"length": size} if size is not None else {})}
        return rk.HfFeature(entry, plain_value(self.decode_numpy))

    def summarize(self, value: Any) -> rk.Statistics:
        """Its values (rk.Summarized)."""
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            return {"length": [float(len(str(value)))]}
        return {"values": array.astype(np.float64).reshape(-1).tolist()}

    def to_native(self, request: rk.NativeRequest) -> rk.NativeField:
        """Tensors are stored as raw bytes (rk.Convertible)."""
        options = dict(request.options)
        options.pop("stored", None)
        return rk.NativeField(options)

    def encode(self, value: Any) -> rk.WireValues:
        array = self._as_array(value)
        declared = self.options.shape
        if declared is not None and (
            len(declared) != array.ndim
            or any(d is not None and d != n for d, n in zip(declared, array.shape, strict=True))
        ):
            raise rk.errors.InvalidValueError(
                f"array of shape {list(array.shape)} does not fit the field's shape {declared} "
                "(null dimensions may vary)"
            )
        if self.options.stored == "numbers":
            return {"": self._numbers(array)}
        data = np.ascontiguousarray(array.astype(self._wire_dtype, copy=False)).tobytes()
        wire: dict[str, Any] = {"": data}
        if not self.options.is_fixed:
            wire["shape"] = np.asarray(array.shape, dtype=np.int64)
        return wire

    def _numbers(self, array: np.ndarray) -> np.ndarray:
        """``array`` as the flat int64 or float32 list ``stored: numbers`` keeps; float
        values that float32 cannot hold exactly are refused, never rounded silently."""
        flat = array.reshape(-1)
        if _NUMBER_KINDS[self.options.dtype] == "int64":
            return flat.astype(np.int64)
        stored = flat.astype(np.float32)
        if array.dtype == np.float64 and not np.array_equal(stored.astype(np.float64), flat, equal_nan=True):
            raise rk.errors.InvalidValueError(
                "stored: numbers keeps float values as float32, and this float64 array holds values "
                "float32 cannot hold exactly (store it with stored: bytes)"
            )
        return stored

    def _as_array(self, value: Any) -> np.ndarray:
        target = self._dtype
        if isinstance(value, (np.ndarray, np.generic)):
            array = np.asarray(value)
            if array.dtype != target and not np.can_cast(array.dtype, target, "safe"):
                raise rk.errors.InvalidValueError(
                    f"an array of dtype {array.dtype} cannot be stored as {target} without loss; "
                    f"cast it explicitly (value.astype({target.name!r}))"
                )
            return array.astype(target, copy=False)
        if isinstance(value, (str, bytes, Mapping)) or value is None:
            raise rk.errors.InvalidValueError(
                f"expected a numpy array or (nested lists of) numbers, got {type(value).__name__}"
            )
        try:
            array = np.asarray(value)
        except (ValueError, TypeError) as exc:
            raise rk.errors.InvalidValueError(f"not a rectangular array of numbers: {exc}") from None
        if array.size == 0:
            return array.astype(target)
        return _convert_python(array, target)

    # -- decoding -------------------------------------------------------------------

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        if self.options.stored == "numbers":
            return self._decode_numbers(np.asarray(wire[""]).reshape(-1))
        data = bytes(wire[""])
        shape = self._fixed_shape
        if shape is None:
            shape = tuple(int(d) for d in np.asarray(wire["shape"]).reshape(-1))
        elif len(data) == self._fixed_bytes:
            return np.frombuffer(data, dtype=self._wire_dtype).astype(self._dtype).reshape(shape)
        expected = math.prod(shape) * self._dtype.itemsize
        if len(data) != expected or any(d < 0 for d in shape):
            raise rk.errors.DecodeError(
                f"stored tensor has {len(data)} bytes; shape {list(shape)} of {self._dtype} needs {expected}"
            )
        return np.frombuffer(data, dtype=self._wire_dtype).astype(self._dtype).reshape(shape)

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> list[np.ndarray] | None:
        """Tensors of a fixed shape stored as bytes, many records at once
        (:class:`recordkit.DecodedInColumns`): the records' bytes joined and read as one
        array, each record's tensor copied out of it (an array of its own, as
        ``decode_numpy`` gives); other tensors record by record."""
        if self._fixed_shape is None or self.options.stored == "numbers":
            return None
        data = wire[""]
        if any(len(item) != self._fixed_bytes for item in data):
            return None
        block = np.frombuffer(b"".join(data), dtype=self._wire_dtype).reshape(count, *self._fixed_shape)
        return [row.astype(self._dtype) for row in block]

    def _decode_numbers(self, values: np.ndarray) -> np.ndarray:
        shape = list(self.options.shape or ())
        fixed = math.prod(d for d in shape if d is not None)
        if (
            (fixed == 0 and values.size)
            or (fixed and values.size % fixed)
            or (None not in shape and values.size != fixed)
        ):
            raise rk.errors.DecodeError(
                f"the record stores {values.size} numbers, which shape {shape} cannot hold"
            )
        dims = [(values.size // fixed if fixed else 0) if d is None else d for d in shape]
        return values.astype(self._dtype).reshape(dims)

    def decode_tf_source(self) -> rk.DecodeSource:
        """:func:`decode_tensor_tf` with this field's dtype and shape: what decode_tf runs
        and ``recordkit codegen`` copies (with the helpers it calls)."""
        shape = self.options.shape
        if self.options.stored == "numbers":
            return rk.DecodeSource(
                decode_tensor_numbers_tf,
                {"dtype": self._dtype.name, "shape": list(shape or ())},
                helpers=(_nest,),
            )
        return rk.DecodeSource(
            decode_tensor_tf,
            {
                "dtype": self._dtype.name,
                "itemsize": self._dtype.itemsize,
                "shape": None if shape is None else list(shape),
            },
            helpers=(_decode_raw_tf, _nest),
        )


def decode_tensor_tf(
    wire: Mapping[str, Any], dtype: str, itemsize: int, shape: list[int | None] | None
) -> Any:
    """The batched TensorFlow decode of a tensor field of ``dtype`` (``itemsize`` bytes
    a value) and declared ``shape``: dense for a fixed shape, ragged for ``None``
    dimensions, ``{"values", "shape"}`` for any rank (generated parser modules carry a
    copy of this function)."""
    import tensorflow as tf

    data = wire[""]
    if shape is not None and None not in shape:
        return tf.reshape(_decode_raw_tf(data, dtype), [-1, *(int(d) for d in shape if d is not None)])
    dims = wire["shape"]
    counts = tf.reduce_prod(dims, axis=1)
    check = tf.debugging.assert_equal(
        tf.strings.length(data, unit="BYTE"),
        tf.cast(counts * itemsize, tf.int32),
        message=f"stored {dtype} tensor bytes do not match its stored shape",
    )
    with tf.control_dependencies([check] if check is not None else []):  # None when eager
        flat = _decode_raw_tf(tf.strings.reduce_join(data), dtype)
    if shape is None:
        return {"values": tf.RaggedTensor.from_row_lengths(flat, counts), "shape": dims}
    return _nest(flat, dims, shape)


def decode_tensor_numbers_tf(wire: Mapping[str, Any], dtype: str, shape: list[int | None]) -> Any:
    """The batched TensorFlow decode of a tensor field stored as a flat list of numbers
    (``stored: numbers``, as TFDS stores tensors): dense ``[B, *shape]`` for a fixed
    shape, else ragged in the one ``None`` dimension, which each record's count gives
    (generated parser modules carry a copy of this function)."""
    import tensorflow as tf

    data = wire[""]
    if None not in shape:
        return tf.reshape(tf.cast(data, tf.as_dtype(dtype)), [-1, *(int(d) for d in shape if d is not None)])
    fixed = 1
    for d in shape:
        fixed *= 1 if d is None else int(d)
    counts = tf.cast(data.row_lengths(), tf.int64)
    check = tf.debugging.Assert(
        tf.reduce_all(tf.equal(tf.math.floormod(counts, max(fixed, 1)), 0)),
        [f"tensor codec: a record's count of numbers does not fit shape {shape}"],
    )
    with tf.control_dependencies([check]):
        flat = tf.cast(tf.identity(data.flat_values), tf.as_dtype(dtype))
    free = counts // max(fixed, 1)
    dims = tf.stack(
        [free if d is None else tf.fill(tf.shape(counts), tf.constant(int(d), tf.int64)) for d in shape],
        axis=1,
    )
    return _nest(flat, dims, shape)


def _decode_raw_tf(data: Any, dtype: str) -> Any:
    """Little-endian raw bytes as ``dtype`` values (tf.io.decode_raw has no bool or
    unsigned 32/64-bit output: those are read as bytes or signed and converted)."""
    import tensorflow as tf

    if dtype == "bool":
        return tf.not_equal(tf.io.decode_raw(data, tf.uint8), 0)
    if dtype in ("uint32", "uint64"):
        signed = tf.io.decode_raw(data, tf.int32 if dtype == "uint32" else tf.int64)
        return tf.bitcast(signed, tf.uint32 if dtype == "uint32" else tf.uint64)
    return tf.io.decode_raw(data, tf.as_dtype(dtype))


# -- adopting foreign raw arrays --------------------------------------------------------------


def _raw_array(key: str, shape: list[str | int], dtype: str, description: str) -> rk.Adoption:
    """A ``tensor`` field for ``key``, shaped by the keys (and constant dimensions) of
    ``shape``."""
    return rk.Adoption(
        claims=(key, *(dim for dim in shape if isinstance(dim, str))),
        name=re.sub(r"[/_]?raw$", "", key) or key,
        options={"dtype": dtype, "shape": [dim if isinstance(dim, int) else None for dim in shape]},
        keys={"": key, "shape": shape},
        description=description,
    )


def _raw_dims(records: rk.ForeignRecords, stats: rk.ForeignKey) -> tuple[list[str], str] | None:
    """The dimension keys and dtype that account for every sampled size of ``stats``."""
    height = records.int_scalar("height", "image/height", "rows")
    width = records.int_scalar("width", "image/width", "cols")
    depth = records.int_scalar("depth", "channels", "image/depth", "image/channels")
    if height is None or width is None:
        return None
    sizes = stats.sizes
    candidates: list[list[str]] = [[height, width, depth], [height, width]] if depth else [[height, width]]
    for dims in candidates:
        products = [math.prod(int(records[d].values[i][0]) for d in dims) for i in range(len(sizes))]
        for dtype, itemsize in (("uint8", 1), ("float32", 4)):
            if all(size == product * itemsize for size, product in zip(sizes, products, strict=True)):
                return dims, dtype
    return None


def _implicit_channels(records: rk.ForeignRecords, stats: rk.ForeignKey) -> rk.Adoption | rk.LeftOut | None:
    """Raw pixels whose channel count no key stores (``image_raw`` beside ``height`` and
    ``width`` only): when the byte length is the same whole multiple of ``height x
    width`` in every record inspected, that multiple is the channel count, proposed as a
    constant dimension (``[height, width, 3]``). Otherwise no shape can be known, and a
    note says what was seen. None when there are no height and width keys."""
    key = stats.key
    height = records.int_scalar("height", "image/height", "rows")
    width = records.int_scalar("width", "image/width", "cols")
    if height is None or width is None:
        return None
    sizes = [int(size or 0) for size in stats.sizes]
    heights, widths = records[height].values, records[width].values
    areas = [int(heights[i][0]) * int(widths[i][0]) for i in range(len(sizes))]
    ratios = {size // area for size, area in zip(sizes, areas, strict=True) if area > 0}
    channels = ratios.pop() if len(ratios) == 1 else 0
    if channels > 0 and all(size == area * channels for size, area in zip(sizes, areas, strict=True)):
        return _raw_array(
            key,
            [height, width, channels],
            "uint8",
            f"raw uint8 pixels in {key}, shaped by {height}, {width} and {channels} channels that no "
            f"key stores ({key} holds {height} x {width} x {channels} bytes in every record inspected)",
        )
    pairs = list(zip(sizes, areas, strict=True))[:3]
    shown = ", ".join(f"{size} bytes for {area}" for size, area in pairs)
    return rk.LeftOut(
        (key,),
        f"{key}: raw bytes beside {height} and {width}, but not the same whole number of bytes per "
        f"{height} x {width} in every record ({shown} ...), so no shape can be proposed",
    )


def _convert_python(array: np.ndarray, target: np.dtype[Any]) -> np.ndarray:
    """Python numbers to ``target``, refusing conversions that change values."""
    kind, want = array.dtype.kind, target.kind
    if kind not in "biufc":
        raise rk.errors.InvalidValueError(f"expected numbers, got values of dtype {array.dtype}")
    if kind == "c" and want != "c":
        raise rk.errors.InvalidValueError(f"complex values cannot be stored as {target}")
    if kind == "f" and want in "biu":
        raise rk.errors.InvalidValueError(f"float values cannot be stored as {target} (cast them explicitly)")
    with np.errstate(over="ignore", invalid="ignore"):
        converted = array.astype(target)
    if kind in "biu":
        exact = converted.astype(array.dtype) == array if want in "biu" else converted == array
        if not np.all(exact):
            bad = array.reshape(-1)[int(np.argmin(np.asarray(exact).reshape(-1)))]
            raise rk.errors.InvalidValueError(f"value {bad} does not fit {target}")
    elif want in "fc":
        overflow = np.isinf(converted) & np.isfinite(array)
        if np.any(overflow):
            bad = array.reshape(-1)[int(np.argmax(overflow.reshape(-1)))]
            raise rk.errors.InvalidValueError(f"value {bad} overflows {target}")
    return converted


def _nest(flat: Any, dims: Any, shape: list[int | None]) -> Any:
    """Give each record's flat values its stored shape ``dims[b]``: one ragged
    dimension per ``None`` of ``shape``, uniform (static) ones for its fixed dims."""
    import tensorflow as tf

    rank = len(shape)
    split = rank  # dims[split:] are fixed: a dense suffix
    while split > 1 and shape[split - 1] is not None:
        split -= 1
    values = tf.reshape(flat, [-1, *(int(d) for d in shape[split:] if d is not None)])
    for level in range(split - 1, 0, -1):
        fixed = shape[level]
        if fixed is not None:
            values = tf.RaggedTensor.from_uniform_row_length(values, int(fixed))
        else:
            rows_per_record = tf.reduce_prod(dims[:, :level], axis=1)
            values = tf.RaggedTensor.from_row_lengths(values, tf.repeat(dims[:, level], rows_per_record))
    if shape[0] is not None:
        return tf.RaggedTensor.from_uniform_row_length(values, int(shape[0]))
    return tf.RaggedTensor.from_row_lengths(values, dims[:, 0])


@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    """Register the ``tensor`` codec."""
    registry.register(TensorCodec)
