"""Compatibility rules between a stored schema and a requested one, field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from _schema_codecs import registry as schema_registry

import recordkit as rk
from recordkit.errors import IncompatibleSchemaError

REGISTRY = schema_registry()

STORED = {
    "id": {"codec": "scalar"},
    "position": {"codec": "vector", "options": {"size": 3}, "description": "Where."},
    "note": {"codec": "scalar", "options": {"dtype": "str"}, "optional": True},
    "weight": {"codec": "scalar", "options": {"dtype": "float32"}, "default": 1.0},
}


def schema(fields: dict[str, dict[str, Any]], **top: Any) -> rk.Schema:
    return rk.Schema(name=top.pop("name", "points"), fields=fields, **top)


def check(stored: dict[str, Any], requested: dict[str, Any], **kwargs: Any) -> rk.CompatibilityReport:
    return rk.check_compatibility(schema(stored), schema(requested), registry=REGISTRY, **kwargs)


def kinds(report: rk.CompatibilityReport) -> dict[str, tuple[str, bool]]:
    return {d.field: (d.kind, d.compatible) for d in report.differences}


def test_identical_schemas_are_compatible_both_ways() -> None:
    for mode in ("read", "append"):
        report = check(STORED, dict(STORED), mode=mode)
        assert report.compatible
        assert report.differences == []
        report.raise_for_incompatible()
        assert str(report) == "the schemas store the same layout"


def test_descriptions_names_and_versions_do_not_matter() -> None:
    described = {name: {**spec, "description": "other words"} for name, spec in STORED.items()}
    report = rk.check_compatibility(
        schema(STORED), schema(described, name="renamed", version="9.0.0"), mode="append", registry=REGISTRY
    )
    assert report.differences == []


def test_options_at_their_defaults_are_the_same_options() -> None:
    explicit = {**STORED, "position": {"codec": "vector", "options": {"size": 3, "scale": 1.0}}}
    assert check(STORED, explicit, mode="append").differences == []


def test_adding_an_optional_field_or_one_with_a_default_reads_old_data() -> None:
    requested = {
        **STORED,
        "caption": {"codec": "scalar", "options": {"dtype": "str"}, "optional": True},
        "score": {"codec": "scalar", "default": 0},
        "required": {"codec": "scalar"},
    }
    report = check(STORED, requested)
    assert kinds(report) == {
        "caption": ("added", True),
        "score": ("added", True),
        "required": ("added", False),
    }
    assert not report.compatible
    assert [d.field for d in report.incompatible] == ["required"]
    assert "read as its default 0" in str(report)
    # A reader that does not ask for the required new field reads old data fine.
    assert check(STORED, requested, fields=["id", "caption", "score"]).compatible


def test_appending_needs_the_same_fields_but_for_optional_ones() -> None:
    optional_caption = {"codec": "scalar", "options": {"dtype": "str"}, "optional": True}
    requested = {**STORED, "caption": optional_caption}
    assert kinds(check(STORED, requested, mode="append")) == {"caption": ("added", True)}
    required_caption = {**optional_caption, "optional": False}
    requested = {**STORED, "caption": required_caption}
    assert kinds(check(STORED, requested, mode="append")) == {"caption": ("added", False)}
    assert STORED["note"].get("optional") is True
    fewer = {k: v for k, v in STORED.items() if k != "note"}
    assert kinds(check(STORED, fewer, mode="append")) == {"note": ("removed", True)}
    required = [name for name, field in STORED.items() if not field.get("optional")]
    without_required = {k: v for k, v in STORED.items() if k != required[0]}
    assert kinds(check(STORED, without_required, mode="append")) == {required[0]: ("removed", False)}


def test_a_removed_field_matters_only_to_readers_that_ask_for_it() -> None:
    fewer = {k: v for k, v in STORED.items() if k != "note"}
    report = check(STORED, fewer)
    assert kinds(report) == {"note": ("removed", True)}
    assert report.compatible
    asked = check(STORED, fewer, fields=["id", "note"])
    assert kinds(asked) == {"note": ("removed", False)}
    assert "asked for, but the requested schema does not have it" in str(asked)
    nowhere = check(STORED, STORED, fields=["id", "nowhere"])
    assert kinds(nowhere) == {"nowhere": ("unknown", False)}


@pytest.mark.parametrize(
    ("field", "change", "kind", "detail"),
    [
        ("id", {"codec": "vector", "options": {"size": 1}}, "codec", "'scalar' -> 'vector'"),
        ("id", {"codec": "scalar", "options": {"dtype": "int32"}}, "options", "dtype: 'int64' -> 'int32'"),
        ("position", {"codec": "vector", "options": {"size": 4}}, "options", "size: 3 -> 4"),
        ("position", {"codec": "vector", "options": {"size": 3, "scale": 2.0}}, "options", "scale: 1.0 ->"),
        ("id", {"codec": "scalar", "sequence": True}, "sequence", "stored as one value, requested as a list"),
        ("id", {"codec": "scalar", "optional": True}, "optional", "stored records have no presence flag"),
        ("note", {"codec": "scalar", "options": {"dtype": "str"}}, "optional", "stored records may lack it"),
        ("id", {"codec": "scalar", "keys": {"": "identifier"}}, "keys", "['id'] -> ['identifier']"),
    ],
)
def test_changes_of_what_is_stored_are_incompatible(
    field: str, change: dict[str, Any], kind: str, detail: str
) -> None:
    requested = {**STORED, field: change}
    for mode in ("read", "append"):
        report = check(STORED, requested, mode=mode)
        assert kinds(report) == {field: (kind, False)}, report
        assert detail in report.differences[0].detail
        with pytest.raises(IncompatibleSchemaError) as err:
            report.raise_for_incompatible()
        assert f"field {field!r}: {kind}: " in str(err.value)
        assert err.value.differences == [str(report.differences[0])]
    # ... and a reader that does not ask for the changed field is unaffected.
    others = [name for name in STORED if name != field]
    assert check(STORED, requested, fields=others).compatible


def test_a_changed_default_reads_old_data_but_cannot_append() -> None:
    requested = {**STORED, "weight": {"codec": "scalar", "options": {"dtype": "float32"}, "default": 2.0}}
    assert kinds(check(STORED, requested)) == {"weight": ("default", True)}
    assert kinds(check(STORED, requested, mode="append")) == {"weight": ("default", False)}


def test_a_codec_that_is_not_installed_cannot_be_compared() -> None:
    stored = {**STORED, "extra": {"codec": "not-installed", "options": {"a": 1}}}
    requested = {**STORED, "extra": {"codec": "not-installed", "options": {"a": 2}}}
    report = check(stored, requested)
    assert [(d.kind, d.compatible) for d in report.differences] == [("codec", False), ("options", False)]
    assert "no codec named 'not-installed' is installed" in report.differences[0].detail
    # Not asked for: not compared.
    assert check(stored, requested, fields=["id"]).compatible


def test_every_incompatible_field_is_listed_in_the_error() -> None:
    requested = {
        "id": {"codec": "scalar", "options": {"dtype": "str"}},
        "position": {"codec": "vector", "options": {"size": 2}},
        "weight": {"codec": "scalar", "options": {"dtype": "float32"}, "default": 3.0},
    }
    report = check(STORED, requested, mode="append")
    with pytest.raises(IncompatibleSchemaError) as err:
        report.raise_for_incompatible()
    message = str(err.value)
    # 'note' is optional: leaving it out is compatible, so it is not listed.
    assert "the schema cannot append to the stored data: 'id', 'position', 'weight' differ" in message
    assert len(err.value.differences) == 3


def test_append_compatible_means_equal_fingerprints(tmp_path: Path) -> None:
    stored = schema(STORED)
    # The same schema through a file, with the fields in another order.
    data = yaml.safe_load(stored.dumps())
    data["fields"] = dict(reversed(list(data["fields"].items())))
    reordered = rk.Schema.loads(yaml.safe_dump(data, sort_keys=False), registry=REGISTRY)
    report = rk.check_compatibility(stored, reordered, mode="append", registry=REGISTRY)
    assert report.compatible
    assert stored.fingerprint(REGISTRY) == reordered.fingerprint(REGISTRY)
    changed = {**STORED, "position": {"codec": "vector", "options": {"size": 3}, "optional": True}}
    report = rk.check_compatibility(stored, schema(changed), mode="append", registry=REGISTRY)
    assert not report.compatible
    assert stored.fingerprint(REGISTRY) != schema(changed).fingerprint(REGISTRY)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="fields only applies to mode='read'"):
        check(STORED, STORED, mode="append", fields=["id"])
    with pytest.raises(ValueError, match="mode must be 'read' or 'append'"):
        check(STORED, STORED, mode="write")


def test_the_example_schemas_with_built_in_codecs() -> None:
    root = Path(__file__).resolve().parents[3] / "schemas"
    stored = rk.Schema.load(root / "multimodal.yaml")
    data = yaml.safe_load((root / "multimodal.yaml").read_text(encoding="utf-8"))
    data["fields"]["frame"]["options"]["quality"] = 95
    data["fields"]["transcript"] = {"codec": "text", "optional": True}
    requested = rk.Schema.loads(yaml.safe_dump(data))
    report = rk.check_compatibility(stored, requested)
    assert kinds(report) == {"frame": ("options", False), "transcript": ("added", True)}
    assert "quality: 90 -> 95" in str(report)
    assert rk.check_compatibility(stored, requested, fields=["audio", "transcript", "objects"]).compatible


def test_the_reader_and_the_writer_apply_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "points"
    records = [{"id": i, "position": [i, 0, 0], "note": "n" if i else None} for i in range(3)]
    rk.write_dataset(records, schema(STORED), path, registry=REGISTRY)

    def read(requested: dict[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
        return list(rk.iter_records(path, schema=schema(requested), registry=REGISTRY, **kwargs))

    # Reading with an optional field added, and one left out: old records read fine.
    newer = {k: v for k, v in STORED.items() if k != "note"}
    newer["caption"] = {"codec": "scalar", "options": {"dtype": "str"}, "optional": True}
    assert [(r["id"], r["caption"]) for r in read(newer)] == [(0, None), (1, None), (2, None)]
    # A changed field stops the reader before it reads, unless it is not asked for.
    changed = {**STORED, "position": {"codec": "vector", "options": {"size": 4}}}
    with pytest.raises(IncompatibleSchemaError, match="'position'") as err:
        read(changed)
    assert err.value.differences == ["field 'position': options: size: 3 -> 4 (incompatible)"]
    assert [r["id"] for r in read(changed, fields=["id", "note"])] == [0, 1, 2]
    # Appending records stored another way is refused before anything is written.
    before = sorted(p.name for p in path.iterdir())
    with pytest.raises(IncompatibleSchemaError, match="'position'"):
        rk.write_dataset(records, schema(changed), path, append=True, registry=REGISTRY)
    assert sorted(p.name for p in path.iterdir()) == before
