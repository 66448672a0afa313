"""The ``tensor`` codec: raw-byte storage of every dtype, fixed and variable shapes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _codec_io import (
    assert_stored_near_payload,
    bind,
    field_error,
    parse_eager,
    read_numpy,
    read_tf,
    run_doc_examples,
    write,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

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
from recordkit_codecs.tensor import SUPPORTED_DTYPES, TensorCodec


def _sample(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Values spanning the dtype's range, with its extremes (and nan/inf for floats)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    size = int(np.prod(shape))
    if dt.kind == "b":
        return rng.integers(0, 2, size).astype(bool).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        values = rng.integers(info.min, info.max, size, dtype=dt, endpoint=True)
        values[:2] = [info.min, info.max]
        return values.reshape(shape)
    real = np.finfo(dt).dtype if dt.kind == "c" else dt
    values = (rng.standard_normal(size) * 1e3).astype(real)
    values[:4] = [np.finfo(real).max, np.finfo(real).tiny, np.nan, -np.inf]
    if dt.kind == "c":
        complex_values = np.empty(size, dtype=dt)
        complex_values.real, complex_values.imag = values, values[::-1]
        return complex_values.reshape(shape)
    return values.reshape(shape)


def _same_bits(a: Any, b: np.ndarray) -> bool:
    """Bitwise equality (nan == nan, -0.0 != 0.0), and equal dtype and shape."""
    a = np.asarray(a)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_every_dtype_round_trips_exactly_with_a_fixed_shape(tmp_path: Path) -> None:
    fields = {d: {"codec": "tensor", "options": {"dtype": d, "shape": [2, 3]}} for d in SUPPORTED_DTYPES}
    bound = bind(**fields)
    records = [{d: _sample(d, (2, 3), seed) for d in SUPPORTED_DTYPES} for seed in range(3)]
    path = write(bound, records, tmp_path / "dtypes.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    for dtype in SUPPORTED_DTYPES:
        tensor = batch[dtype]
        assert tensor.dtype.name == dtype
        assert tensor.shape == (3, 2, 3)
        assert _same_bits(tensor.numpy(), np.stack([r[dtype] for r in records])), dtype
    for record, row in zip(records, read_numpy(bound, path), strict=True):
        for dtype in SUPPORTED_DTYPES:
            assert _same_bits(row[dtype], record[dtype]), dtype


@pytest.mark.parametrize(
    ("shape", "arrays", "tf_form"),
    [
        ([None, 3], [(2, 3), (0, 3), (4, 3)], "ragged [B, (n), 3]"),
        ([None, None], [(2, 3), (1, 0), (3, 1)], "ragged [B, (n), (m)]"),
        ([2, None], [(2, 1), (2, 4), (2, 0)], "uniform [B, 2, (m)]"),
        ([None, 2, None], [(1, 2, 3), (2, 2, 1), (0, 2, 5)], "ragged [B, (n), 2, (m)]"),
        ([None], [(5,), (0,), (1,)], "ragged [B, (n)]"),
    ],
)
def test_variable_shapes_decode_to_ragged_tensors(
    tmp_path: Path, shape: list[int | None], arrays: list[tuple[int, ...]], tf_form: str
) -> None:
    bound = bind(t={"codec": "tensor", "options": {"dtype": "int32", "shape": shape}})
    values = [np.arange(np.prod(s), dtype=np.int32).reshape(s) * (i + 1) for i, s in enumerate(arrays)]
    path = write(bound, [{"t": v} for v in values], tmp_path / "v.tfrecord")

    (batch,) = read_tf(bound, path, batch=len(values))
    ragged = batch["t"]
    assert ragged.dtype.name == "int32"
    assert ragged.shape.rank == len(shape) + 1, tf_form
    for dim, declared in zip(ragged.shape[1:], shape, strict=True):
        assert dim == declared, tf_form  # fixed dims are static, None dims ragged
    assert ragged.to_list() == [v.tolist() for v in values]
    for value, row in zip(values, read_numpy(bound, path), strict=True):
        assert _same_bits(row["t"], value)


def test_any_rank_decodes_to_flat_values_and_shape(tmp_path: Path) -> None:
    bound = bind(t={"codec": "tensor", "options": {"dtype": "float64", "shape": None}})
    values = [np.float64(2.5), np.arange(6.0).reshape(2, 3), np.zeros((0, 4)), np.ones((1, 1, 2))]
    path = write(bound, [{"t": v} for v in values], tmp_path / "any.tfrecord")

    (batch,) = read_tf(bound, path, batch=4)
    assert batch["t"]["shape"].to_list() == [[], [2, 3], [0, 4], [1, 1, 2]]
    assert batch["t"]["values"].to_list() == [[2.5], [0, 1, 2, 3, 4, 5], [], [1.0, 1.0]]
    for value, row in zip(values, read_numpy(bound, path), strict=True):
        assert _same_bits(row["t"], np.asarray(value))


def test_stored_as_raw_little_endian_bytes_with_int64_shape(tmp_path: Path) -> None:
    bound = bind(t={"codec": "tensor", "options": {"dtype": "int32", "shape": [None, 2]}})
    data = rk.RecordEncoder(bound).encode({"t": np.array([[1, 2], [3, -4]], dtype=">i4")})
    stored = decode_example(data)
    assert stored["t"][0] is rk.WireKind.BYTES
    assert stored["t"][1] == [np.array([1, 2, 3, -4], dtype="<i4").tobytes()]
    assert stored["t/shape"][0] is rk.WireKind.INT64
    assert stored["t/shape"][1].tolist() == [2, 2]
    fixed = bind(t={"codec": "tensor", "options": {"dtype": "int32", "shape": [2]}})
    assert set(decode_example(rk.RecordEncoder(fixed).encode({"t": [1, 2]}))) == {"t"}


def test_stored_bytes_stay_within_one_percent_of_the_payload() -> None:
    for dtype, shape in [("float64", [None, 64]), ("float32", [256, 4]), ("uint8", None), ("int16", [None])]:
        bound = bind(t={"codec": "tensor", "options": {"dtype": dtype, "shape": shape}})
        value = _sample(dtype, (256, 4) if shape == [256, 4] else (16, 64), seed=1)
        if shape == [None]:
            value = value.reshape(-1)
        data = rk.RecordEncoder(bound).encode({"t": value})
        stored = rk.byte_breakdown(bound, data)["t"]
        payload = value.nbytes
        assert payload <= stored <= payload * 1.01 + 32, (dtype, stored, payload)


@pytest.mark.parametrize(
    ("dtype", "shape", "value_shape"),
    [
        ("float64", [512, 512], (512, 512)),
        ("float32", None, (64, 128, 32)),
        ("uint8", [None, None, 3], (480, 640, 3)),
    ],
)
def test_a_large_tensor_costs_its_raw_bytes_by_the_byte_breakdown(
    dtype: str, shape: list[int | None] | None, value_shape: tuple[int, ...]
) -> None:
    """Megabytes of values: the field's share of the record (rk.byte_breakdown) is the
    raw bytes plus a few bytes of keys and shape, never a number list."""
    bound = bind(weights={"codec": "tensor", "options": {"dtype": dtype, "shape": shape}})
    value = _sample(dtype, value_shape, seed=3)
    share = assert_stored_near_payload(bound, "weights", value, value.nbytes)
    assert share - value.nbytes < 60


def test_non_contiguous_and_big_endian_arrays(tmp_path: Path) -> None:
    bound = bind(t={"codec": "tensor", "options": {"dtype": "float32", "shape": [3, 2]}})
    base = np.arange(12, dtype=np.float32).reshape(2, 6)
    values = [base[:, ::2].T, np.asfortranarray(base[:, :3].T), base.astype(">f4")[:, 1:4].T]
    assert not any(v.flags.c_contiguous for v in values)
    path = write(bound, [{"t": v} for v in values], tmp_path / "nc.tfrecord")
    (batch,) = read_tf(bound, path, batch=3)
    assert batch["t"].numpy().tolist() == [v.tolist() for v in values]
    assert [r["t"].tolist() for r in read_numpy(bound, path)] == [v.tolist() for v in values]


@pytest.mark.parametrize(
    ("dtype", "value", "stored"),
    [
        ("float64", np.arange(3, dtype=np.float32), np.arange(3, dtype=np.float64)),
        ("int16", np.array([200, 255], dtype=np.uint8), np.array([200, 255], dtype=np.int16)),
        ("float32", [1, 2.5, -3], np.array([1, 2.5, -3], dtype=np.float32)),
        ("uint8", [0, 255], np.array([0, 255], dtype=np.uint8)),
        ("bool", [True, False], np.array([True, False])),
        ("complex64", [1, 2.5], np.array([1, 2.5], dtype=np.complex64)),
        ("int64", 7, np.array(7, dtype=np.int64)),
    ],
)
def test_safe_casts_are_accepted(dtype: str, value: Any, stored: np.ndarray) -> None:
    codec = TensorCodec({"dtype": dtype})
    assert _same_bits(codec.decode_numpy(codec.encode(value)), stored)


@pytest.mark.parametrize(
    ("options", "value", "reason"),
    [
        (
            {"dtype": "float32"},
            np.zeros(3, np.float64),
            r"dtype float64 cannot be stored as float32 without loss",
        ),
        ({"dtype": "int32"}, np.zeros(3, np.int64), r"dtype int64 cannot be stored as int32"),
        ({"dtype": "uint8"}, np.array([-1], np.int8), r"dtype int8 cannot be stored as uint8"),
        ({"dtype": "uint8"}, [1, 300], r"value 300 does not fit uint8"),
        ({"dtype": "uint8"}, [-1], r"value -1 does not fit uint8"),
        ({"dtype": "bool"}, [0, 2], r"value 2 does not fit bool"),
        ({"dtype": "int32"}, [1.5], r"float values cannot be stored as int32"),
        ({"dtype": "float16"}, [1e6], r"value 1000000.0 overflows float16"),
        ({"dtype": "float32"}, [1j], r"complex values cannot be stored as float32"),
        ({"dtype": "float32"}, "1.0", r"expected a numpy array or \(nested lists of\) numbers, got str"),
        ({"dtype": "float32"}, [[1, 2], [3]], r"not a rectangular array"),
        ({"dtype": "float32"}, ["a"], r"expected numbers, got values of dtype <U1"),
        (
            {"dtype": "float32", "shape": [None, 3]},
            np.zeros((2, 4), np.float32),
            r"shape \[2, 4\] does not fit",
        ),
        (
            {"dtype": "float32", "shape": [2]},
            np.zeros((2, 1), np.float32),
            r"shape \[2, 1\] does not fit .* \[2\]",
        ),
    ],
)
def test_bad_input_names_field_record_and_reason(options: dict[str, Any], value: Any, reason: str) -> None:
    bound = bind(weights={"codec": "tensor", "options": options})
    error = field_error(bound, "weights", value, index=5)
    assert re.search(reason, str(error)), str(error)


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"dtype": "object"}, r"unsupported dtype 'object'"),
        ({"dtype": "str"}, r"unsupported dtype 'str'"),
        ({"dtype": "no-such-type"}, r"unsupported dtype"),
        ({"shape": [2, -1]}, r"non-negative or null"),
    ],
)
def test_invalid_options(options: dict[str, Any], reason: str) -> None:
    with pytest.raises(rk.errors.CodecOptionsError, match=reason):
        bind(t={"codec": "tensor", "options": options})


def test_dtype_aliases_are_normalised() -> None:
    assert TensorCodec({"dtype": "f8"}).options.dtype == "float64"
    assert TensorCodec({"dtype": "float"}).options == TensorCodec({"dtype": "float64"}).options


def test_corrupt_stored_bytes_are_a_decode_error() -> None:
    codec = TensorCodec({"dtype": "float32", "shape": [None]})
    with pytest.raises(
        rk.errors.DecodeError, match=r"stored tensor has 6 bytes; shape \[2\] of float32 needs 8"
    ):
        codec.decode_numpy({"": b"\x00" * 6, "shape": np.array([2])})


def test_optional_default_and_sequence_fields(tmp_path: Path) -> None:
    bound = bind(
        fixed={"codec": "tensor", "options": {"dtype": "float64", "shape": [2]}, "optional": True},
        var={"codec": "tensor", "options": {"dtype": "int16", "shape": [None, 2]}, "optional": True},
        anyrank={"codec": "tensor", "options": {"dtype": "uint8", "shape": None}, "optional": True},
        dflt={"codec": "tensor", "options": {"dtype": "int32", "shape": [3]}, "default": [0, 0, 1]},
        seq={"codec": "tensor", "options": {"dtype": "float32", "shape": [None]}, "sequence": True},
        seqfixed={"codec": "tensor", "options": {"dtype": "uint16", "shape": [2]}, "sequence": True},
    )
    records: list[dict[str, Any]] = [
        {"fixed": np.array([0.1, 0.2]), "seq": [np.array([1.0, 2.0], np.float32), np.zeros(0, np.float32)],
         "seqfixed": [np.array([1, 2], np.uint16)]},
        {"var": np.array([[1, 2], [3, 4], [5, 6]], np.int16), "anyrank": np.ones((2, 2), np.uint8),
         "dflt": [7, 8, 9], "seq": [], "seqfixed": []},
        {"fixed": np.array([1e-300, -2.0]), "var": np.zeros((0, 2), np.int16),
         "seq": [np.array([3.0], np.float32)],
         "seqfixed": [np.array([3, 4], np.uint16), np.array([5, 6], np.uint16)]},
    ]  # fmt: skip
    path = write(bound, records, tmp_path / "o.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    assert batch["fixed/present"].numpy().tolist() == [True, False, True]
    assert batch["fixed"].numpy().tolist() == [[0.1, 0.2], [0.0, 0.0], [1e-300, -2.0]]
    assert batch["var/present"].numpy().tolist() == [False, True, True]
    assert batch["var"].to_list() == [[], [[1, 2], [3, 4], [5, 6]], []]
    assert batch["anyrank"]["values"].to_list() == [[], [1, 1, 1, 1], []]
    assert batch["anyrank"]["shape"].to_list() == [[], [2, 2], []]
    assert batch["dflt"].numpy().tolist() == [[0, 0, 1], [7, 8, 9], [0, 0, 1]]
    assert batch["seq"].to_list() == [[[1.0, 2.0], []], [], [[3.0]]]
    assert batch["seqfixed"].to_list() == [[[1, 2]], [], [[3, 4], [5, 6]]]

    rows = read_numpy(bound, path)
    assert rows[1]["fixed"] is None
    assert rows[0]["var"] is None
    assert rows[2]["anyrank"] is None
    assert _same_bits(rows[2]["fixed"], np.array([1e-300, -2.0]))
    assert _same_bits(rows[2]["var"], np.zeros((0, 2), np.int16))
    assert _same_bits(rows[1]["anyrank"], np.ones((2, 2), np.uint8))
    assert [r["dflt"].tolist() for r in rows] == [[0, 0, 1], [7, 8, 9], [0, 0, 1]]
    assert [[a.tolist() for a in r["seq"]] for r in rows] == [[[1.0, 2.0], []], [], [[3.0]]]


@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
        elements=st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=64),
    )
)
def test_float64_tensors_round_trip_bit_exact(array: np.ndarray) -> None:
    bound = bind(t={"codec": "tensor", "options": {"dtype": "float64", "shape": None}})
    data = rk.RecordEncoder(bound).encode({"t": array})
    assert _same_bits(decode_record_numpy(bound.fields, data)["t"], array)
    parsed = parse_eager(bound, [data, data])["t"]
    assert parsed["shape"].to_list() == [list(array.shape)] * 2
    assert _same_bits(parsed["values"][1].numpy(), array.reshape(-1))


@given(
    st.sampled_from(SUPPORTED_DTYPES).flatmap(
        lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=5))
    )
)
def test_any_dtype_variable_shape_round_trips_exactly(array: np.ndarray) -> None:
    shape = [None] * array.ndim
    bound = bind(t={"codec": "tensor", "options": {"dtype": array.dtype.name, "shape": shape}})
    data = rk.RecordEncoder(bound).encode({"t": array})
    assert _same_bits(decode_record_numpy(bound.fields, data)["t"], array)
    ragged = parse_eager(bound, [data])["t"]
    dense = ragged.to_tensor().numpy()[0] if array.size else np.zeros(array.shape, array.dtype)
    assert _same_bits(dense.reshape(array.shape), array)


def test_conformance_fixed(tmp_path: Path) -> None:
    report = check_codec(
        TensorCodec({"dtype": "float64", "shape": [2, 2]}),
        cases=[
            CodecCase(np.array([[0.1, 1e-300], [np.pi, -0.0]])),
            CodecCase(np.eye(2)),
            CodecCase([[1, 2], [3, 4]], expected=np.array([[1.0, 2.0], [3.0, 4.0]])),
        ],
        bad_inputs=[
            BadInput(np.zeros((3, 2)), match=r"shape \[3, 2\] does not fit"),
            BadInput(np.zeros((2, 2), np.complex128), match="cannot be stored as float64"),
        ],
        tmp_path=tmp_path,
    )
    assert "column decode equals the record-by-record decode" in report.checks
    assert "raw array equals the batched and the numpy decode" in report.checks


def test_raw_arrays_are_the_fixed_shapes_stored_as_bytes() -> None:
    assert TensorCodec({"dtype": "uint32", "shape": [2, 3]}).raw_array() == rk.RawArray("", "uint32", (2, 3))
    assert TensorCodec({"dtype": "float32", "shape": [None, 3]}).raw_array() is None
    assert TensorCodec({"dtype": "float32", "shape": [3], "stored": "numbers"}).raw_array() is None
    values = np.array([[1, 2**32 - 1]], np.uint32)
    rows = np.frombuffer(values.astype("<u4").tobytes(), np.uint8).reshape(1, 8)
    decoded = TensorCodec({"dtype": "uint32", "shape": [2]}).raw_array().decode(rows)  # type: ignore[union-attr]
    assert decoded.dtype == np.uint32
    assert decoded.tolist() == values.tolist()


def test_conformance_variable(tmp_path: Path) -> None:
    check_codec(
        TensorCodec({"dtype": "int16", "shape": [None, 3]}),
        cases=[
            CodecCase(np.arange(6, dtype=np.int16).reshape(2, 3)),
            CodecCase(np.zeros((0, 3), np.int16), expected=[]),
            CodecCase(np.full((1, 3), -7, np.int16)),
        ],
        bad_inputs=[BadInput(np.zeros((1, 3), np.int32), match="cannot be stored as int16")],
        tmp_path=tmp_path,
    )


def test_conformance_numbers_fixed(tmp_path: Path) -> None:
    """``stored: numbers`` (TFDS's layout): a flat float list, dense on read."""
    check_codec(
        TensorCodec({"dtype": "float64", "shape": [2, 3], "stored": "numbers"}),
        cases=[
            CodecCase(np.arange(6, dtype=np.float64).reshape(2, 3) / 4),
            CodecCase([[1, 2, 3], [4, 5, 6]], expected=np.arange(1, 7, dtype=np.float64).reshape(2, 3)),
        ],
        bad_inputs=[
            BadInput(np.zeros((3, 2)), match=r"shape \[3, 2\] does not fit"),
            BadInput(np.full((2, 3), 0.1), match="float32 cannot hold exactly"),
        ],
        tmp_path=tmp_path,
    )


def test_conformance_numbers_variable(tmp_path: Path) -> None:
    """``stored: numbers`` with one null dimension: the count of numbers gives it."""
    check_codec(
        TensorCodec({"dtype": "uint8", "shape": [None, 2, 2], "stored": "numbers"}),
        cases=[
            CodecCase(np.arange(8, dtype=np.uint8).reshape(2, 2, 2)),
            CodecCase(np.full((3, 2, 2), 255, np.uint8)),
            CodecCase(np.zeros((1, 2, 2), np.uint8)),
        ],
        bad_inputs=[BadInput(np.zeros((1, 2, 2), np.int16), match="cannot be stored as uint8")],
        tmp_path=tmp_path,
    )


def test_numbers_are_stored_flat_and_checked_on_read() -> None:
    bound = bind(
        t={"codec": "tensor", "options": {"dtype": "int32", "shape": [2, None], "stored": "numbers"}}
    )
    data = rk.RecordEncoder(bound).encode({"t": np.arange(6, dtype=np.int32).reshape(2, 3)})
    example = decode_example(data)
    assert list(example) == ["t"]
    assert [int(v) for v in example["t"][1]] == [0, 1, 2, 3, 4, 5]
    decoded = decode_record_numpy(bound.fields, data)["t"]
    np.testing.assert_array_equal(decoded, np.arange(6).reshape(2, 3))
    assert decoded.dtype == np.int32
    bad = encode_example([(b"t", encode_feature(rk.WireKind.INT64, np.array([1, 2, 3])))])
    with pytest.raises(rk.errors.DecodeError, match="stores 3 numbers"):
        decode_record_numpy(bound.fields, bad)
    with pytest.raises(rk.errors.CodecOptionsError, match="at most one null"):
        TensorCodec({"dtype": "int32", "shape": [None, None], "stored": "numbers"})
    with pytest.raises(rk.errors.CodecOptionsError, match="not complex64"):
        TensorCodec({"dtype": "complex64", "shape": [2], "stored": "numbers"})


def test_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_doc_examples("tensor.md", tmp_path, monkeypatch) >= 1


def test_stored_bytes_that_disagree_with_the_stored_shape_fail_in_tf_data(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    bound = bind(t={"codec": "tensor", "options": {"dtype": "float32", "shape": [None]}})
    good = rk.RecordEncoder(bound).encode({"t": np.ones(2, np.float32)})
    bad = encode_example(
        [
            (b"t", encode_feature(rk.WireKind.BYTES, [b"\x00" * 12])),
            (b"t/shape", encode_feature(rk.WireKind.INT64, np.array([2]))),
        ]
    )
    with tf.io.TFRecordWriter(str(tmp_path / "bad.tfrecord")) as writer:
        writer.write(good)
        writer.write(bad)
    with pytest.raises(tf.errors.InvalidArgumentError, match="do not match its stored shape"):
        read_tf(bound, tmp_path / "bad.tfrecord", batch=2)
