"""Hostile schema files: nesting, YAML tags and alias bombs, encodings, huge numbers,
booleans and out-of-range numbers where options take numbers, wrong types.

Each is refused with a SchemaError (a SchemaFileError or CodecOptionsError naming the
file, and the field where there is one), never with another exception, and ``recordkit
schema check`` prints it on one line."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main

SEED = 1205


def _deep_yaml(depth: int) -> bytes:
    return (
        "name: x\nfields:\n  a: {codec: tensor, options: {shape: " + "[" * depth + "]" * depth + "}}\n"
    ).encode()


def _deep_json(depth: int) -> bytes:
    return (
        '{"name": "x", "fields": {"a": {"codec": "text", "description": ' + "[" * depth + "]" * depth + "}}}"
    ).encode()


def _field(codec: str, options: str) -> bytes:
    return f"name: x\nfields:\n  f: {{codec: {codec}, options: {options}}}\n".encode()


BOMB = b"""name: x
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
fields: {}
"""


def _cases() -> dict[str, tuple[str, bytes]]:
    rng = random.Random(SEED)
    cases: dict[str, tuple[str, bytes]] = {
        "yaml nested 5000": ("yaml", _deep_yaml(5000)),
        "yaml nested 900": ("yaml", _deep_yaml(900)),
        "yaml nested 65": ("yaml", _deep_yaml(65)),
        "json nested 5000": ("json", _deep_json(5000)),
        "json nested 100000": ("json", _deep_json(100_000)),
        "python tag": ("yaml", b"name: !!python/object/apply:os.system ['true']\nfields: {}\n"),
        "custom tag": ("yaml", b"name: !secret x\nfields: {}\n"),
        "alias bomb": ("yaml", BOMB),
        "binary": ("yaml", bytes(rng.randrange(256) for _ in range(300))),
        "utf-16": ("yaml", "name: x\nfields: {}\n".encode("utf-16")),
        "NUL": ("yaml", b"name: x\x00\nfields: {}\n"),
        "huge int": ("yaml", _field("tensor", "{shape: [" + "9" * 5000 + "]}")),
        "huge int json": (
            "json",
            b'{"name": "x", "fields": {"f": {"codec": "text", "options": {"max_length": '
            + b"9" * 5000
            + b"}}}}",
        ),
        "shape beyond int64": ("yaml", _field("tensor", "{shape: [9223372036854775808]}")),
        "shape product beyond int64": ("yaml", _field("tensor", "{shape: [4294967296, 4294967296]}")),
        "channels true": ("yaml", _field("image", "{channels: true}")),
        "quality true": ("yaml", _field("image", "{quality: true}")),
        "sample_rate true": ("yaml", _field("audio", "{sample_rate: true}")),
        "max_length false": ("yaml", _field("text", "{max_length: false}")),
        "shape with a bool": ("yaml", _field("tensor", "{shape: [true, 3]}")),
        "num_classes true": ("yaml", _field("label", "{num_classes: true}")),
        "options a list": ("yaml", _field("text", "[1, 2]")),
        "fields a list": ("yaml", b"name: x\nfields: [a, b]\n"),
        "root a list": ("yaml", b"- name\n- fields\n"),
        "root a number": ("yaml", b"42\n"),
        "empty": ("yaml", b""),
        "unknown codec": ("yaml", _field("no-such-codec", "{}")),
        "module path codec": ("yaml", _field("os.system", "{}")),
        "very long key": ("yaml", b"name: x\nfields:\n  " + b"k" * 100_000 + b": {codec: text}\n"),
    }
    for i in range(4):  # random printable garbage
        text = "".join(chr(rng.randrange(32, 127)) for _ in range(rng.randrange(1, 200)))
        cases[f"garbage {i}"] = ("yaml", text.encode())
    return cases


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_schema_file_is_one_schema_error(tmp_path: Path, name: str, fault_cases: Any) -> None:
    fault_cases.tried("hostile schema files")
    kind, payload = CASES[name]
    path = tmp_path / f"schema.{kind}"
    path.write_bytes(payload)
    with pytest.raises((rk.errors.SchemaError, rk.errors.UnknownCodecError)) as info:
        rk.Schema.load(path)
    assert str(path) in str(info.value) or info.value.field is not None, str(info.value)
    result = CliRunner().invoke(main, ["schema", "check", str(path)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
