"""Schema files: loading, dumping, the example files in schemas/, and errors that point at lines."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from _schema_codecs import registry as schema_registry
from hypothesis import given
from hypothesis import strategies as st

import recordkit as rk
from recordkit.errors import CodecOptionsError, SchemaError, SchemaFileError, UnknownCodecError
from recordkit.schema import _file as _schema_file

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "schemas").glob("*.yaml"))
REGISTRY = schema_registry()

GOOD = """\
name: points
version: 1.0.0
description: Points and their ids.
fields:
  id:
    codec: scalar
  position:
    codec: vector
    options:
      size: 3
      scale: 2.0
    description: Where it is.
  note:
    codec: scalar
    options: {dtype: str}
    optional: true
"""


def line_of(text: str, needle: str) -> int:
    """The 1-based line of ``text`` where ``needle`` first appears."""
    return next(i for i, row in enumerate(text.splitlines(), 1) if needle in row)


def load(text: str, **kwargs: Any) -> rk.Schema:
    return rk.Schema.loads(text, source="points.yaml", registry=REGISTRY, **kwargs)


def test_example_files_exist() -> None:
    names = {path.name for path in EXAMPLES}
    assert {
        "image-classification.yaml",
        "object-detection.yaml",
        "segmentation.yaml",
        "speech.yaml",
        "multimodal.yaml",
    } <= names


# -- the example files (need the built-in codecs) ----------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_loads_dumps_and_loads_again_equal(path: Path, tmp_path: Path) -> None:
    loaded = rk.Schema.load(path)
    fingerprint = loaded.fingerprint()
    for suffix in (".yaml", ".json"):
        out = tmp_path / f"again{suffix}"
        loaded.dump(out)
        again = rk.Schema.load(out)
        assert again == loaded
        assert again.fingerprint() == fingerprint
    assert rk.Schema.loads(loaded.dumps()) == loaded
    assert rk.Schema.loads(loaded.dumps("json"), "json") == loaded
    assert rk.Schema.load(path, check=False) == loaded


def _variants(data: dict[str, Any]) -> list[str]:
    """The same schema written differently: flow style with sorted keys, fields and keys
    in reverse order, other descriptions, and JSON."""
    flow = yaml.safe_dump(data, default_flow_style=True, sort_keys=True, width=60)
    reversed_data = dict(reversed(list(data.items())))
    reversed_data["fields"] = {
        name: dict(reversed(list(spec.items()))) for name, spec in reversed(list(data["fields"].items()))
    }
    block = "# a comment\n\n" + yaml.safe_dump(reversed_data, sort_keys=False, indent=4)
    described = copy.deepcopy(data)
    described["description"] = "Something else entirely."
    for name, spec in described["fields"].items():
        spec["description"] = f"Now described: {name}"
    return [flow, block, yaml.safe_dump(described), json.dumps(data)]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_reformatting_an_example_keeps_its_fingerprint(path: Path) -> None:
    reference = rk.Schema.load(path).fingerprint()
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for i, text in enumerate(_variants(data)):
        fmt = "json" if i == 3 else "yaml"
        assert rk.Schema.loads(text, fmt).fingerprint() == reference, text


# One option change per example, and one option set explicitly to its default.
OPTION_CHANGES = {
    "image-classification.yaml": ("label", "names", ["daisy", "dandelion", "roses", "sunflowers"]),
    "object-detection.yaml": ("objects", "normalized", True),
    "segmentation.yaml": ("mask", "num_classes", 22),
    "speech.yaml": ("audio", "sample_rate", 8000),
    "multimodal.yaml": ("frame", "quality", 80),
}
DEFAULT_OPTIONS = {
    "image-classification.yaml": ("filename", "overflow", "error"),
    "object-detection.yaml": ("objects", "tolerance", 1e-6),  # (format is a decode option: not stored)
    "segmentation.yaml": ("image", "alpha", "error"),
    "speech.yaml": ("audio", "subtype", "PCM_16"),
    "multimodal.yaml": ("objects", "normalized", True),
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_changing_an_option_changes_the_fingerprint(path: Path) -> None:
    reference = rk.Schema.load(path).fingerprint()
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    field, option, value = OPTION_CHANGES[path.name]
    changed = copy.deepcopy(data)
    assert changed["fields"][field].setdefault("options", {}).get(option) != value
    changed["fields"][field]["options"][option] = value
    assert rk.Schema.loads(yaml.safe_dump(changed)).fingerprint() != reference
    field, option, value = DEFAULT_OPTIONS[path.name]
    explicit = copy.deepcopy(data)
    assert option not in explicit["fields"][field].get("options", {})
    explicit["fields"][field].setdefault("options", {})[option] = value
    assert rk.Schema.loads(yaml.safe_dump(explicit)).fingerprint() == reference


# What is stored, changed one way at a time in multimodal.yaml: each changes the
# fingerprint. The first stores the same wire kind and shape under another codec.
LAYOUT_CHANGES = {
    "codec": ("caption", {"codec": "scalar", "options": {"dtype": "str"}, "optional": True}),
    "kind": ("embedding", {"codec": "tensor", "options": {"dtype": "int64", "shape": [128]},
                           "optional": True}),
    "shape": ("embedding", {"codec": "tensor", "options": {"dtype": "float32", "shape": [64]},
                            "optional": True}),
    "optional": ("caption", {"codec": "text", "options": {"max_length": 500}}),
    "sequence": ("frame", {"codec": "image", "options": {"format": "jpeg", "quality": 90, "channels": 3},
                           "sequence": True}),
    "default": ("caption", {"codec": "text", "options": {"max_length": 500}, "default": "none"}),
    "key": ("scene", {"codec": "label", "options": {"names": ["indoor", "outdoor", "underwater"]},
                      "keys": {"": "scene_label"}}),
}  # fmt: skip


@pytest.mark.parametrize("change", sorted(LAYOUT_CHANGES))
def test_changing_what_is_stored_changes_the_fingerprint(change: str) -> None:
    path = ROOT / "schemas" / "multimodal.yaml"
    stored = rk.Schema.load(path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    field, spec = LAYOUT_CHANGES[change]
    before = {k: v for k, v in data["fields"][field].items() if k != "description"}
    assert before != spec
    data["fields"][field] = {**spec, "description": data["fields"][field].get("description", "")}
    changed = rk.Schema.loads(yaml.safe_dump(data, sort_keys=False))
    assert changed.fingerprint() != stored.fingerprint()
    # ... while the same change written back leaves it as it was.
    data["fields"][field] = before
    assert rk.Schema.loads(yaml.safe_dump(data)).fingerprint() == stored.fingerprint()


def test_a_broken_example_names_file_line_field_and_option(tmp_path: Path) -> None:
    text = (ROOT / "schemas" / "multimodal.yaml").read_text(encoding="utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text(text.replace("quality: 90", "quality: 900"), encoding="utf-8")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "quality: 90" in row)
    with pytest.raises(CodecOptionsError) as err:
        rk.Schema.load(broken)
    message = str(err.value)
    assert err.value.field == "frame"
    assert err.value.context.line == line
    assert err.value.context.file == str(broken)
    assert f"file {broken}, line {line}, field 'frame', codec 'image': option 'quality'" in message
    assert "less than or equal to 100 (got 900)" in message


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_validate_against_the_json_schema(path: Path) -> None:
    json_schema = json.loads((ROOT / "schemas" / "recordkit-schema.json").read_text(encoding="utf-8"))
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    jsonschema.validate(data, json_schema)
    bad = copy.deepcopy(data)
    next(iter(bad["fields"].values()))["codec_name"] = "image"
    with pytest.raises(jsonschema.ValidationError, match="codec_name"):
        jsonschema.validate(bad, json_schema)


# -- loading and dumping ----------------------------------------------------------------------


def test_load_and_dump_round_trip() -> None:
    schema = load(GOOD)
    assert schema.name == "points"
    assert schema.description == "Points and their ids."
    assert list(schema.fields) == ["id", "position", "note"]
    assert schema.fields["position"].options == {"size": 3, "scale": 2.0}
    assert schema.fields["note"].optional is True
    assert load(schema.dumps()) == schema
    assert rk.Schema.loads(schema.dumps("json"), "json", registry=REGISTRY) == schema
    # Keys at their defaults stay out of the file.
    dumped = yaml.safe_load(schema.dumps())
    assert dumped["fields"]["id"] == {"codec": "scalar"}
    assert list(dumped) == ["name", "version", "description", "fields"]


def test_dump_picks_the_format_from_the_suffix(tmp_path: Path) -> None:
    schema = load(GOOD)
    schema.dump(tmp_path / "s.json")
    schema.dump(tmp_path / "s.yml")
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["name"] == "points"
    assert (tmp_path / "s.yml").read_text(encoding="utf-8").startswith("name: points\n")
    assert rk.Schema.load(tmp_path / "s.json", registry=REGISTRY) == schema
    assert rk.Schema.load(tmp_path / "s.yml", registry=REGISTRY) == schema


def test_multi_line_text_is_dumped_as_a_block() -> None:
    schema = load(GOOD.replace("Points and their ids.", '"Points.\\n\\nAnd their ids."'))
    text = schema.dumps()
    assert "description: |-\n  Points.\n\n  And their ids.\n" in text
    assert load(text) == schema


def test_a_schema_key_for_editors_is_ignored() -> None:
    data = yaml.safe_load(GOOD)
    with_key = json.dumps({"$schema": "../schemas/recordkit-schema.json", **data})
    assert rk.Schema.loads(with_key, "json", registry=REGISTRY) == load(GOOD)


def test_keys_are_read_as_written() -> None:
    # YAML 1.1 reads these as booleans and numbers; in a schema file they are names.
    schema = load("name: flags\nfields:\n  no: {codec: scalar}\n  on: {codec: scalar}\n  n1: {codec: scalar}")
    assert list(schema.fields) == ["no", "on", "n1"]


def test_aliases_are_allowed() -> None:
    text = GOOD.replace("    options:\n      size: 3", "    options: &opts\n      size: 3")
    text += "  copy:\n    codec: vector\n    options: *opts\n"
    schema = load(text)
    assert schema.fields["copy"].options == schema.fields["position"].options


def test_check_false_skips_the_codecs() -> None:
    text = GOOD.replace("codec: vector", "codec: not-installed")
    schema = load(text, check=False)
    assert schema.fields["position"].codec == "not-installed"
    with pytest.raises(UnknownCodecError):
        load(text)


VOC = """\
name: voc
fields:
  image:
    codec: tensor
    options: {dtype: uint8, shape: [null, null, 3]}
    keys: {"": image_raw, shape: [height, width, 3]}
  mask:
    codec: tensor
    options: {dtype: uint8, shape: [null, null]}
    keys: {"": mask_raw, shape: [height, width]}
"""


def test_a_constant_among_column_keys_round_trips(tmp_path: Path) -> None:
    """The segmentation tutorial's layout stores no depth: ``shape: [height, width, 3]``
    (built-in codecs) dumps and loads back equal, with an equal fingerprint."""
    schema = rk.Schema.loads(VOC, source="voc.yaml")
    assert schema.fields["image"].keys["shape"] == ["height", "width", 3]
    for name in ("voc.yaml", "voc.json"):
        schema.dump(tmp_path / name)
        again = rk.Schema.load(tmp_path / name)
        assert again == schema
        assert again.fingerprint() == schema.fingerprint()
    dumped = yaml.safe_load((tmp_path / "voc.yaml").read_text(encoding="utf-8"))
    assert dumped["fields"]["image"]["keys"]["shape"] == ["height", "width", 3]
    assert rk.Schema.loads(VOC.replace("width, 3]", "width, 3.0]")).fingerprint() == schema.fingerprint()
    assert rk.Schema.loads(VOC.replace("width, 3]", "width, depth]")).fingerprint() != schema.fingerprint()


@pytest.mark.parametrize(
    ("keys", "kind", "problem"),
    [
        (
            '{"": 3, shape: [height, width, 3]}',
            SchemaError,
            "keys['']: a constant needs a numeric wire feature of fixed shape, but the main wire "
            "feature is bytes of shape []",
        ),
        (
            '{"": [image_raw, 3], shape: [height, width, 3]}',
            SchemaError,
            "keys[''][1]: a constant needs a numeric wire feature of fixed shape, but the main wire "
            "feature is bytes of shape [] (got the number 3; give the Example key that stores it)",
        ),
        (
            '{"": image_raw, shape: [480, 640, 3]}',
            SchemaFileError,
            "keys['shape']: a list of columns needs at least one key (a string); [480, 640, 3] stores "
            "nothing (a constant alone is a number, not a list)",
        ),
        (
            '{"": image_raw, shape: [height, width, yes]}',
            SchemaFileError,
            "keys['shape'][2]: True is not a key or a finite number (a boolean, not a number)",
        ),
        (
            '{"": image_raw, shape: [height, width, .nan]}',
            SchemaFileError,
            "keys['shape'][2]: nan is not a key or a finite number (not finite)",
        ),
        (
            '{"": image_raw, shape: [height, width]}',
            SchemaError,
            "keys['shape'] lists 2 columns, but the wire feature's shape (3,) does not end in 2",
        ),
    ],
)
def test_bad_constants_among_keys_name_the_file_line_and_field(
    keys: str, kind: type[Exception], problem: str
) -> None:
    text = VOC.replace('{"": image_raw, shape: [height, width, 3]}', keys)
    with pytest.raises(kind) as err:
        rk.Schema.loads(text, source="voc.yaml")
    assert str(err.value).startswith("file voc.yaml, line ")
    assert "field 'image'" in str(err.value)
    assert problem in str(err.value)


# -- errors -----------------------------------------------------------------------------------


def _error(text: str, kind: type[Exception] = SchemaFileError, fmt: str = "yaml") -> Any:
    with pytest.raises(kind) as err:
        rk.Schema.loads(text, fmt, source="points.yaml", registry=REGISTRY)
    return err.value


def test_bad_option_value_names_field_option_and_line() -> None:
    err = _error(GOOD.replace("size: 3", "size: 0"), CodecOptionsError)
    line = line_of(GOOD, "size: 3")
    assert (err.context.file, err.context.line, err.field) == ("points.yaml", line, "position")
    assert err.context.codec == "vector"
    assert str(err) == (
        f"file points.yaml, line {line}, field 'position', codec 'vector': "
        "option 'size': Input should be greater than or equal to 1 (got 0)"
    )


def test_option_of_the_wrong_type_names_field_option_and_line() -> None:
    err = _error(GOOD.replace("size: 3", "size: three"), CodecOptionsError)
    line = line_of(GOOD, "size: 3")
    assert str(err) == (
        f"file points.yaml, line {line}, field 'position', codec 'vector': option 'size': "
        "Input should be a valid integer, unable to parse string as an integer (got 'three')"
    )


def test_errors_name_the_file_they_were_loaded_from(tmp_path: Path) -> None:
    path = tmp_path / "pets.yaml"
    path.write_text(GOOD.replace("codec: vector", "codec: vectr"), encoding="utf-8")
    with pytest.raises(UnknownCodecError) as err:
        rk.Schema.load(path, registry=REGISTRY)
    assert err.value.context.file == str(path)
    assert str(err.value).startswith(f"file {path}, line {line_of(GOOD, 'codec: vector')}, field 'position'")
    path.write_text(GOOD + "  bad: [\n", encoding="utf-8")
    with pytest.raises(SchemaFileError) as syntax:
        rk.Schema.load(path, registry=REGISTRY)
    assert str(syntax.value).startswith(f"file {path}, line ")


def test_unknown_option_lists_the_codecs_options() -> None:
    err = _error(GOOD.replace("scale: 2.0", "scael: 2.0"), CodecOptionsError)
    assert err.context.line == line_of(GOOD, "scale: 2.0")
    expected = "unknown option 'scael' (did you mean 'scale'? options of codec 'vector': size, scale, like)"
    assert expected in str(err)


def test_missing_required_option_points_at_the_options() -> None:
    err = _error(GOOD.replace("      size: 3\n", ""), CodecOptionsError)
    assert err.context.line == line_of(GOOD, "options:")
    assert "missing required option 'size'" in str(err)


def test_unknown_codec_lists_the_installed_ones() -> None:
    err = _error(GOOD.replace("codec: vector", "codec: vectr"), UnknownCodecError)
    assert (err.context.line, err.field) == (line_of(GOOD, "codec: vector"), "position")
    expected = "no codec named 'vectr' is installed (did you mean 'vector'? installed: scalar, vector)"
    assert expected in str(err)


def test_no_suggestion_when_nothing_is_close() -> None:
    err = _error(GOOD.replace("codec: vector", "codec: spectrogram"), UnknownCodecError)
    assert "no codec named 'spectrogram' is installed (installed: scalar, vector)" in str(err)
    assert "did you mean" not in str(err)


def test_unknown_key_in_a_field() -> None:
    err = _error(GOOD.replace("    optional: true", "    optinal: true"))
    assert (err.context.line, err.field) == (line_of(GOOD, "optional: true"), "note")
    expected = "unknown key 'optinal' (did you mean 'optional'? allowed: codec, options, optional, default"
    assert expected in str(err)


def test_unknown_top_level_key_and_missing_name() -> None:
    err = _error(GOOD.replace("name: points", "title: points"))
    assert "2 problems:" in str(err)
    assert "line 1: unknown key 'title' (allowed: name, version, description, fields, card, $schema)" in str(
        err
    )
    assert "did you mean" not in str(err)  # 'title' is close to no key
    err = _error(GOOD.replace("name: points", "nme: points"))
    assert "line 1: unknown key 'nme' (did you mean 'name'? allowed: name, version" in str(err)
    assert "missing required key 'name'" in str(err)


def test_a_field_that_is_not_a_mapping() -> None:
    err = _error(GOOD.replace("  id:\n    codec: scalar\n", "  id: scalar\n"))
    assert (err.context.line, err.field) == (line_of(GOOD, "id:"), "id")
    assert "a field must be a mapping with a codec ({codec: ..., options: ...}), not 'scalar'" in str(err)
    err = _error(GOOD.replace("  id:\n    codec: scalar\n", "  id:\n"))
    assert "a field must be a mapping with a codec" in str(err)
    assert "not nothing" in str(err)


def test_wrong_type_names_the_key_and_value() -> None:
    err = _error(GOOD.replace("optional: true", "optional: perhaps"))
    assert (err.context.line, err.field) == (line_of(GOOD, "optional: true"), "note")
    assert "key 'optional': Input should be a valid boolean" in str(err)
    assert "(got 'perhaps')" in str(err)


def test_unquoted_numeric_version() -> None:
    err = _error(GOOD.replace("version: 1.0.0", "version: 1.0"))
    assert err.context.line == 2
    assert 'must be a string, not the number 1.0; quote it ("1.0")' in str(err)
    err = _error(GOOD.replace("version: 1.0.0", "version: 2024-01-31"))
    assert err.context.line == 2
    assert 'must be a string, not the date 2024-01-31; quote it ("2024-01-31")' in str(err)


def test_bad_field_name_points_at_it() -> None:
    err = _error(GOOD.replace("  note:", "  note/x:"))
    assert (err.context.line, err.field) == (line_of(GOOD, "  note:"), "note/x")
    assert "invalid field name" in str(err)


def test_duplicate_keys_are_errors() -> None:
    text = GOOD.replace("      scale: 2.0", "      scale: 2.0\n      size: 4")
    err = _error(text)
    assert (err.context.line, err.field) == (line_of(text, "size: 4"), "position")
    assert f"duplicate key 'size' (first at line {line_of(text, 'size: 3')})" in str(err)
    err = _error(GOOD + "  id:\n    codec: scalar\n")
    assert f"duplicate key 'id' (first at line {line_of(GOOD, 'id:')})" in str(err)
    # The top level and flow mappings too.
    err = _error(GOOD.replace("version: 1.0.0", "version: 1.0.0\nname: other"))
    assert (err.context.line, err.field) == (3, None)
    assert "duplicate key 'name' (first at line 1)" in str(err)
    text = GOOD.replace("options: {dtype: str}", "options: {dtype: str, dtype: int64}")
    err = _error(text)
    assert (err.context.line, err.field) == (line_of(text, "dtype: int64"), "note")
    assert "duplicate key 'dtype'" in str(err)
    # (PyYAML's safe_load alone would silently keep the last one.)
    assert yaml.safe_load(text)["fields"]["note"]["options"] == {"dtype": "int64"}


def test_json_errors_have_lines_too() -> None:
    data = yaml.safe_load(GOOD)
    text = json.dumps(data, indent=2)
    err = _error(text.replace('"size": 3', '"size": -3'), CodecOptionsError, "json")
    assert err.context.line == next(i for i, row in enumerate(text.splitlines(), 1) if '"size"' in row)
    err = _error(text.replace('"size": 3', '"size": 3, "size": 4'), SchemaFileError, "json")
    assert "duplicate key 'size'" in str(err)
    assert err.context.line is not None
    err = _error(text.replace('"size": 3,', '"size": 3,,'), SchemaFileError, "json")
    assert "is not valid JSON" in str(err)
    assert err.context.line is not None


def test_yaml_syntax_error_has_a_line() -> None:
    err = _error(GOOD.replace("options: {dtype: str}", "options: {dtype: str"))
    assert "is not valid YAML" in str(err)
    assert err.context.line == line_of(GOOD, "optional: true")  # where the parser notices
    text = GOOD.replace("    codec: vector", "   codec: vector")  # bad indentation
    err = _error(text)
    assert err.context.line == line_of(text, "codec: vector") + 1
    assert str(err).startswith(f"file points.yaml, line {err.context.line}: is not valid YAML: ")
    err = _error(GOOD + "---\nname: second\n")
    assert "is not valid YAML: but found another document" in str(err)


def test_python_tags_are_refused() -> None:
    err = _error("name: x\nfields:\n  a: !!python/object/apply:os.system [echo hacked]\n")
    assert "is not valid YAML" in str(err)
    assert "python/object/apply" in str(err)


def test_alias_bombs_and_recursive_aliases_are_refused() -> None:
    bomb = ["name: x", "fields: {a: {codec: scalar}}", "l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        bomb.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    err = _error("\n".join(bomb) + "\n")
    assert "expands to more than 100000 values" in str(err)
    err = _error("name: x\nfields: &f {a: {codec: scalar, options: *f}}\n")
    assert "has a recursive alias" in str(err)
    assert err.context.line == 2


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "is empty"),
        ("- name\n- fields\n", "must hold a mapping (name, version, fields), not list"),
        ("name: x\nfields: {}\n", "at least one field"),
        ("name: x\nfields:\n  a: {codec: scalar, optional: true, default: 1}", "optional or has a default"),
        ("name: x\nfields:\n  ? [a, b]\n  : {codec: scalar}\n", "has a key that is not a plain name"),
    ],
)
def test_malformed_files(text: str, problem: str) -> None:
    assert problem in str(_error(text))


def test_errors_found_when_binding_carry_the_line() -> None:
    text = GOOD.replace("      scale: 2.0", "      scale: 2.0\n      like: nowhere")
    err = _error(text, SchemaError)
    assert (err.context.line, err.field) == (line_of(GOOD, "position:"), "position")
    assert "refers to field 'nowhere'" in str(err)
    text = GOOD.replace("codec: scalar\n  position", "codec: scalar\n    default: one\n  position")
    err = _error(text, SchemaError)
    assert (err.context.line, err.field) == (line_of(GOOD, "id:"), "id")
    assert "default 'one' is not a valid value" in str(err)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(SchemaFileError, match="no such file"):
        rk.Schema.load(tmp_path / "missing.yaml")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(SchemaFileError, match="is not UTF-8 text"):
        rk.Schema.load(latin)
    with pytest.raises(SchemaFileError, match="unknown schema file format 'toml'"):
        rk.Schema.loads(GOOD, "toml")  # type: ignore[arg-type]


# -- any schema survives its file -------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_specs = st.builds(
    lambda codec, optional, sequence, description, option: {
        "codec": codec,
        "options": {"size": option} if codec == "vector" else {"dtype": ["int64", "str", "bool"][option % 3]},
        "optional": optional,
        "sequence": sequence and codec == "scalar",
        "description": description,
    },
    st.sampled_from(["scalar", "vector"]),
    st.booleans(),
    st.booleans(),
    _text,
    st.integers(1, 9),
)


_field_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,8}", fullmatch=True)


@given(st.dictionaries(_field_names, _specs, min_size=1, max_size=4), _text, _text.filter(bool))
def test_any_schema_survives_yaml_and_json(fields: dict[str, Any], description: str, name: str) -> None:
    schema = rk.Schema(name=name, description=description, fields=fields)
    for fmt in ("yaml", "json"):
        again = rk.Schema.loads(schema.dumps(fmt), fmt, registry=REGISTRY)  # type: ignore[arg-type]
        assert again == schema
        assert list(again.fields) == list(schema.fields)
        assert again.fingerprint(REGISTRY) == schema.fingerprint(REGISTRY)


# -- safe loading, everywhere -----------------------------------------------------------------

#: PyYAML entry points that can build Python objects (or take a loader that can).
UNSAFE_YAML = {
    "load", "load_all", "full_load", "full_load_all", "unsafe_load", "unsafe_load_all",
    "Loader", "FullLoader", "UnsafeLoader", "CLoader", "CFullLoader", "CUnsafeLoader",
    "add_constructor", "add_multi_constructor",
}  # fmt: skip
#: Modules that turn bytes into arbitrary objects.
UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "marshal", "shelve", "jsonpickle"}


def _unsafe_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "yaml":
            if node.attr in UNSAFE_YAML:
                found.append(f"{path}:{node.lineno}: yaml.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "yaml":
            found += [
                f"{path}:{node.lineno}: from yaml import {a.name}"
                for a in node.names
                if a.name in UNSAFE_YAML
            ]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [
                f"{path}:{node.lineno}: import {m}" for m in modules if m.split(".")[0] in UNSAFE_MODULES
            ]
    return found


def test_the_library_reads_yaml_with_the_safe_loader_only_and_never_unpickles(tmp_path: Path) -> None:
    sources = [
        path
        for folder in ("sdk", "plugins")
        for path in (ROOT / folder).rglob("*.py")
        if not {"build", "__pycache__"} & set(path.parts)
    ]
    assert any(path.as_posix().endswith("schema/_file.py") for path in sources)
    assert [use for path in sources for use in _unsafe_uses(path)] == []
    assert issubclass(_schema_file._Loader, yaml.SafeLoader)
    # The checker does see unsafe uses.
    probe = tmp_path / "unsafe_probe.py"
    probe.write_text("import yaml, pickle\nyaml.load('a: 1', Loader=yaml.FullLoader)\n", encoding="utf-8")
    found = sorted(use.split(": ", 1)[1] for use in _unsafe_uses(probe))
    assert found == ["import pickle", "yaml.FullLoader", "yaml.load"]
