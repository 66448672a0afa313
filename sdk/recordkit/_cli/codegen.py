"""``recordkit codegen``: write a standalone parser module for a schema."""

from __future__ import annotations

from pathlib import Path

import click

from recordkit._cli._common import parse_storage_options, remote_root, storage_option
from recordkit.dataset._manifest import MANIFEST_FILE, Manifest
from recordkit.schema._schema import Schema
from recordkit.storage import is_remote
from recordkit.tools._codegen import generate_parser_code

__all__ = ["codegen_command"]


def _schema_of(source: str, storage_options: tuple[str, ...]) -> Schema:
    """The schema in a schema file, or the one a dataset's manifest holds (local, or a
    remote URL: a schema file's, a dataset's or its dataset.json's)."""
    if is_remote(source):
        options = parse_storage_options(storage_options)
        if source.endswith((".yaml", ".yml", ".json")) and not source.endswith(MANIFEST_FILE):
            return Schema.load(source, storage_options=options)
        return Manifest.load(remote_root(source, storage_options)).schema
    path = Path(source)
    if not path.exists():
        raise click.BadParameter(f"{source!r} does not exist", param_hint="SCHEMA")
    if path.is_dir() or path.name == MANIFEST_FILE:
        return Manifest.load(path if path.is_dir() else path.parent).schema
    return Schema.load(path)


@click.command("codegen", short_help="Write a standalone tf.data parser module for a schema.")
@click.argument("schema")
@storage_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the module to this file (default: standard output).",
)
@click.option(
    "-f",
    "--field",
    "fields",
    multiple=True,
    help="Only parse this field (repeat for several; default: every field).",
)
def codegen_command(
    schema: str, storage_options: tuple[str, ...], output: Path | None, fields: tuple[str, ...]
) -> None:
    """Write a Python module that parses SCHEMA's records with TensorFlow alone.

    SCHEMA is a schema file (YAML or JSON) or a dataset folder (its manifest's schema),
    local or a remote URL (s3://, gs:// ...).
    The module needs no recordkit: import it in training jobs and use its ``parse``
    after ``.batch()``, or its ``dataset(files, batch_size)``.
    """
    code = generate_parser_code(_schema_of(schema, storage_options), list(fields) or None)
    if output is None:
        click.echo(code, nl=False)
        return
    output.write_text(code, encoding="utf-8")
    click.echo(f"wrote {output} ({len(code.splitlines())} lines)", err=True)
