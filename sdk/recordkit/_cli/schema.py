"""``recordkit schema``: ``check`` schema files, ``infer`` one for a source or TFRecord
files, ``diff`` two schemas field by field.

``check`` loads schema files and prints their fingerprints, or the errors.

Schema files, datasets and TFRecord files may be local or remote URLs (``s3://``,
``gs://`` ...) with ``--storage-option``; a source (``infer --source``) reads local files.

Checking binds every field to its codec among the installed plugins, exactly as writing
a dataset would, so an unknown codec or a bad option is caught here, in CI, with the
file, line and field in the message. ``--only-schemas`` skips YAML files that declare
no ``fields``, so a pre-commit hook or a CI step can pass every ``*.yaml`` of a repository.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from recordkit._cli._common import (
    FILE_OR_URL,
    FILE_TO_WRITE,
    PATH_OR_URL,
    local_input,
    one_line,
    parse_storage_options,
    schema_at,
    storage_option,
    table,
)
from recordkit._cli.ingest import make_source, parse_options
from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.errors import RecordkitError
from recordkit.schema._compatibility import check_compatibility
from recordkit.schema._schema import Schema
from recordkit.storage import StorageOptions, location
from recordkit.tools._adopt import infer_schema

__all__ = ["schema_group"]


@click.group("schema")
def schema_group() -> None:
    """Work with schema files."""


#: A line with a ``fields:`` key, as a YAML or JSON schema file writes it.
_DECLARES_FIELDS = re.compile(r"""^\s*["']?fields["']?\s*:""", re.MULTILINE)


def declares_fields(file: str | Path, storage_options: StorageOptions | None = None) -> bool:
    """Whether ``file`` (local or a URL) looks like a schema file: a YAML or JSON mapping
    with a top-level ``fields`` key. A file that does not parse counts when a line holds
    a ``fields:`` key, so that a broken schema is still checked (and its error shown),
    not skipped."""
    try:
        text = location(file, storage_options).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        data = yaml.safe_load(text)  # JSON is YAML too
    except yaml.YAMLError:
        return bool(_DECLARES_FIELDS.search(text))
    return isinstance(data, dict) and "fields" in data


@schema_group.command("check", short_help="Check schema files and print their fingerprints.")
@click.argument("files", nargs=-1, required=True, type=FILE_OR_URL)
@storage_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option(
    "--only-schemas",
    is_flag=True,
    help="Skip files without a top-level 'fields' key (for pre-commit and CI runs over every *.yaml).",
)
def check_command(
    files: tuple[str, ...], storage_options: tuple[str, ...], as_json: bool, only_schemas: bool
) -> None:
    """Load each schema FILE (YAML or JSON), check it against the installed codecs, and
    print its name, version, fields and fingerprint. A FILE may be a remote URL
    (s3://, gs:// ...).

    Exits with status 1 and a one-line error naming the file, line and field when a
    file is not a valid schema; with several files, every file is checked and each
    error is printed on its own line.
    """
    options = parse_storage_options(storage_options)
    if only_schemas:
        files = tuple(f for f in files if declares_fields(f, options))
    registry = default_registry()
    if len(files) == 1:
        _check(files[0], options, registry, as_json)  # a recordkit error is the command's error
        return
    failed = 0
    for file in files:
        try:
            _check(file, options, registry, as_json)
        except RecordkitError as exc:
            failed += 1
            click.echo(f"Error: {type(exc).__name__}: {one_line(str(exc))}", err=True)
    if failed:
        raise click.ClickException(f"{failed} of {len(files)} schema files are not valid")


def _check(file: str, options: StorageOptions, registry: CodecRegistry, as_json: bool) -> None:
    schema = Schema.load(file, registry=registry, storage_options=options)
    bound = schema.bind(registry)
    fields: list[dict[str, Any]] = [
        {
            "field": f.name,
            "codec": f.spec.codec,
            "version": f.codec.version,
            "optional": f.spec.optional,
            "sequence": f.spec.sequence,
            "keys": f.keys,
        }
        for f in bound.fields
    ]
    report = {
        "file": file,
        "name": schema.name,
        "version": schema.version,
        "fingerprint": bound.fingerprint(),
    }
    if as_json:
        click.echo(json.dumps({**report, "fields": fields}, indent=2))
        return
    click.echo(f"{file}: schema {schema.name!r} version {schema.version}, {len(fields)} fields")
    click.echo(f"fingerprint {report['fingerprint']}")
    rows = [["field", "codec", "flags", "keys"]]
    for f in fields:
        flags = ", ".join(flag for flag in ("optional", "sequence") if f[flag]) or "-"
        rows.append([f["field"], f"{f['codec']} {f['version']}", flags, ", ".join(f["keys"])])
    click.echo(table(rows))


@schema_group.command("infer", short_help="Propose a schema for a source or for TFRecord files.")
@click.argument("inputs", nargs=-1, required=True)
@storage_option
@click.option(
    "--source", "kind", metavar="KIND", help="Read INPUT with this source (coco, image_folder ...)."
)
@click.option(
    "--opt", "options", multiple=True, metavar="NAME=VALUE", help="An option of the source (repeatable)."
)
@click.option("--name", help="The proposed schema's name.")
@click.option("-o", "--output", type=FILE_TO_WRITE, help="Write the schema here.")
@click.option(
    "--max-records", type=click.IntRange(min=1), default=100, show_default=True, help="TFRecords looked at."
)
def infer_command(
    inputs: tuple[str, ...],
    storage_options: tuple[str, ...],
    kind: str | None,
    options: tuple[str, ...],
    name: str | None,
    output: Path | None,
    max_records: int,
) -> None:
    """Print (or write to --output) a schema for INPUTS: with --source, the schema that
    source proposes for the one INPUT; otherwise a schema inferred from TFRecord files
    (paths or glob patterns, local or remote URLs) from their keys, or a recordkit
    dataset's own schema. A source reads a local INPUT."""
    if kind is not None:
        if len(inputs) != 1:
            raise click.UsageError("--source reads one INPUT")
        source = make_source(kind, local_input(inputs[0], "INPUT"), parse_options(options))
        schema = source.schema(name=name)
    else:
        if options:
            raise click.UsageError("--opt goes with --source")
        paths: str | list[str] = inputs[0] if len(inputs) == 1 else list(inputs)
        schema = infer_schema(
            paths,
            name=name or "inferred",
            max_records=max_records,
            storage_options=parse_storage_options(storage_options),
        )
    if output is not None:
        schema.dump(output)
        click.echo(f"{output}: schema {schema.name!r} with {len(schema.fields)} fields")
    else:
        click.echo(schema.dumps(), nl=False)


@schema_group.command("diff", short_help="Compare two schemas field by field.")
@click.argument("old", type=PATH_OR_URL)
@click.argument("new", type=PATH_OR_URL)
@storage_option
@click.option(
    "--mode",
    type=click.Choice(["read", "append"]),
    default="read",
    show_default=True,
    help="read: can NEW read data written with OLD; append: can NEW add records to it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def diff_command(old: str, new: str, storage_options: tuple[str, ...], mode: str, as_json: bool) -> None:
    """Compare the schema OLD (a schema file, or a dataset whose schema it is) with NEW,
    field by field, under the compatibility rules; exit with status 1 when NEW is
    incompatible. Either may be a remote URL (s3://, gs:// ...)."""
    registry = default_registry()
    before = schema_at(old, storage_options, registry)
    after = schema_at(new, storage_options, registry)
    report = check_compatibility(
        before, after, mode="append" if mode == "append" else "read", registry=registry
    )
    if as_json:
        click.echo(
            json.dumps(
                {
                    "compatible": report.compatible,
                    "mode": mode,
                    "differences": [
                        {"field": d.field, "kind": d.kind, "compatible": d.compatible, "detail": d.detail}
                        for d in report.differences
                    ],
                },
                indent=2,
            )
        )
    else:
        verdict = "compatible" if report.compatible else "INCOMPATIBLE"
        click.echo(f"{old} -> {new} ({mode}): {verdict}, {len(report.differences)} difference(s)")
        if report.differences:
            rows = [["field", "change", "verdict", "detail"]]
            for d in report.differences:
                rows.append([d.field, d.kind, "ok" if d.compatible else "breaks", d.detail])
            click.echo(table(rows))
    if not report.compatible:
        sys.exit(1)
