"""``recordkit codegen``: write a standalone parser module for a schema."""

from __future__ import annotations

from pathlib import Path

import click

from recordkit._cli._common import FILE_TO_WRITE, manifest_at, schema_file_at, storage_option
from recordkit.tools._codegen import generate_parser_code

__all__ = ["codegen_command"]


@click.command("codegen", short_help="Write a standalone tf.data parser module for a schema.")
@click.argument("schema")
@storage_option
@click.option(
    "-o",
    "--output",
    type=FILE_TO_WRITE,
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

    SCHEMA is a schema file (YAML or JSON) or a dataset folder (its manifest's schema,
    read by the codecs that read the codec versions that stored it), local or a remote
    URL (s3://, gs:// ...).
    The module needs no recordkit: import it in training jobs and use its ``parse``
    after ``.batch()``, or its ``dataset(files, batch_size)``.
    """
    described = manifest_at(schema, storage_options) or schema_file_at(schema, storage_options)
    code = generate_parser_code(described, list(fields) or None)
    if output is None:
        click.echo(code, nl=False)
        return
    output.write_text(code, encoding="utf-8")
    click.echo(f"wrote {output} ({len(code.splitlines())} lines)", err=True)
