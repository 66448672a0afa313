"""``recordkit schema check``: load schema files and print their fingerprints, or the errors.

Checking binds every field to its codec among the installed plugins, exactly as writing
a dataset would, so an unknown codec or a bad option is caught here, in CI, with the
file, line and field in the message. ``--only-schemas`` skips YAML files that declare
no ``fields``, so a pre-commit hook or a CI step can pass every ``*.yaml`` of a repository.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import yaml

from recordkit._cli._common import one_line, table
from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.errors import RecordkitError
from recordkit.schema._schema import Schema

__all__ = ["schema_group"]


@click.group("schema")
def schema_group() -> None:
    """Work with schema files."""


#: A line with a ``fields:`` key, as a YAML or JSON schema file writes it.
_DECLARES_FIELDS = re.compile(r"""^\s*["']?fields["']?\s*:""", re.MULTILINE)


def declares_fields(file: Path) -> bool:
    """Whether ``file`` looks like a schema file: a YAML or JSON mapping with a top-level
    ``fields`` key. A file that does not parse counts when a line holds a ``fields:``
    key, so that a broken schema is still checked (and its error shown), not skipped."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        data = yaml.safe_load(text)  # JSON is YAML too
    except yaml.YAMLError:
        return bool(_DECLARES_FIELDS.search(text))
    return isinstance(data, dict) and "fields" in data


@schema_group.command("check", short_help="Check schema files and print their fingerprints.")
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option(
    "--only-schemas",
    is_flag=True,
    help="Skip files without a top-level 'fields' key (for pre-commit and CI runs over every *.yaml).",
)
def check_command(files: tuple[Path, ...], as_json: bool, only_schemas: bool) -> None:
    """Load each schema FILE (YAML or JSON), check it against the installed codecs, and
    print its name, version, fields and fingerprint.

    Exits with status 1 and a one-line error naming the file, line and field when a
    file is not a valid schema; with several files, every file is checked and each
    error is printed on its own line.
    """
    if only_schemas:
        files = tuple(f for f in files if declares_fields(f))
    registry = default_registry()
    if len(files) == 1:
        _check(files[0], registry, as_json)  # a recordkit error is the command's error
        return
    failed = 0
    for file in files:
        try:
            _check(file, registry, as_json)
        except RecordkitError as exc:
            failed += 1
            click.echo(f"Error: {type(exc).__name__}: {one_line(str(exc))}", err=True)
    if failed:
        raise click.ClickException(f"{failed} of {len(files)} schema files are not valid")


def _check(file: Path, registry: CodecRegistry, as_json: bool) -> None:
    schema = Schema.load(file, registry=registry)
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
        "file": str(file),
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
