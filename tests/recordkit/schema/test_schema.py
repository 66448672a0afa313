"""The Schema core: field specs, binding, the fingerprint, and record validation."""

from __future__ import annotations

import json
import string
from typing import Any

import numpy as np
import pytest
from _schema_codecs import registry as schema_registry
from hypothesis import given
from hypothesis import strategies as st

import recordkit as rk
from recordkit.errors import CodecOptionsError, InvalidValueError, RecordError, SchemaError, UnknownCodecError

REGISTRY = schema_registry()


def schema(**fields: dict[str, Any]) -> rk.Schema:
    return rk.Schema(name="test", fields={name: rk.FieldSpec(**spec) for name, spec in fields.items()})


# -- field specs ------------------------------------------------------------------------------


def test_options_and_defaults_become_plain_data() -> None:
    spec = rk.FieldSpec(
        codec="vector",
        options={"size": np.int64(3), "scale": np.float32(0.5), "nested": ((1, 2), {"a": (3,)})},
        default=np.zeros(3, np.float32),
    )
    assert spec.options == {"size": 3, "scale": 0.5, "nested": [[1, 2], {"a": [3]}]}
    assert type(spec.options["size"]) is int
    assert spec.default == [0.0, 0.0, 0.0]
    json.dumps(spec.model_dump(mode="json"))  # all of it is JSON


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"size": object()}, "option 'size': object is not schema data"),
        ({"size": float("nan")}, "option 'size': nan is not allowed"),
        ({"size": {1: 2}}, "mapping keys must be strings"),
    ],
)
def test_options_that_are_not_data_are_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        rk.FieldSpec(codec="vector", options=options)


def test_optional_and_default_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="either optional or has a default"):
        rk.FieldSpec(codec="scalar", optional=True, default=3)
    assert rk.FieldSpec(codec="scalar", optional=True, default=None).has_default is False
    assert rk.FieldSpec(codec="scalar", default=0).has_default is True


@pytest.mark.parametrize("name", ["a/b", "1abc", "", "with space", "é"])
def test_bad_field_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="invalid field name"):
        schema(**{name: {"codec": "scalar"}})


def test_a_schema_needs_fields_and_a_string_version() -> None:
    with pytest.raises(ValueError, match="at least one field"):
        rk.Schema(name="x", fields={})
    with pytest.raises(ValueError, match=r"must be a string, not the number 1.5; quote it"):
        rk.Schema.model_validate({"name": "x", "version": 1.5, "fields": {"a": {"codec": "scalar"}}})


# -- binding ----------------------------------------------------------------------------------


def test_bind_names_the_field_of_an_unknown_codec_or_bad_options() -> None:
    with pytest.raises(UnknownCodecError) as unknown:
        schema(a={"codec": "scalar"}, b={"codec": "nope"}).bind(REGISTRY)
    assert unknown.value.field == "b"
    assert "installed: scalar, vector" in str(unknown.value)
    with pytest.raises(CodecOptionsError) as bad:
        schema(v={"codec": "vector", "options": {"size": 0}}).bind(REGISTRY)
    assert bad.value.field == "v"
    assert "size" in str(bad.value)


def test_bind_with_versions_gives_each_field_the_codec_that_reads_its_stored_version() -> None:
    from _versioned_codecs import SCHEMA, VersionedV1, VersionedV2, registry

    new = registry(VersionedV2)
    assert type(SCHEMA.bind(new)["numbers"].codec) is VersionedV2
    assert type(SCHEMA.bind(new, versions={})["numbers"].codec) is VersionedV2
    assert type(SCHEMA.bind(new, versions={"versioned": "2"})["numbers"].codec) is VersionedV2
    old = SCHEMA.bind(new, versions={"versioned": "1", "scalar": "1"})
    assert old["numbers"].codec == VersionedV1({"size": 3})
    assert [f.feature.kind for f in old["numbers"].features] == [rk.WireKind.INT64]
    assert old["id"].codec == SCHEMA.bind(new)["id"].codec
    only_id = SCHEMA.bind(new, fields=["id"], versions={"versioned": "9"})  # not bound: not asked
    assert [f.name for f in only_id.fields] == ["id"]


def test_bind_names_the_field_whose_codec_does_not_read_the_stored_version() -> None:
    from _versioned_codecs import SCHEMA, VersionedV1, registry

    with pytest.raises(rk.errors.CodecVersionError) as info:
        SCHEMA.bind(registry(VersionedV1), versions={"versioned": "2"})
    assert (info.value.field, info.value.context.codec) == ("numbers", "versioned")
    assert str(info.value).startswith(
        "field 'numbers', codec 'versioned': the records were stored by version 2 of codec 'versioned'; "
        "the installed codec is version 1"
    )


def test_bind_refuses_two_fields_writing_one_example_key() -> None:
    clash = schema(a={"codec": "scalar"}, b={"codec": "scalar", "keys": {"": "a"}})
    with pytest.raises(SchemaError, match="writes Example key 'a', which field 'a' writes too") as err:
        clash.bind(REGISTRY)
    assert err.value.field == "b"


def test_bind_refuses_a_related_field_the_schema_lacks() -> None:
    with pytest.raises(SchemaError, match="refers to field 'other'") as err:
        schema(v={"codec": "vector", "options": {"size": 2, "like": "other"}}).bind(REGISTRY)
    assert err.value.field == "v"


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"codec": "scalar", "default": "zero"}, "default 'zero' is not a valid value: expected a number"),
        ({"codec": "vector", "options": {"size": 2}, "default": [1, 2, 3]}, "expected 2 values"),
        ({"codec": "scalar", "sequence": True, "default": 3}, "must be a list"),
    ],
)
def test_bind_checks_the_default_once(spec: dict[str, Any], problem: str) -> None:
    with pytest.raises(SchemaError, match=problem) as err:
        schema(f=spec).bind(REGISTRY)
    assert err.value.field == "f"


def test_wire_layout_lists_what_is_stored() -> None:
    bound = schema(
        v={"codec": "vector", "options": {"size": 2}, "optional": True, "description": "words"},
        s={"codec": "scalar", "sequence": True},
    ).bind(REGISTRY)
    layout = {entry["field"]: entry for entry in bound.wire_layout()}
    assert layout["v"]["options"] == {"size": 2, "scale": 1.0, "like": None}  # defaults filled in
    assert layout["v"]["presence_key"] == "v/present"
    assert layout["v"]["keys"] == [
        {"name": "", "kind": "float", "shape": [2], "key": "v", "lengths_key": None}
    ]
    assert layout["s"]["sequence"] is True
    assert "words" not in json.dumps(layout)


def test_a_number_among_column_keys_is_a_column_the_records_do_not_store() -> None:
    def vector(*columns: str | float) -> rk.BoundSchema:
        spec = {"codec": "vector", "options": {"size": 3}, "keys": {"": list(columns)}}
        return schema(v=spec).bind(REGISTRY)

    bound = vector("x", "y", 1)
    keyed = bound["v"].features[0]
    assert keyed.columns == ("x", "y", 1.0)
    assert isinstance(keyed.columns[2], float)  # the float feature's constant is a float
    assert (keyed.key, keyed.stored_keys, bound["v"].keys) == ("x", ("x", "y"), ["x", "y"])
    assert keyed.key_shape == ()
    wire = {"name": "", "kind": "float", "shape": [3], "key": "x", "lengths_key": None}
    assert bound.wire_layout()[0]["keys"] == [{**wire, "columns": ["x", "y", 1.0]}]
    # the constant is part of the layout: another number, or a key, is another layout
    assert vector("x", "y", 1.0).fingerprint() == bound.fingerprint()
    assert vector("x", "y", 2).fingerprint() != bound.fingerprint()
    assert vector("x", "y", "z").fingerprint() != bound.fingerprint()
    assert vector(0.5, "x", "y")["v"].features[0].key == "x"  # the first key, wherever it stands
    bound.validate_record({"v": [1.0, 2.0, 1.0]})  # the writer stores x and y, and checks the 1
    with pytest.raises(rk.errors.InvalidValueError, match=r"column 2 is \[2\.0\].* must be 1\.0"):
        bound.validate_record({"v": [1.0, 2.0, 2.0]})


# -- the fingerprint --------------------------------------------------------------------------

_names = st.text(string.ascii_lowercase, min_size=1, max_size=6)
_field = st.one_of(
    st.builds(
        lambda dtype, optional, sequence, text: {
            "codec": "scalar",
            "options": {"dtype": dtype},
            "optional": optional,
            "sequence": sequence,
            "description": text,
        },
        st.sampled_from(["int64", "int32", "float32", "float64", "bool", "str"]),
        st.booleans(),
        st.booleans(),
        st.text(max_size=20),
    ),
    st.builds(
        lambda size, scale, optional, text: {
            "codec": "vector",
            "options": {"size": size, "scale": scale},
            "optional": optional,
            "description": text,
        },
        st.integers(1, 8),
        st.sampled_from([0.5, 1.0, 2.0]),
        st.booleans(),
        st.text(max_size=20),
    ),
)
_schemas = st.dictionaries(_names, _field, min_size=1, max_size=5)


def _fingerprint(fields: dict[str, dict[str, Any]], **top: Any) -> str:
    declared = rk.Schema(name=top.get("name", "s"), description=top.get("description", ""), fields=fields)
    return declared.fingerprint(REGISTRY)


@given(_schemas, st.randoms(use_true_random=False), st.text(max_size=10))
def test_fingerprint_ignores_descriptions_names_and_field_order(
    fields: dict[str, dict[str, Any]], random: Any, text: str
) -> None:
    reference = _fingerprint(fields)
    described = {name: {**spec, "description": text + name} for name, spec in fields.items()}
    order = list(fields)
    random.shuffle(order)
    shuffled = {name: fields[name] for name in order}
    assert _fingerprint(described, name="other", description=text) == reference
    assert _fingerprint(shuffled) == reference
    # Options left at their defaults and given explicitly store the same layout.
    explicit = {
        name: {**spec, "options": {"scale": 1.0, **spec["options"]}} if spec["codec"] == "vector" else spec
        for name, spec in fields.items()
    }
    assert _fingerprint(explicit) == reference


@given(_schemas, st.data())
def test_fingerprint_changes_with_what_is_stored(fields: dict[str, dict[str, Any]], data: Any) -> None:
    reference = _fingerprint(fields)
    name = data.draw(st.sampled_from(sorted(fields)))
    spec = fields[name]
    changes: list[dict[str, Any]] = [{**spec, "optional": not spec["optional"]}]
    if spec["codec"] == "scalar":
        other = "int64" if spec["options"]["dtype"] != "int64" else "str"
        changes += [{**spec, "options": {"dtype": other}}, {**spec, "sequence": not spec["sequence"]}]
    else:
        size = spec["options"]["size"]
        changes += [
            {**spec, "options": {**spec["options"], "size": size + 1}},
            {**spec, "options": {**spec["options"], "scale": spec["options"]["scale"] * 3}},
        ]
    changes.append({**spec, "keys": {"": name + "_renamed"}})
    for changed in changes:
        assert _fingerprint({**fields, name: changed}) != reference, changed
    renamed = {(key + "_x" if key == name else key): value for key, value in fields.items()}
    assert _fingerprint(renamed) != reference
    assert _fingerprint({**fields, "zz_new": {"codec": "scalar"}}) != reference


def test_fingerprint_changes_with_a_default() -> None:
    base = {"codec": "scalar"}
    assert _fingerprint({"a": {**base, "default": 1}}) != _fingerprint({"a": {**base, "default": 2}})
    assert _fingerprint({"a": {**base, "default": 1}}) != _fingerprint({"a": base})


# -- record validation ------------------------------------------------------------------------


def test_validate_record_collects_every_error_with_record_and_field_path() -> None:
    s = schema(
        id={"codec": "scalar"},
        point={"codec": "vector", "options": {"size": 2}},
        other={"codec": "vector", "options": {"size": 3, "like": "point"}},
        tags={"codec": "scalar", "options": {"dtype": "str"}, "sequence": True},
        note={"codec": "scalar", "options": {"dtype": "str"}, "optional": True},
    )
    bound = s.bind(REGISTRY)
    good = {"id": 1, "point": [0.5, 1.0], "other": [1, 2, 3], "tags": ["a", "b"]}
    with pytest.raises(RecordError, match="has 3 values but field 'point' has 2"):
        bound.validate_record(good, 4)  # the related-field check runs like the writer's
    s2 = schema(
        id={"codec": "scalar"}, tags={"codec": "scalar", "options": {"dtype": "str"}, "sequence": True}
    )
    bound2 = s2.bind(REGISTRY)
    bound2.validate_record({"id": 1, "tags": ["a"]}, 0)
    assert bound2.record_errors({"id": 1, "tags": []}) == []

    errors = bound.record_errors({"point": [1.0], "tags": ["a", 3], "extra": 1, "other": [1, 2, 3]}, "key-7")
    by_field = {e.field: e for e in errors}
    assert set(by_field) == {"extra", "id", "point", "tags[1]"}
    assert all(e.record == "key-7" for e in errors)
    assert isinstance(by_field["tags[1]"], InvalidValueError)
    assert "expected a str, got int" in str(by_field["tags[1]"])
    assert "missing" in str(by_field["id"])

    with pytest.raises(RecordError) as raised:
        s.validate_record({"point": [1.0]}, 12, registry=REGISTRY)
    assert raised.value.record == 12
    assert {e.field for e in raised.value.errors} == {"id", "point", "other", "tags"}
    assert "record 12, field 'point'" in str(raised.value)


def test_record_errors_of_a_record_that_is_not_a_mapping() -> None:
    errors = schema(id={"codec": "scalar"}).record_errors(["not", "a", "record"], 3, registry=REGISTRY)
    assert len(errors) == 1
    assert errors[0].record == 3
    assert "must be a mapping or a Record" in str(errors[0])


def test_the_encoder_is_built_once_per_bound_schema() -> None:
    bound = schema(id={"codec": "scalar"}).bind(REGISTRY)
    assert bound.encoder() is bound.encoder()
