"""The conformance kit itself: it passes a good codec and catches broken ones."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.testing import BadInput, CodecCase, ConformanceError, assert_values_equal, check_codec
from recordkit_codecs.bbox import BBoxCodec
from recordkit_codecs.scalar import ScalarCodec
from recordkit_codecs.tensor import TensorCodec


def test_a_conforming_codec_passes_every_check(tmp_path: Path) -> None:
    # Every dtype of the scalar codec is run in tests/recordkit_codecs/test_scalar.py.
    report = check_codec(
        ScalarCodec({"dtype": "str"}),
        ["", "héllo wörld", "日本語"],
        tmp_path=tmp_path,
        bad_inputs=[BadInput(object(), match="expected")],
        default="none given",
    )
    for check in (
        "declaration and wire spec",
        "own stored version read by the codec itself",
        "options round trip through a schema file",
        "plain field: tf.data batched decode",
        "optional field: numpy decode",
        "sequence field: tf.data batch of 1",
        "default field: numpy decode",
        "1 bad inputs refused with the field named",
    ):
        assert check in report.checks


def test_a_default_reads_back_where_records_leave_the_field_out(tmp_path: Path) -> None:
    report = check_codec(ScalarCodec({"dtype": "int64"}), [1, 2], tmp_path=tmp_path, default=7)
    assert "default field: tf.data batched decode" in report.checks


def test_a_default_the_codec_refuses_is_caught(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"^\[default\] 'seven': the default is refused"):
        check_codec(ScalarCodec({"dtype": "int64"}), [1, 2], tmp_path=tmp_path, default="seven")


def test_numpy_decode_may_be_given_its_own_expectation(tmp_path: Path) -> None:
    # A tensor of any rank decodes to values and shape in TF (a batch cannot hold
    # arrays of different ranks) and to the array itself in numpy.
    from recordkit_codecs.tensor import TensorCodec

    arrays = [np.arange(6, dtype=np.int32).reshape(2, 3), np.ones((1, 2, 2), np.int32)]
    cases = [
        CodecCase(a, expected={"values": a.reshape(-1), "shape": list(a.shape)}, expected_numpy=a)
        for a in arrays
    ]
    any_rank = TensorCodec({"dtype": "int32", "shape": None})
    report = check_codec(any_rank, cases, tmp_path=tmp_path, sequence=False)
    assert "plain field: numpy decode" in report.checks
    wrong = [CodecCase(c.value, expected=c.expected, expected_numpy=c.value + 1) for c in cases]
    with pytest.raises(ConformanceError, match=r"\[plain field\] numpy decode, case 0"):
        check_codec(any_rank, wrong, tmp_path=tmp_path, sequence=False)


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


class _ForgetsItsOwnVersion(_AcceptsAnything):
    """Reads its own records with another codec: readers of its datasets would get it."""

    name = "forgetful"
    version = "2"

    def for_stored_version(self, version: str) -> rk.Codec[Any]:
        return _AcceptsAnything()


class _RefusesItsOwnVersion(_AcceptsAnything):
    name = "refusing"

    def for_stored_version(self, version: str) -> rk.Codec[Any]:
        raise rk.errors.CodecVersionError(f"no version {version}", codec=self.name)


def test_a_codec_that_does_not_read_its_own_version_is_caught(tmp_path: Path) -> None:
    with pytest.raises(
        ConformanceError, match=r"^\[stored version\] forgetful: for_stored_version\('2'\), the codec's own"
    ):
        check_codec(_ForgetsItsOwnVersion(), [0], tmp_path=tmp_path)
    with pytest.raises(
        ConformanceError, match=r"for_stored_version\('1'\) raised: codec 'refusing': no version 1"
    ):
        check_codec(_RefusesItsOwnVersion(), [0], tmp_path=tmp_path)


def test_a_codec_that_reads_earlier_versions_passes(tmp_path: Path) -> None:
    from _versioned_codecs import VersionedV2

    report = check_codec(VersionedV2({"size": 2}), [np.array([1, -2]), np.array([3, 4])], tmp_path=tmp_path)
    assert "own stored version read by the codec itself" in report.checks


def test_values_compare_across_tf_numpy_and_python() -> None:
    import tensorflow as tf

    assert_values_equal("abc", tf.constant(b"abc"))
    assert_values_equal([[1, 2], [3]], tf.ragged.constant([[1, 2], [3]]))
    assert_values_equal({"a": 1.0}, {"a": np.float32(1.0 + 1e-7)}, atol=1e-6)
    with pytest.raises(AssertionError, match=r"value\.a"):
        assert_values_equal({"a": 1.0}, {"a": 2.0})
    with pytest.raises(AssertionError, match="shape"):
        assert_values_equal(np.zeros((2, 2)), np.zeros((2, 3)))


class _WrongSize(_AcceptsAnything):
    """Declares two int64 values per record but encodes three."""

    name = "wrong-size"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64, (2,)),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": [1, 2, 3]}


class _Crashes(_LossyCodec):
    """Decodes faithfully but crashes on a bad value instead of refusing it."""

    name = "crashes"

    def encode(self, value: Any) -> rk.WireValues:
        return {"": int(value)}  # int("nope") raises ValueError, not InvalidValueError

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return int(wire[""])


class _PythonInGraph(_Crashes):
    """Claims in_graph (the default) but decodes through tf.numpy_function."""

    name = "python-in-graph"

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        import tensorflow as tf

        return tf.numpy_function(lambda x: x, [wire[""]], tf.int64)


class _Options(rk.CodecOptions):
    scale: float = 1.0


class _LosesOptions(_Crashes):
    """Writes its options to the schema file in a form that reads back differently."""

    name = "loses-options"
    options_model = _Options

    def options_dict(self) -> dict[str, Any]:
        return {}


class _BadNameInMessage(_Crashes):
    """Refuses bad values with a recordkit error, as it should."""

    name = "refuses"

    def encode(self, value: Any) -> rk.WireValues:
        if not isinstance(value, int):
            raise rk.errors.InvalidValueError(f"expected an int, got {type(value).__name__}")
        return {"": value}


def test_values_that_do_not_fit_the_wire_spec_are_caught(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"\[plain field\] case 0: encoding failed: .*holds 3 values"):
        check_codec(_WrongSize(), [0], tmp_path=tmp_path)


def test_a_crash_on_a_bad_input_is_caught(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"encode\(\) crashed with ValueError"):
        check_codec(_Crashes(), [1, 2], tmp_path=tmp_path, bad_inputs=[BadInput("nope", match="nope")])


def test_a_refused_bad_input_must_match_the_declared_reason(tmp_path: Path) -> None:
    report = check_codec(
        _BadNameInMessage(), [1, 2], tmp_path=tmp_path, bad_inputs=[BadInput("x", match="expected an int")]
    )
    assert "1 bad inputs refused with the field named" in report.checks
    with pytest.raises(ConformanceError, match=r"does not match 'a float'"):
        check_codec(
            _BadNameInMessage(), [1], tmp_path=tmp_path / "2", bad_inputs=[BadInput("x", match="a float")]
        )


def test_a_python_callback_in_an_in_graph_decode_is_caught(tmp_path: Path) -> None:
    with pytest.raises(
        ConformanceError, match=r"in_graph=True but decode_tf calls back into Python \(.*PyFunc"
    ):
        check_codec(_PythonInGraph(), [1, 2], tmp_path=tmp_path)


def test_pure_graph_decode_passes_the_in_graph_check(tmp_path: Path) -> None:
    report = check_codec(_Crashes(), [1, 2], tmp_path=tmp_path)
    assert "decode_tf is pure graph ops, as the wire spec says" in report.checks


def test_options_that_do_not_survive_their_json_form_are_caught(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError, match=r"\[options\] loses-options: options do not survive"):
        check_codec(_LosesOptions({"scale": 2.0}), [1], tmp_path=tmp_path)


def test_a_schema_file_that_changes_the_options_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load = rk.Schema.load

    def lossy_load(path: Any, **kwargs: Any) -> rk.Schema:
        """A schema file reader that drops the options (the fault to catch)."""
        schema = load(path, **kwargs)
        fields = {name: spec.model_copy(update={"options": {}}) for name, spec in schema.fields.items()}
        return schema.model_copy(update={"fields": fields})

    monkeypatch.setattr(rk.Schema, "load", lossy_load)
    with pytest.raises(ConformanceError, match=r"\[schema file\] value: schema changed through its file"):
        check_codec(ScalarCodec({"dtype": "int32"}), [1], tmp_path=tmp_path)


def test_a_wrong_tf_decode_is_caught(tmp_path: Path) -> None:
    class _TfOffByOne(_Crashes):
        name = "tf-off-by-one"

        def decode_tf(self, wire: Mapping[str, Any]) -> Any:
            return wire[""] + 1

    with pytest.raises(
        ConformanceError, match=r"tf.data batched decode, case 0: value: expected 1, got 2 \(atol=0\)"
    ):
        check_codec(_TfOffByOne(), [1, 2], tmp_path=tmp_path)


def test_a_float_tolerance_is_applied(tmp_path: Path) -> None:
    class _Rounds(_Crashes):
        name = "rounds"

        def wire_spec(self) -> rk.WireSpec:
            return rk.WireSpec((rk.WireFeature("", rk.WireKind.FLOAT),))

        def encode(self, value: Any) -> rk.WireValues:
            return {"": float(round(value, 1))}

        def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
            return float(wire[""])

    check_codec(_Rounds(), [CodecCase(0.12, atol=0.03), CodecCase(1.04, atol=0.05)], tmp_path=tmp_path)
    with pytest.raises(ConformanceError, match=r"plain field\] tf.data batched decode, case 0"):
        check_codec(_Rounds(), [CodecCase(0.12, atol=0.001)], tmp_path=tmp_path / "strict")


def test_an_integer_tolerance_is_applied() -> None:
    pixels = np.array([[10, 200], [30, 255]], dtype=np.uint8)
    jpeg_like = np.array([[12, 199], [30, 252]], dtype=np.uint8)
    assert_values_equal(pixels, jpeg_like, atol=3)
    assert_values_equal(7, 9, atol=2)
    with pytest.raises(AssertionError, match=r"1 of 4 elements differ \(largest difference 3 at \[1, 1\]"):
        assert_values_equal(pixels, jpeg_like, atol=2)
    with pytest.raises(AssertionError, match=r"expected 7, got 9 \(atol=1\)"):
        assert_values_equal(7, 9, atol=1)
    with pytest.raises(AssertionError, match="expected True, got False"):
        assert_values_equal(True, False, atol=5)  # booleans are never within a tolerance


def test_a_mismatch_names_where_and_how_much_not_the_whole_arrays() -> None:
    expected = np.arange(3000, dtype=np.float32).reshape(1000, 3)
    actual = expected.copy()
    actual[417, 2] += 0.5
    actual[900:, 0] += 0.25
    with pytest.raises(AssertionError) as info:
        assert_values_equal(expected, actual, atol=0.1)
    message = str(info.value)
    summary = "value: 101 of 3000 elements differ (largest difference 0.5 at [417, 2], atol=0.1): "
    assert message.startswith(summary)
    assert "[417, 2] expected 1253.0, got 1253.5" in message
    assert message.endswith("; and 96 more")
    assert len(message) < 400  # the arrays themselves are not printed


def test_an_empty_ragged_row_keeps_its_inner_dimensions() -> None:
    import tensorflow as tf

    points = tf.RaggedTensor.from_row_lengths(tf.zeros([3, 2]), [0, 3])
    assert_values_equal([np.zeros((0, 2)), np.zeros((3, 2))], points)
    with pytest.raises(AssertionError, match=r"expected shape \(0, 3\), got \(0, 2\)"):
        assert_values_equal([np.zeros((0, 3)), np.zeros((3, 3))], points)
    nested = tf.RaggedTensor.from_row_lengths(tf.RaggedTensor.from_row_lengths(tf.zeros([2, 4]), [0, 2]), [2])
    assert_values_equal([[np.zeros((0, 4)), np.zeros((2, 4))]], nested)


@pytest.mark.parametrize(
    ("codec", "empty", "full"),
    [
        (BBoxCodec(), np.zeros((0, 4), np.float32), np.array([[0.1, 0.2, 0.5, 0.6]], np.float32)),
        (
            TensorCodec({"dtype": "float32", "shape": [None, 3]}),
            np.zeros((0, 3), np.float32),
            np.ones((2, 3), np.float32),
        ),
    ],
    ids=["bbox", "tensor"],
)
def test_a_sequence_of_empty_values_passes(
    tmp_path: Path, codec: rk.Codec[Any], empty: Any, full: Any
) -> None:
    report = check_codec(codec, [CodecCase(empty, id="empty"), CodecCase(full, id="full")], tmp_path=tmp_path)
    assert "sequence field: tf.data batched decode" in report.checks
    assert "sequence field: numpy decode" in report.checks
