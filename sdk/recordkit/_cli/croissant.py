"""``recordkit croissant``: a dataset's MLCommons Croissant 1.0 description (JSON-LD)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from recordkit._cli._common import parse_storage_options, storage_option
from recordkit.tools._croissant import croissant


@click.command("croissant")
@click.argument("dataset")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write it to this file (default: stdout).",
)
@storage_option
def croissant_command(dataset: str, output: Path | None, storage_options: tuple[str, ...]) -> None:
    """Describe DATASET in MLCommons Croissant 1.0 JSON-LD: its card, a FileObject per
    shard with its sha256, and a record set per split with the schema's fields.

    DATASET is a dataset folder (or its dataset.json), a remote URL (s3://, gs:// ...),
    or a local folder TFDS prepared. A split's field groups are record sets of their own.
    """
    text = json.dumps(
        croissant(dataset, parse_storage_options(storage_options)), indent=2, ensure_ascii=False
    )
    if output is None:
        click.echo(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
