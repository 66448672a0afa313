"""The JSON Schema of recordkit's schema files, and the reference page made from it.

Both are generated from the Pydantic models (:class:`~recordkit.Schema` and
:class:`~recordkit.FieldSpec`), so they cannot drift from what the loader accepts; a
test checks that the committed copies are current. Regenerate them from the
repository's root with::

    python -m recordkit.schema_jsonschema          # write both files
    python -m recordkit.schema_jsonschema --check  # exit 1 when either is stale

Codec options are validated by each codec's own model, which plugins provide at run
time, so the JSON Schema leaves ``options`` open; ``recordkit.Schema.load`` checks them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recordkit.schema._file import SCHEMA_KEY
from recordkit.schema._schema import Schema

__all__ = [
    "JSON_SCHEMA_PATH",
    "REFERENCE_PATH",
    "generated_files",
    "json_schema",
    "json_schema_text",
    "main",
    "reference_markdown",
    "stale_files",
]

#: Where the generated files live, relative to the repository's root.
JSON_SCHEMA_PATH = "schemas/recordkit-schema.json"
REFERENCE_PATH = "docs/reference/schema-file.md"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

EXAMPLE = """\
# yaml-language-server: $schema=recordkit-schema.json
name: pets
version: 1.0.0
description: Pet photos with a class and an optional caption.
fields:
  image:
    codec: image
    options: {format: jpeg, quality: 90}
    description: The photo, re-encoded as JPEG.
  label:
    codec: label
    options: {names: [cat, dog]}
  caption:
    codec: text
    optional: true
  views:
    codec: image
    sequence: true
    default: []
    description: More photos of the same pet (any number).
"""


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a schema file."""
    generated = Schema.model_json_schema(mode="validation")
    properties = {
        SCHEMA_KEY: {
            "type": "string",
            "description": "Where editors find this JSON Schema; recordkit ignores it.",
        },
        **generated["properties"],
    }
    return {
        "$schema": DRAFT,
        "title": "recordkit schema file",
        "description": (
            "A recordkit dataset schema: its name, version and typed fields. Codec options are "
            "checked by each codec when the file is loaded (recordkit.Schema.load)."
        ),
        **{k: v for k, v in generated.items() if k not in ("title", "description", "properties")},
        "properties": properties,
    }


def json_schema_text() -> str:
    """The JSON Schema as the committed file's text."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


# -- the reference page ---------------------------------------------------------------------


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: Mapping[str, Any] = root["$defs"][ref.removeprefix("#/$defs/")]
        return resolved
    return node


_PLURALS = {"string": "strings", "integer": "integers", "number": "numbers", "boolean": "booleans"}


def _alternatives(options: Sequence[Mapping[str, Any]], root: Mapping[str, Any]) -> list[str]:
    """The names of ``anyOf`` options, without "integer" beside "number" (which has it)."""
    names = list(dict.fromkeys(_type_of(option, root) for option in options))
    return [n for n in names if n != "integer"] if "number" in names else names


def _either(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _list_of(node: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    items = node.get("items")
    if not isinstance(items, Mapping):
        return "list"
    if "anyOf" in items:  # e.g. keys and numbers: "list of (strings or numbers, ...)"
        names = [_PLURALS.get(name, name) for name in _alternatives(items["anyOf"], root)]
        contains = node.get("contains")
        needs = f", at least one {_type_of(contains, root)}" if isinstance(contains, Mapping) else ""
        return f"list of ({_either(names)}{needs})"
    item = _type_of(items, root)
    return f"list of {_PLURALS.get(item, item)}"


def _type_of(node: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    if "$ref" in node:
        return "a field (below)" if node["$ref"].endswith("/FieldSpec") else node["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in node:
        return _either(_alternatives(node["anyOf"], root))
    kind = node.get("type")
    if kind == "object":
        values = node.get("additionalProperties")
        if isinstance(values, Mapping) and values:
            return f"mapping of name to {_type_of(values, root)}"
        return "mapping"
    if kind == "array":
        return _list_of(node, root)
    if kind is None:
        return "any"
    return str(kind)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(model: Mapping[str, Any], root: Mapping[str, Any]) -> list[str]:
    rows = [
        "| Key | Type | Required | Default | Description |",
        "| --- | --- | --- | --- | --- |",
    ]
    required = set(model.get("required", []))
    for key, prop in model["properties"].items():
        default = "" if "default" not in prop else f"`{json.dumps(prop['default'])}`"
        rows.append(
            f"| `{key}` | {_type_of(prop, root)} | {'yes' if key in required else 'no'} | {default} | "
            f"{_cell(prop.get('description', ''))} |"
        )
    return rows


def reference_markdown(schema: Mapping[str, Any] | None = None) -> str:
    """The schema-file reference page (Markdown), made from :func:`json_schema`."""
    root = schema if schema is not None else json_schema()
    field_model = _resolve(root["properties"]["fields"]["additionalProperties"], root)
    pattern = root["properties"]["fields"]["propertyNames"]["pattern"]
    lines = [
        "# Schema file reference",
        "",
        "<!-- Generated from the JSON Schema by `python -m recordkit.schema_jsonschema`; do not edit. -->",
        "",
        "A schema file declares a dataset's fields in YAML (or JSON, for names ending in `.json`).",
        "It names codecs only, never Python code, and is read with a safe YAML loader.",
        f"The format's [JSON Schema](https://json-schema.org/) (draft 2020-12) is `{JSON_SCHEMA_PATH}`",
        "in the repository, generated from the same models as this page: point your editor at it",
        "to get completion and validation while you type.",
        "",
        "## Example",
        "",
        "```yaml",
        EXAMPLE.rstrip("\n"),
        "```",
        "",
        "## Top level",
        "",
        _cell(str(root.get("description", ""))),
        "",
        *_table(root, root),
        "",
        "Keys not listed here are errors, as are duplicate keys.",
        "",
        "## A field",
        "",
        "Each entry of `fields` maps a field name to:",
        "",
        *_table(field_model, root),
        "",
        "Rules that the table cannot show:",
        "",
        f"- Field names match `{pattern}` (they become `tf.train.Example` keys, where `/`",
        "  separates a field from its wire features).",
        "- A field is either `optional` or has a `default`, not both. An optional field that a",
        "  record leaves out is stored as absent, with a presence flag for readers; a field with",
        "  a default gets the default written.",
        "- `options` and `default` are plain data: strings, numbers, booleans, null, lists and",
        "  mappings. Each codec documents its options; an unknown or invalid option is an error",
        "  naming the file, line, field and option.",
        '- `version` is a string: quote versions such as `"1.0"` that YAML would read as numbers.',
        "- In `keys`, a number is a value the records do not store: alone, a constant feature",
        "  (`channels: 3`); in a list of keys, a constant column (the `3` of",
        "  `shape: [height, width, 3]`). Numbers are for numeric wire features of fixed shape",
        "  only, and a list needs at least one key. See",
        "  [Read TFRecords written elsewhere](../how-to/existing-tfrecords.md).",
        "",
        "## Validation and errors",
        "",
        "`recordkit.Schema.load(path)` checks, in order: the YAML or JSON syntax, the structure",
        "above, that every codec is installed (the error lists those that are), each field's",
        "options against its codec, and the fields together (Example keys, fields that a codec",
        "refers to such as a bounding box's `image_field`, defaults). Each error names the file,",
        "the line, the field and the option. `recordkit.Schema.load(path, check=False)` stops",
        "after the structure, for tools that run without the codecs installed.",
        "",
        "## Editor support",
        "",
        "With the YAML language server (VS Code's YAML extension, for example), a first-line",
        "comment links a file to the JSON Schema:",
        "",
        "```yaml",
        f"# yaml-language-server: $schema=path/to/{JSON_SCHEMA_PATH}",
        "```",
        "",
        f'JSON files can say the same with a top-level `"{SCHEMA_KEY}"` key, which recordkit ignores.',
        "",
    ]
    return "\n".join(lines)


# -- the files ------------------------------------------------------------------------------


def generated_files() -> dict[str, str]:
    """Each generated file's path (relative to the repository's root) and content."""
    return {JSON_SCHEMA_PATH: json_schema_text(), REFERENCE_PATH: reference_markdown()}


def stale_files(root: str | Path) -> list[str]:
    """The generated files under ``root`` that are missing or differ from a fresh run."""
    stale = []
    for relative, content in generated_files().items():
        path = Path(root) / relative
        if not path.is_file() or path.read_text(encoding="utf-8") != content:
            stale.append(relative)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check``, verify) the generated files under ``--root``."""
    parser = argparse.ArgumentParser(
        prog="python -m recordkit.schema_jsonschema",
        description="Generate the schema-file JSON Schema and its reference page.",
    )
    parser.add_argument("--root", default=".", help="the repository's root (default: .)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is missing or stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.root)
        for relative in stale:
            print(f"stale: {relative} (run python -m recordkit.schema_jsonschema)", file=sys.stderr)
        return 1 if stale else 0
    for relative, content in generated_files().items():
        path = Path(args.root) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        print(f"wrote {relative}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
