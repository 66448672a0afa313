"""The ``scalar`` codec: every dtype through real TFRecord files and tf.data, float64 bit
exactness, the range and type checks, optional and default fields, and the conformance kit."""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _codec_io import bind, field_error, parse_eager, read_numpy, read_tf, run_doc_examples, write
from hypothesis import given
from hypothesis import strategies as st

import recordkit as rk
from recordkit.format._example import (  # private: builds and reads Example bytes by hand
    decode_example,
    encode_example,
    encode_feature,
)
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)
from recordkit.testing import BadInput, CodecCase, check_codec
from recordkit_codecs.scalar import ScalarCodec

DTYPES = ["int64", "int32", "float32", "float64", "bool", "str"]

#: Values of each dtype, extremes included, as records give them (numpy scalars too).
VALUES: dict[str, list[Any]] = {
    "int64": [0, -(2**63), 2**63 - 1, np.int64(42), np.uint8(7)],
    "int32": [-(2**31), 2**31 - 1, np.int16(-5)],
    "float32": [0.5, -3.25, float(np.finfo(np.float32).max), np.float32(0.1), 7],
    "float64": [0.1, 1e300, -0.0, 5e-324, 21.000000000000004, np.float64(np.pi), 3],
    "bool": [True, False, np.bool_(True)],
    "str": ["", "héllo wörld", "日本語", "emoji 🙂", np.str_("numpy str")],
}


def _expected(dtype: str, value: Any) -> Any:
    """What decoding gives back for ``value`` (float32 rounds, the rest is exact)."""
    if isinstance(value, np.generic):
        value = value.item()
    if dtype == "float32":
        return float(np.float32(value))
    if dtype in ("float64",):
        return float(value)
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal, and for floats equal to the bit (so -0.0 differs from 0.0, NaN equals NaN)."""
    if isinstance(a, float) or isinstance(b, float):
        return struct.pack("<d", float(a)) == struct.pack("<d", float(b))
    return bool(a == b) and type(a) is type(b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_through_tf_data_and_numpy(tmp_path: Path, dtype: str) -> None:
    bound = bind(v={"codec": "scalar", "options": {"dtype": dtype}})
    values = VALUES[dtype]
    path = write(bound, [{"v": v} for v in values], tmp_path / "s.tfrecord")
    expected = [_expected(dtype, v) for v in values]

    (batch,) = read_tf(bound, path, batch=len(values))
    tensor = batch["v"]
    assert tensor.shape == (len(values),)
    assert tensor.dtype.name == {"str": "string"}.get(dtype, dtype)
    got = [v.decode("utf-8") if isinstance(v, bytes) else v for v in tensor.numpy().tolist()]
    assert all(_same(g, e) for g, e in zip(got, expected, strict=True)), (got, expected)
    rows = [row["v"] for row in read_numpy(bound, path)]
    assert all(_same(r, e) for r, e in zip(rows, expected, strict=True)), (rows, expected)


def test_float64_is_stored_as_its_bit_pattern_not_a_float32_list() -> None:
    bound = bind(v={"codec": "scalar", "options": {"dtype": "float64"}})
    stored = decode_example(rk.RecordEncoder(bound).encode({"v": 0.1}))
    kind, values = stored["v"]
    assert kind is rk.WireKind.INT64
    assert int(values[0]) == struct.unpack("<q", struct.pack("<d", 0.1))[0]


@pytest.mark.parametrize(
    ("dtype", "value", "reason"),
    [
        ("int64", 3.5, r"expected an integer, got 3.5"),
        ("int64", 3.0, r"expected an integer, got 3.0"),
        ("int64", 2**63, r"9223372036854775808 is outside the int64 range"),
        ("int64", True, r"expected a number, got bool"),
        ("int64", "7", r"expected a number, got str"),
        ("int32", 2**40, r"1099511627776 is outside the int32 range"),
        ("int32", np.int64(-(2**31) - 1), r"-2147483649 is outside the int32 range"),
        ("float32", 1e39, r"1e\+39 overflows float32"),
        ("float32", np.bool_(False), r"expected a number, got bool"),
        ("float32", 1 + 2j, r"expected a number, got complex"),
        ("float64", [1.0], r"expected a number, got list"),
        ("bool", 1, r"expected a bool, got int"),
        ("bool", "true", r"expected a bool, got str"),
        ("str", b"x", r"expected a str, got bytes"),
        ("str", 5, r"expected a str, got int"),
        ("str", "lone \ud800", r"not encodable as UTF-8"),
    ],
)
def test_bad_values_name_field_record_and_reason(dtype: str, value: Any, reason: str) -> None:
    bound = bind(reading={"codec": "scalar", "options": {"dtype": dtype}})
    error = field_error(bound, "reading", value, index=5)
    assert re.search(reason, str(error)), str(error)


def test_an_unknown_dtype_is_an_options_error() -> None:
    with pytest.raises(rk.errors.CodecOptionsError, match="option dtype") as info:
        bind(v={"codec": "scalar", "options": {"dtype": "float16"}})
    assert info.value.field == "v"


def test_optional_default_and_sequence_fields(tmp_path: Path) -> None:
    bound = bind(
        maybe={"codec": "scalar", "options": {"dtype": "float64"}, "optional": True},
        flag={"codec": "scalar", "options": {"dtype": "bool"}, "default": False},
        unit={"codec": "scalar", "options": {"dtype": "str"}, "default": "m"},
        steps={"codec": "scalar", "options": {"dtype": "int32"}, "sequence": True},
    )
    records: list[dict[str, Any]] = [
        {"maybe": 0.1, "flag": True, "unit": "km", "steps": [1, -2, 3]},
        {"steps": []},
        {"maybe": -0.0, "steps": [2**31 - 1]},
    ]
    path = write(bound, records, tmp_path / "o.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    assert batch["maybe/present"].numpy().tolist() == [True, False, True]
    assert batch["maybe"].numpy().tolist()[0] == 0.1
    assert math.copysign(1.0, batch["maybe"].numpy()[2]) == -1.0
    assert batch["flag"].numpy().tolist() == [True, False, False]
    assert [u.decode() for u in batch["unit"].numpy()] == ["km", "m", "m"]
    assert batch["steps"].to_list() == [[1, -2, 3], [], [2**31 - 1]]
    assert batch["steps"].dtype.name == "int32"

    rows = read_numpy(bound, path)
    assert [r["maybe"] for r in rows] == [0.1, None, -0.0]
    assert [r["flag"] for r in rows] == [True, False, False]
    assert [r["unit"] for r in rows] == ["km", "m", "m"]
    assert [r["steps"] for r in rows] == [[1, -2, 3], [], [2**31 - 1]]


def test_a_default_must_be_a_valid_value() -> None:
    with pytest.raises(rk.errors.SchemaError, match="the default 'x' is not a valid value"):
        bind(n={"codec": "scalar", "default": "x"})


def test_stored_text_that_is_not_utf8_is_a_decode_error() -> None:
    bound = bind(name={"codec": "scalar", "options": {"dtype": "str"}})
    foreign = encode_example([(b"name", encode_feature(rk.WireKind.BYTES, [b"\xff\xfe"]))])
    with pytest.raises(rk.errors.DecodeError, match=r"field 'name'.*not valid UTF-8 at byte 0"):
        decode_record_numpy(bound.fields, foreign, index=2)


# -- properties ------------------------------------------------------------------------------

_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "int64": st.integers(-(2**63), 2**63 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "float32": st.floats(width=32),
    "float64": st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
    "bool": st.booleans(),
    "str": st.text(st.characters(exclude_categories=("Cs",))),
}


@given(st.sampled_from(DTYPES).flatmap(lambda d: st.tuples(st.just(d), st.lists(_STRATEGIES[d], min_size=1))))
def test_random_scalars_round_trip_exactly(case: tuple[str, list[Any]]) -> None:
    dtype, values = case
    bound = bind(v={"codec": "scalar", "options": {"dtype": dtype}})
    encoder = rk.RecordEncoder(bound)
    serialized = [encoder.encode({"v": v}, i) for i, v in enumerate(values)]
    parsed = parse_eager(bound, serialized)["v"].numpy().tolist()
    from_tf = [p.decode("utf-8") if isinstance(p, bytes) else p for p in parsed]
    from_numpy = [decode_record_numpy(bound.fields, s)["v"] for s in serialized]
    for value, got_tf, got_np in zip(values, from_tf, from_numpy, strict=True):
        assert _same(got_tf, value), (dtype, value, got_tf)
        assert _same(got_np, value), (dtype, value, got_np)


# -- conformance -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_conformance(tmp_path: Path, dtype: str) -> None:
    cases = [CodecCase(v, expected=_expected(dtype, v)) for v in VALUES[dtype]]
    bad = {
        "int64": BadInput(1.5, match="expected an integer"),
        "int32": BadInput(2**31, match="outside the int32 range"),
        "float32": BadInput(1e40, match="overflows float32"),
        "float64": BadInput("1.0", match="expected a number, got str"),
        "bool": BadInput(0, match="expected a bool, got int"),
        "str": BadInput(b"bytes", match="expected a str, got bytes"),
    }[dtype]
    report = check_codec(ScalarCodec({"dtype": dtype}), cases, bad_inputs=[bad], tmp_path=tmp_path)
    assert "optional field: tf.data batched decode" in report.checks
    assert "sequence field: numpy decode" in report.checks
    assert "column decode equals the record-by-record decode" in report.checks


def test_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_doc_examples("scalar.md", tmp_path, monkeypatch) >= 1
