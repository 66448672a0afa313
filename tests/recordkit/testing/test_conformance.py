"""The conformance kit itself: it passes a good codec and catches broken ones."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.testing import BadInput, CodecCase, ConformanceError, assert_values_equal, check_codec
from recordkit_codecs.scalar import ScalarCodec


def test_scalar_codec_conforms_for_every_dtype(tmp_path: Path) -> None:
    cases: dict[str, list[Any]] = {
        "int64": [0, -(2**63), 2**63 - 1, 42],
        "int32": [-(2**31), 7],
        "float32": [CodecCase(0.1, atol=1e-7), CodecCase(-3.5)],
        "float64": [0.1, 1e300, -0.0, 5e-324],
        "bool": [True, False],
        "str": ["", "héllo wörld", "日本語"],
    }
    for dtype, values in cases.items():
        report = check_codec(
            ScalarCodec({"dtype": dtype}),
            values,
            tmp_path=tmp_path / dtype,
            bad_inputs=[BadInput(object(), match="expected")],
        )
        assert "plain field: tf.data batched decode" in report.checks
        assert "optional field: numpy decode" in report.checks
        assert "sequence field: tf.data batch of 1" in report.checks


def test_the_pytest_fixture_runs_the_check(codec_conformance: Any) -> None:
    report = codec_conformance(ScalarCodec, [1, 2], options={"dtype": "int32"})
    assert report.codec == "scalar"


class _LossyCodec(rk.Codec[rk.CodecOptions]):
    """Stores ints but decodes them off by one: the kit must notice."""

    name = "lossy"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": int(value)}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return int(wire[""]) + 1

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]


class _AcceptsAnything(_LossyCodec):
    name = "accepting"

    def encode(self, value: Any) -> rk.WireValues:
        return {"": 0}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return 0


class _ExtraKeys(_AcceptsAnything):
    name = "extra-keys"

    def encode(self, value: Any) -> rk.WireValues:
        return {"": 0, "surprise": 1}


def test_a_lossy_numpy_decode_is_caught(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"numpy decode, case 0"):
        check_codec(_LossyCodec(), [1, 2], tmp_path=tmp_path)


def test_an_accepted_bad_input_is_caught(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"was accepted"):
        check_codec(_AcceptsAnything(), [0], tmp_path=tmp_path, bad_inputs=[BadInput("nope", match=".")])


def test_keys_outside_the_wire_spec_are_caught(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"not in the wire spec"):
        check_codec(_ExtraKeys(), [0], tmp_path=tmp_path)


def test_values_compare_across_tf_numpy_and_python() -> None:
    import tensorflow as tf

    assert_values_equal("abc", tf.constant(b"abc"))
    assert_values_equal([[1, 2], [3]], tf.ragged.constant([[1, 2], [3]]))
    assert_values_equal({"a": 1.0}, {"a": np.float32(1.0 + 1e-7)}, atol=1e-6)
    with pytest.raises(AssertionError, match=r"value\.a"):
        assert_values_equal({"a": 1.0}, {"a": 2.0})
    with pytest.raises(AssertionError, match="shape"):
        assert_values_equal(np.zeros((2, 2)), np.zeros((2, 3)))
