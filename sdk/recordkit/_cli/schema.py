"""``recordkit schema check``: load a schema file and print its fingerprint, or the error.

Checking binds every field to its codec among the installed plugins, exactly as writing
a dataset would, so an unknown codec or a bad option is caught here, in CI, with the
file, line and field in the message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from recordkit._cli._common import table
from recordkit.codec._plugins import default_registry
from recordkit.schema._schema import Schema

__all__ = ["schema_group"]


@click.group("schema")
def schema_group() -> None:
    """Work with schema files."""


@schema_group.command("check", short_help="Check a schema file and print its fingerprint.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def check_command(file: Path, as_json: bool) -> None:
    """Load the schema FILE (YAML or JSON), check it against the installed codecs, and
    print its name, version, fields and fingerprint.

    Exits with status 1 and a one-line error naming the file, line and field when the
    file is not a valid schema.
    """
    registry = default_registry()
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
