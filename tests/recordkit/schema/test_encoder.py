"""RecordEncoder (sdk/recordkit/schema/_encoder.py): records to Example bytes, every error reported."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pydantic
import pytest
import tensorflow as tf

import recordkit as rk
from recordkit import WireKind
from recordkit.format._example import decode_example  # private: the stored wire values, without TensorFlow
from recordkit_codecs.scalar import ScalarCodec


class IntsCodec(rk.Codec[rk.CodecOptions]):
    """A variable-length list of ints (a variable wire feature)."""

    name = "ints"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64, (None,)),))

    def encode(self, value: Any) -> rk.WireValues:
        if not isinstance(value, list):
            raise rk.errors.InvalidValueError(f"expected a list, got {type(value).__name__}")
        return {"": value}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return wire[""].tolist()

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]


class BuggyCodec(ScalarCodec):
    """Fails the way a codec bug does: with something other than a recordkit error."""

    name = "buggy"

    def encode(self, value: Any) -> rk.WireValues:
        return {"": 1 // int(value)}


class ForgetfulCodec(ScalarCodec):
    """Returns no value for its wire feature."""

    name = "forgetful"

    def encode(self, value: Any) -> rk.WireValues:
        return {"other": 1}


class TooManyCodec(ScalarCodec):
    """Returns two values for a feature of shape ()."""

    name = "toomany"

    def encode(self, value: Any) -> rk.WireValues:
        return {"": [1, 2]}


class AtMostCodec(ScalarCodec):
    """An int that must not exceed the record's ``limit`` field (a related field)."""

    name = "atmost"

    def related_fields(self) -> tuple[str, ...]:
        return ("limit",)

    def check_related(self, wire: rk.WireValues, related: Mapping[str, rk.WireValues]) -> None:
        if "limit" in related and int(wire[""]) > int(related["limit"][""]):
            raise rk.errors.InvalidValueError(f"{wire['']} exceeds the limit {related['limit']['']}")


@pytest.fixture(scope="module")
def registry() -> rk.CodecRegistry:
    registry = rk.CodecRegistry()
    for codec in (ScalarCodec, IntsCodec, BuggyCodec, ForgetfulCodec, TooManyCodec, AtMostCodec):
        registry.register(codec)
    return registry


def encoder(registry: rk.CodecRegistry, **fields: rk.FieldSpec) -> rk.RecordEncoder:
    return rk.RecordEncoder(rk.Schema(name="t", fields=fields).bind(registry))


def spec(codec: str = "scalar", **kwargs: Any) -> rk.FieldSpec:
    return rk.FieldSpec(codec=codec, **kwargs)


def features(data: bytes) -> dict[str, list[Any]]:
    return {key: list(values) for key, (_, values) in decode_example(data).items()}


# -- encoding -------------------------------------------------------------------------------------


def test_fields_become_their_keys(registry: rk.CodecRegistry) -> None:
    enc = encoder(
        registry,
        label=spec(options={"dtype": "int64"}),
        name=spec(options={"dtype": "str"}),
        score=spec(options={"dtype": "float32"}),
        ids=spec("ints"),
    )
    data = enc.encode({"label": -3, "name": "cät", "score": 0.5, "ids": [1, 2, 3]})
    assert features(data) == {"label": [-3], "name": ["cät".encode()], "score": [0.5], "ids": [1, 2, 3]}
    parsed = tf.train.Example.FromString(data)
    assert parsed.features.feature["ids"].int64_list.value == [1, 2, 3]


def test_records_may_be_pydantic_models(registry: rk.CodecRegistry) -> None:
    class Row(pydantic.BaseModel):
        label: int
        name: str

    enc = encoder(registry, label=spec(), name=spec(options={"dtype": "str"}))
    assert enc.encode(Row(label=1, name="x")) == enc.encode({"label": 1, "name": "x"})


def test_optional_field_gets_a_presence_flag_only_when_present(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, label=spec(), note=spec(options={"dtype": "str"}, optional=True))
    assert features(enc.encode({"label": 1})) == {"label": [1]}
    assert features(enc.encode({"label": 1, "note": None})) == {"label": [1]}
    present = features(enc.encode({"label": 1, "note": "hi"}))
    assert present == {"label": [1], "note": [b"hi"], "note/present": [1]}


def test_default_fills_a_missing_field(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, label=spec(), split=spec(options={"dtype": "str"}, default="train"))
    assert features(enc.encode({"label": 1})) == {"label": [1], "split": [b"train"]}


def test_sequence_of_fixed_values_is_concatenated(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, tags=spec(options={"dtype": "str"}, sequence=True))
    assert features(enc.encode({"tags": ["a", "bb", "c"]})) == {"tags": [b"a", b"bb", b"c"]}
    assert features(enc.encode({"tags": []})) == {"tags": []}


def test_sequence_of_variable_values_stores_lengths(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, groups=spec("ints", sequence=True))
    data = enc.encode({"groups": [[1, 2], [], [3]]})
    assert features(data) == {"groups": [1, 2, 3], "groups/lengths": [2, 0, 1]}
    assert decode_example(data)["groups"][0] is WireKind.INT64


def test_encode_with_sizes_is_deprecated_for_byte_breakdown(registry: rk.CodecRegistry) -> None:
    """The twin of rk.byte_breakdown still answers, with a warning naming its replacement."""
    enc = encoder(registry, small=spec(), big=spec(options={"dtype": "str"}))
    record = {"small": 1, "big": "x" * 5000}
    with pytest.warns(DeprecationWarning, match=r"encode_with_sizes is deprecated: call encode\(\), then"):
        encoded = enc.encode_with_sizes(record, 0)
    assert encoded.data == enc.encode(record)
    sizes = rk.byte_breakdown(enc.bound, encoded.data)
    assert dict(encoded.field_bytes) == {"small": sizes["small"], "big": sizes["big"]}
    assert encoded.field_bytes["big"] > 5000
    with pytest.warns(DeprecationWarning, match=r"recordkit.EncodedRecord is deprecated"):
        assert isinstance(encoded, rk.EncodedRecord)


# -- errors name the record and the field, and come all at once -----------------------------------


def test_one_bad_field_raises_its_own_error_with_context(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, label=spec(), name=spec(options={"dtype": "str"}))
    with pytest.raises(rk.errors.InvalidValueError) as info:
        enc.encode({"label": 1, "name": 7}, 12)
    assert str(info.value) == "record 12, field 'name': expected a str, got int"


def test_a_misspelt_field_gets_a_suggestion(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, label=spec(), name=spec(options={"dtype": "str"}))
    with pytest.raises(rk.errors.RecordError) as info:
        enc.encode({"label": 1, "name": "x", "nmae": "y"}, 4)
    assert str(info.value) == "record 4, field 'nmae': not a field of the schema (did you mean 'name'?)"


def test_all_errors_of_a_record_are_collected(registry: rk.CodecRegistry) -> None:
    enc = encoder(
        registry, label=spec(), name=spec(options={"dtype": "str"}), score=spec(options={"dtype": "float32"})
    )
    with pytest.raises(rk.errors.RecordError) as info:
        enc.encode({"name": b"bytes", "score": 1.0, "colour": "red"}, "img_007.jpg")
    error = info.value
    assert error.record == "img_007.jpg"
    assert str(error).startswith("record key 'img_007.jpg': 3 invalid fields:")
    by_field = {e.field: e for e in error.errors}
    assert set(by_field) == {"colour", "label", "name"}
    assert "not a field of the schema" in str(by_field["colour"])
    assert "did you mean" not in str(by_field["colour"])
    assert "missing" in str(by_field["label"])
    assert isinstance(by_field["name"], rk.errors.InvalidValueError)
    for sub in error.errors:
        assert sub.record == "img_007.jpg"
        assert f"field {sub.field!r}" in str(error)


def test_a_bad_sequence_element_is_named_by_index(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, tags=spec(options={"dtype": "str"}, sequence=True))
    with pytest.raises(rk.errors.InvalidValueError) as info:
        enc.encode({"tags": ["a", 2, "c"]}, 0)
    assert info.value.field == "tags[1]"
    assert str(info.value) == "record 0, field 'tags[1]': expected a str, got int"


def test_a_record_that_is_not_a_mapping_is_named(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, tags=spec(options={"dtype": "str"}, sequence=True))
    with pytest.raises(rk.errors.RecordError) as info:
        enc.encode(["not", "a", "mapping"], 3)
    assert info.value.record == 3
    assert str(info.value) == "record 3: a record must be a mapping or a Record, not list"


def test_every_bad_sequence_element_is_named(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, tags=spec(options={"dtype": "str"}, sequence=True))
    with pytest.raises(rk.errors.RecordError) as info:
        enc.encode({"tags": [1, "ok", 2.5]}, 7)
    assert info.value.field == "tags"
    assert [(e.field, e.record) for e in info.value.errors] == [("tags[0]", 7), ("tags[2]", 7)]
    message = str(info.value)
    assert message.startswith("record 7, field 'tags': 2 invalid elements:")
    assert "field 'tags[0]': expected a str, got int" in message
    assert "field 'tags[2]': expected a str, got float" in message


def test_a_sequence_field_takes_a_list(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, tags=spec(options={"dtype": "str"}, sequence=True))
    with pytest.raises(rk.errors.InvalidValueError, match="takes a list, not str") as info:
        enc.encode({"tags": "abc"}, 3)
    assert (info.value.field, info.value.record) == ("tags", 3)


def test_a_codec_bug_keeps_the_context_and_the_cause(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, ratio=spec("buggy"))
    with pytest.raises(rk.errors.InvalidValueError, match="codec 'buggy' failed: ZeroDivisionError") as info:
        enc.encode({"ratio": 0}, 5)
    assert (info.value.field, info.value.record) == ("ratio", 5)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize("sequence", [False, True])
def test_a_codec_that_skips_a_wire_feature_is_caught(registry: rk.CodecRegistry, sequence: bool) -> None:
    enc = encoder(registry, x=spec("forgetful", sequence=sequence))
    reason = r"returned no value for its wire feature ''"
    with pytest.raises(rk.errors.InvalidValueError, match=reason) as info:
        enc.encode({"x": [1, 2] if sequence else 1}, 0)
    assert (info.value.field, info.value.record) == ("x", 0)


def test_float32_scalars_round_as_numpy_does(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, x=spec(options={"dtype": "float32"}))
    values = [0.1, -2.5e-40, 3.4e38, 1e-46, float("inf"), float("nan"), 16777217.0]
    out = rk.make_parser(enc.bound)(tf.constant([enc.encode({"x": v}) for v in values]))
    np.testing.assert_array_equal(out["x"].numpy(), np.asarray(values, dtype=np.float32))


def test_a_wrong_number_of_values_for_the_shape_is_caught(registry: rk.CodecRegistry) -> None:
    with pytest.raises(rk.errors.InvalidValueError, match=r"holds 2 values, its shape \(\) needs 1"):
        encoder(registry, x=spec("toomany")).encode({"x": 1}, 0)


def test_related_fields_are_checked_after_encoding(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, limit=spec(), value=spec("atmost"))
    assert features(enc.encode({"limit": 5, "value": 5})) == {"limit": [5], "value": [5]}
    with pytest.raises(rk.errors.InvalidValueError, match="6 exceeds the limit 5") as info:
        enc.encode({"limit": 5, "value": 6}, 9)
    assert (info.value.field, info.value.record) == ("value", 9)


def test_a_missing_related_field_is_a_schema_error(registry: rk.CodecRegistry) -> None:
    schema = rk.Schema(name="t", fields={"value": spec("atmost")})
    with pytest.raises(rk.errors.SchemaError, match="refers to field 'limit'") as info:
        schema.bind(registry)
    assert info.value.field == "value"


def test_a_record_must_be_a_mapping(registry: rk.CodecRegistry) -> None:
    with pytest.raises(rk.errors.RecordError, match="a record must be a mapping or a Record, not list"):
        encoder(registry, x=spec()).encode([1, 2])


def test_encoded_values_survive_tensorflow_parsing(registry: rk.CodecRegistry) -> None:
    enc = encoder(registry, x=spec(options={"dtype": "float64"}), flag=spec(options={"dtype": "bool"}))
    batch = [enc.encode({"x": 0.1, "flag": True}), enc.encode({"x": -1e300, "flag": False})]
    out = rk.make_parser(enc.bound)(tf.constant(batch))
    np.testing.assert_array_equal(out["x"].numpy(), [0.1, -1e300])
    assert out["flag"].numpy().tolist() == [True, False]
