"""The conformance kit checks each decode a codec adds against its batched decode: a
padded, window, per-record or column decode that gives other values fails it, naming the
check."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.testing import ConformanceError, check_codec
from recordkit_codecs.image import ImageCodec

LINES = [np.array([[0.0, 1.0], [2.0, 3.0]], np.float32), np.array([[4.0, 5.0]], np.float32)]


class Points(rk.Codec[rk.CodecOptions]):
    """Points ``[n, 2]``, the three methods only."""

    name = "points"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.FLOAT, (None, 2)),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": np.asarray(value, np.float32).reshape(-1, 2)}

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        return np.asarray(wire[""], np.float32).reshape(-1, 2)


class PadsWithSeven(Points):
    """A padded decode that pads with 7 where the codec's pad value is 0."""

    name = "pads-with-seven"

    def decode_tf_padded(self, wire: Mapping[str, Any]) -> tuple[Any, Any]:
        import tensorflow as tf

        ragged = wire[""]
        return ragged.to_tensor(default_value=7.0), tf.cast(
            tf.stack([ragged.row_lengths(), tf.fill([ragged.nrows()], tf.constant(2, tf.int64))], 1), tf.int64
        )


class PadsRight(PadsWithSeven):
    name = "pads-right"

    def pad_value(self) -> float:
        return 7.0


class OneRecordDiffers(Points):
    """Decoded per record, where a batch of one gives other values."""

    name = "one-record-differs"

    def decodes_per_record(self) -> bool:
        return True

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        values = wire[""]
        return values * 2.0 if values.shape[0] == 1 else values


class ShiftedWindow(ImageCodec):
    """An image codec whose window decode is one row off."""

    name = "shifted-window"

    def decode_tf_window(self, wire: Mapping[str, Any], window: Any) -> Any:
        import tensorflow as tf

        shifted = tf.concat([tf.minimum(window[:1] + 1, window[2:3]), window[1:]], 0)
        return super().decode_tf_window(wire, shifted)


class Vector(rk.Codec[rk.CodecOptions]):
    """Three float32 numbers, decoded many records at once by ``decode_numpy_column``."""

    name = "vector"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.FLOAT, (3,)),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": np.asarray(value, np.float32).reshape(3)}

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        return np.array(wire[""], np.float32).reshape(3)

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> list[np.ndarray]:
        return [row.copy() for row in np.asarray(wire[""], np.float32).reshape(count, 3)]


class VectorOffByOne(Vector):
    name = "vector-off-by-one"

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> list[np.ndarray]:
        return [row + 1 for row in super().decode_numpy_column(wire, count)]


class VectorViews(Vector):
    """Rows that are views of one block: they would keep every record's values alive."""

    name = "vector-views"

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> list[np.ndarray]:
        return list(np.array(wire[""], np.float32).reshape(count, 3))


class VectorOfFloat64(Vector):
    name = "vector-of-float64"

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> list[np.ndarray]:
        return [row.astype(np.float64) for row in super().decode_numpy_column(wire, count)]


VECTORS = [[0.0, 1.5, -2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]


def test_a_column_decode_equal_to_the_record_decode_passes_the_kit_and_one_that_differs_fails_it(
    tmp_path: Path,
) -> None:
    report = check_codec(Vector(), VECTORS, tmp_path=tmp_path, optional=False, sequence=False)
    assert "column decode equals the record-by-record decode" in report.checks
    with pytest.raises(ConformanceError, match=r"\[column decode\] case 0"):
        check_codec(VectorOffByOne(), VECTORS, tmp_path=tmp_path, optional=False, sequence=False)
    with pytest.raises(ConformanceError, match=r"\[column decode\] case 1.*shares memory"):
        check_codec(VectorViews(), VECTORS, tmp_path=tmp_path, optional=False, sequence=False)
    with pytest.raises(ConformanceError, match=r"\[column decode\] case 0.*float64"):
        check_codec(VectorOfFloat64(), VECTORS, tmp_path=tmp_path, optional=False, sequence=False)


def test_a_padded_decode_that_pads_otherwise_fails_the_kit(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"\[padded decode\] batch 0 of 2"):
        check_codec(PadsWithSeven(), LINES, tmp_path=tmp_path, optional=False, sequence=False)
    report = check_codec(PadsRight(), LINES, tmp_path=tmp_path, optional=False, sequence=False)
    assert "padded decode equals the full decode, padded" in report.checks


def test_a_per_record_decode_that_differs_fails_the_kit(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"\[per-record decode\] case 0"):
        check_codec(OneRecordDiffers(), LINES, tmp_path=tmp_path, optional=False, sequence=False)


def test_a_window_decode_off_by_a_row_fails_the_kit(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    pictures = [
        rng.integers(0, 256, (5, 6, 3), dtype=np.uint8),
        rng.integers(0, 256, (4, 3, 3), dtype=np.uint8),
    ]
    options = {"format": "png", "channels": 3}
    report = check_codec(ImageCodec(options), pictures, tmp_path=tmp_path, optional=False, sequence=False)
    assert "window decode equals the full decode, cut" in report.checks
    with pytest.raises(ConformanceError, match=r"\[window decode\] case 0, window \[0, 0, 5, 6\]"):
        check_codec(ShiftedWindow(options), pictures, tmp_path=tmp_path, optional=False, sequence=False)


def test_a_codec_that_writes_its_own_decode_tf_and_no_source_is_not_generated() -> None:
    assert Points().decode_tf_source() is not None  # derived: the values as parsed
    assert OneRecordDiffers().decode_tf_source() is None  # its own decode, which codegen cannot copy


def test_a_codec_class_that_declares_raster_without_the_mix_in_is_refused() -> None:
    with pytest.raises(TypeError, match=r"declares raster but is not a recordkit.Raster"):

        class Depth(Points):
            name = "depth"
            raster = "pixels"


class RawVector(rk.Codec[rk.CodecOptions]):
    """Three float32 numbers stored as their raw bytes (``rk.DecodedAsRawArray``)."""

    name = "raw-vector"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.BYTES, ()),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": np.asarray(value, "<f4").reshape(3).tobytes()}

    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        return np.frombuffer(bytes(wire[""]), "<f4").astype(np.float32)

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        import tensorflow as tf

        return tf.reshape(tf.io.decode_raw(wire[""], tf.float32), [-1, 3])

    def raw_array(self) -> rk.RawArray | None:
        return rk.RawArray("", "float32", (3,))


class RawVectorAsFloat64(RawVector):
    """Declares float64 raw arrays of its float32 bytes: each record would read as 1.5 numbers."""

    name = "raw-vector-as-float64"

    def raw_array(self) -> rk.RawArray | None:
        return rk.RawArray("", "float64", (3,))


class RawVectorOfAnotherKey(RawVector):
    name = "raw-vector-of-another-key"

    def raw_array(self) -> rk.RawArray | None:
        return rk.RawArray("values", "float32", (3,))


def test_a_raw_array_read_as_the_codec_decodes_passes_the_kit_and_one_read_otherwise_fails_it(
    tmp_path: Path,
) -> None:
    report = check_codec(RawVector(), VECTORS, tmp_path=tmp_path, optional=False, sequence=False)
    assert "raw array equals the batched and the numpy decode" in report.checks
    with pytest.raises(ConformanceError, match=r"\[raw array\] case 0"):
        check_codec(RawVectorAsFloat64(), VECTORS, tmp_path=tmp_path, optional=False, sequence=False)
    with pytest.raises(ConformanceError, match=r"\[raw array\] raw-vector-of-another-key: wire spec"):
        check_codec(RawVectorOfAnotherKey(), VECTORS, tmp_path=tmp_path, optional=False, sequence=False)
