"""``recordkit parquet``: a local dataset's splits as Parquet files in Hugging Face's
layout (see :func:`~recordkit.export_parquet`)."""

from __future__ import annotations

from pathlib import Path

import click

from recordkit._cli._common import local_input
from recordkit.tools._hf_export import export_parquet

__all__ = ["parquet_command"]


@click.command("parquet", short_help="Write a dataset's splits as Parquet that Hugging Face datasets reads.")
@click.argument("dataset")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--split", "splits", multiple=True, help="A split to write (repeatable; default: all).")
@click.option("--field", "fields", multiple=True, help="A field to write (repeatable; default: all).")
@click.option("--overwrite", is_flag=True, help="Replace Parquet files of the same names already in OUT.")
def parquet_command(
    dataset: str, out: Path, splits: tuple[str, ...], fields: tuple[str, ...], overwrite: bool
) -> None:
    """Write each split of DATASET, a local recordkit dataset, as OUT/<split>-00000-of-00001.parquet,
    with its Hugging Face features in the files' metadata: images and audio as their stored
    bytes, labels as ClassLabel. datasets.load_dataset("parquet", data_dir=OUT) reads them.
    Fields without a Hugging Face feature (boxes, masks) are refused by name: leave them out
    with --field. A file of the same name already in OUT is refused unless --overwrite."""
    folder = local_input(dataset, "DATASET")
    written = export_parquet(folder, out, splits=splits or None, fields=fields or None, overwrite=overwrite)
    click.echo(f"wrote {', '.join(path.name for path in written)} to {out}")
