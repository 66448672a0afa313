"""The generated JSON Schema of schema files and the reference page made from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import recordkit as rk
from recordkit import schema_jsonschema

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_files_are_current() -> None:
    stale = schema_jsonschema.stale_files(ROOT)
    assert stale == [], f"regenerate with: python -m recordkit.schema_jsonschema ({stale})"
    assert schema_jsonschema.main(["--root", str(ROOT), "--check"]) == 0


def test_main_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert schema_jsonschema.main(["--root", str(tmp_path), "--check"]) == 1
    assert "stale: schemas/recordkit-schema.json" in capsys.readouterr().err
    assert schema_jsonschema.main(["--root", str(tmp_path)]) == 0
    assert schema_jsonschema.main(["--root", str(tmp_path), "--check"]) == 0
    written = json.loads((tmp_path / schema_jsonschema.JSON_SCHEMA_PATH).read_text(encoding="utf-8"))
    assert written == schema_jsonschema.json_schema()
    (tmp_path / schema_jsonschema.REFERENCE_PATH).write_text("edited by hand\n", encoding="utf-8")
    assert schema_jsonschema.stale_files(tmp_path) == [schema_jsonschema.REFERENCE_PATH]


def _validator() -> jsonschema.protocols.Validator:
    schema = schema_jsonschema.json_schema()
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)  # a valid draft 2020-12 schema
    return validator_class(schema)


def test_the_reference_example_is_valid_everywhere() -> None:
    data = yaml.safe_load(schema_jsonschema.EXAMPLE)
    _validator().validate(data)
    schema = rk.Schema.loads(schema_jsonschema.EXAMPLE)  # and binds with the built-in codecs
    assert schema.fields["views"].sequence
    assert schema_jsonschema.EXAMPLE in schema_jsonschema.reference_markdown()


@pytest.mark.parametrize(
    ("data", "rule"),
    [
        ({"name": "x", "fields": {"a": {"codec": "scalar", "optional": True, "default": 1}}}, "not"),
        ({"name": "x", "fields": {"a/b": {"codec": "scalar"}}}, "pattern"),
        ({"name": "x", "fields": {}}, "minProperties"),
        ({"name": "x", "version": 1.0, "fields": {"a": {"codec": "scalar"}}}, "type"),
        ({"name": "x", "fields": {"a": {"codec": "scalar", "extra": 1}}}, "additionalProperties"),
        ({"fields": {"a": {"codec": "scalar"}}}, "required"),
    ],
)
def test_the_json_schema_refuses_what_the_loader_refuses(data: dict[str, Any], rule: str) -> None:
    errors = list(_validator().iter_errors(data))
    assert rule in {e.validator for e in errors}
    with pytest.raises(rk.errors.SchemaFileError):
        rk.Schema.loads(json.dumps(data), "json", check=False)


def test_the_json_schema_accepts_the_editor_key_and_null_defaults() -> None:
    data = {
        "$schema": "recordkit-schema.json",
        "name": "x",
        "fields": {"a": {"codec": "scalar", "optional": True, "default": None}},
    }
    _validator().validate(data)
    assert rk.Schema.loads(json.dumps(data), "json", check=False).fields["a"].optional


def _rules(errors: Any) -> set[str]:
    """The validators that failed, with those inside ``anyOf`` branches."""
    out: set[str] = set()
    for error in errors:
        out.add(str(error.validator))
        out |= _rules(error.context or [])
    return out


def _tensor(keys: dict[str, Any]) -> dict[str, Any]:
    options = {"dtype": "uint8", "shape": [None, None, 3]}
    return {"name": "voc", "fields": {"image": {"codec": "tensor", "options": options, "keys": keys}}}


def test_the_json_schema_takes_a_constant_among_column_keys() -> None:
    """The segmentation tutorial's ``shape: [height, width, 3]`` (no depth key)."""
    data = _tensor({"": "image_raw", "shape": ["height", "width", 3]})
    _validator().validate(data)
    assert rk.Schema.loads(json.dumps(data), "json").fields["image"].keys["shape"] == ["height", "width", 3]
    assert "list of (strings or numbers, at least one string)" in schema_jsonschema.reference_markdown()


@pytest.mark.parametrize(
    ("shape", "rule"),
    [
        ([480, 640, 3], "contains"),  # no key: nothing stored
        ([], "minItems"),
        (["height", "", 3], "minLength"),
        (["height", "width", True], "anyOf"),
        (["height", "width", None], "anyOf"),
    ],
)
def test_the_json_schema_refuses_columns_the_loader_refuses(shape: list[Any], rule: str) -> None:
    data = _tensor({"": "image_raw", "shape": shape})
    assert rule in _rules(_validator().iter_errors(data))
    with pytest.raises(rk.errors.SchemaFileError, match=r"keys\['shape'\]"):
        rk.Schema.loads(json.dumps(data), "json", check=False)
