"""Reading without TensorFlow (sdk/recordkit/read/_numpy_decode.py), checked against the
tf.data parser generated from the same schema (make_parser)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

import recordkit as rk
from recordkit import WireKind
from recordkit.format._example import (  # private: builds and reads Example bytes by hand
    encode_example,
    encode_feature,
)
from recordkit.read._numpy_decode import decode_record_numpy
from recordkit_codecs.scalar import ScalarCodec


class PairsCodec(rk.Codec[rk.CodecOptions]):
    """A variable number of (a, b) int pairs: a variable feature with an inner dimension."""

    name = "pairs"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64, (None, 2)),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": np.asarray(value, np.int64).reshape(-1)}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return wire[""].tolist()

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]


class FussyCodec(ScalarCodec):
    """Decodes by dividing by the stored value: a decoder that can fail."""

    name = "fussy"

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return 1 // int(wire[""])


SCHEMA = rk.Schema(
    name="mixed",
    fields={
        "label": rk.FieldSpec(codec="scalar"),
        "caption": rk.FieldSpec(codec="scalar", options={"dtype": "str"}, optional=True),
        "score": rk.FieldSpec(codec="scalar", options={"dtype": "float64"}, optional=True),
        "tags": rk.FieldSpec(codec="scalar", options={"dtype": "str"}, sequence=True),
        "weights": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}, sequence=True, optional=True),
        "pairs": rk.FieldSpec(codec="pairs", sequence=True),
    },
)

RECORDS: list[dict[str, Any]] = [
    {
        "label": 0,
        "caption": "a cat",
        "score": 0.25,
        "tags": ["x", "y"],
        "weights": [0.5],
        "pairs": [[[1, 2]], []],
    },
    {"label": -7, "tags": [], "pairs": []},
    {"label": 2**40, "score": -1e-300, "tags": ["é"], "weights": [], "pairs": [[[3, 4], [5, 6]]]},
]


@pytest.fixture(scope="module")
def bound() -> rk.BoundSchema:
    registry = rk.CodecRegistry()
    for codec in (ScalarCodec, PairsCodec, FussyCodec):
        registry.register(codec)
    return SCHEMA.bind(registry)


@pytest.fixture(scope="module")
def serialized(bound: rk.BoundSchema) -> list[bytes]:
    encoder = rk.RecordEncoder(bound)
    return [encoder.encode(record, i) for i, record in enumerate(RECORDS)]


def expected(record: dict[str, Any], field: str) -> Any:
    """What reading gives back: absent optionals are None."""
    return record.get(field)


def test_numpy_decode_returns_the_records(bound: rk.BoundSchema, serialized: list[bytes]) -> None:
    for i, (record, data) in enumerate(zip(RECORDS, serialized, strict=True)):
        decoded = decode_record_numpy(bound.fields, data, index=i)
        assert decoded == {field.name: expected(record, field.name) for field in bound.fields}


def test_numpy_decode_of_selected_fields(bound: rk.BoundSchema, serialized: list[bytes]) -> None:
    decoded = decode_record_numpy(bound.select(["tags", "label"]), serialized[0])
    assert decoded == {"tags": ["x", "y"], "label": 0}


def test_tf_parser_agrees_with_numpy_decode(bound: rk.BoundSchema, serialized: list[bytes]) -> None:
    out = rk.make_parser(bound)(tf.constant(serialized))
    assert out["label"].numpy().tolist() == [r["label"] for r in RECORDS]
    # Optional fields: an explicit presence flag; absent rows hold zeros / nothing.
    assert out["caption/present"].numpy().tolist() == [True, False, False]
    assert out["caption"].numpy().tolist() == [b"a cat", b"", b""]
    assert out["score/present"].numpy().tolist() == [True, False, True]
    np.testing.assert_array_equal(out["score"].numpy(), [0.25, 0.0, -1e-300])
    # Sequence fields: ragged over the elements.
    assert out["tags"].to_list() == [[b"x", b"y"], [], ["é".encode()]]
    assert out["weights/present"].numpy().tolist() == [True, False, True]
    assert out["weights"].to_list() == [[0.5], [], []]
    # A sequence of variable-size values: ragged twice, the inner pair dimension uniform.
    assert out["pairs"].to_list() == [[[[1, 2]], []], [], [[[3, 4], [5, 6]]]]


def test_tf_parser_reads_a_tfrecord_dataset_in_batches(
    bound: rk.BoundSchema, serialized: list[bytes], tmp_path: Any
) -> None:
    path = tmp_path / "mixed.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for data in serialized:
            writer.write(data)
    dataset = tf.data.TFRecordDataset(str(path)).batch(2).map(rk.make_parser(bound, ["label", "tags"]))
    batches = list(dataset)
    assert [sorted(b) for b in batches] == [["label", "tags"], ["label", "tags"]]
    assert [b["label"].numpy().tolist() for b in batches] == [[0, -7], [2**40]]
    assert [b["tags"].to_list() for b in batches] == [[[b"x", b"y"], []], [["é".encode()]]]


def test_fields_under_their_own_keys_decode_the_quick_way_to_the_same_values(
    bound: rk.BoundSchema, serialized: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from recordkit.format._example import (  # private: the stored wire values, without TensorFlow
        decode_example,
    )
    from recordkit.read import _numpy_decode

    parsed = decode_example(serialized[0])
    label, caption = bound["label"], bound["caption"]
    assert _numpy_decode._own_keys_wire(label, parsed) is not None  # what recordkit writes
    assert _numpy_decode._own_keys_wire(caption, decode_example(serialized[1])) is None  # absent
    quick = [decode_record_numpy(bound.fields, data) for data in serialized]
    monkeypatch.setattr(_numpy_decode, "_own_keys_wire", lambda *_: None)  # the general way only
    assert quick == [decode_record_numpy(bound.fields, data) for data in serialized]


# -- errors name the record and the field -------------------------------------------------------


def one_field_bound(codec: str, **options: Any) -> rk.BoundSchema:
    registry = rk.CodecRegistry()
    registry.register(ScalarCodec)
    registry.register(FussyCodec)
    return rk.Schema(name="s", fields={"x": rk.FieldSpec(codec=codec, options=options)}).bind(registry)


def example(**features: tuple[WireKind, Any]) -> bytes:
    return encode_example(
        (key.encode(), encode_feature(kind, np.asarray(values) if kind is not WireKind.BYTES else values))
        for key, (kind, values) in features.items()
    )


def test_a_missing_key(bound: rk.BoundSchema) -> None:
    with pytest.raises(rk.errors.DecodeError, match="Example key 'x' is missing") as info:
        decode_record_numpy(one_field_bound("scalar").fields, example(y=(WireKind.INT64, [1])), index=4)
    assert (info.value.field, info.value.record) == ("x", 4)


def test_a_key_of_the_wrong_kind() -> None:
    with pytest.raises(rk.errors.DecodeError, match="holds float, expected int64") as info:
        decode_record_numpy(one_field_bound("scalar").fields, example(x=(WireKind.FLOAT, [1.0])), index=0)
    assert info.value.field == "x"


def test_a_wrong_number_of_values() -> None:
    with pytest.raises(rk.errors.DecodeError, match=r"holds 2 values, shape \(\) needs 1"):
        decode_record_numpy(one_field_bound("scalar").fields, example(x=(WireKind.INT64, [1, 2])), index=0)


def test_not_an_example() -> None:
    with pytest.raises(rk.errors.DecodeError, match=r"not a valid tf\.train\.Example") as info:
        decode_record_numpy(one_field_bound("scalar").fields, b"\xff\xff", index="key-9")
    assert info.value.record == "key-9"


def test_a_failing_codec_decode_is_wrapped_with_context() -> None:
    with pytest.raises(rk.errors.DecodeError, match="codec 'fussy' failed: ZeroDivisionError") as info:
        decode_record_numpy(one_field_bound("fussy").fields, example(x=(WireKind.INT64, [0])), index=1)
    assert (info.value.field, info.value.record) == ("x", 1)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_a_read_of_no_fields_gives_each_record_as_an_empty_dict(tmp_path: Path) -> None:
    """``fields=[]`` reads every record, with nothing decoded: a chunk decoded together
    gives an empty dict a record (it once gave none, and the read then reported the shard
    as holding fewer records than its manifest lists)."""
    schema = rk.Schema(
        name="pairs",
        fields={
            "caption": rk.FieldSpec(codec="text"),
            "label": rk.FieldSpec(codec="label", options={"num_classes": 3}),
        },
    )
    records = [{"caption": "x" * (i % 7), "label": i % 3} for i in range(100)]
    rk.write_dataset(records, tmp_path / "data", schema, progress=False)
    nothing = rk.open(tmp_path / "data", fields=[])
    assert list(nothing.records()) == [{}] * 100
    assert list(nothing.torch_iterable(tensors=False)) == [{}] * 100
    assert nothing[3] == {}
    assert list(rk.open(tmp_path / "data").records()) == records
