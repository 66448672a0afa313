"""``recordkit tfds-metadata``: make a local dataset readable by TensorFlow Datasets
(see :func:`~recordkit.write_tfds_metadata`)."""

from __future__ import annotations

import click

from recordkit._cli._common import local_input
from recordkit.tools._tfds_export import write_tfds_metadata

__all__ = ["tfds_metadata_command"]


@click.command(
    "tfds-metadata", short_help="Write the files tfds.builder_from_directory reads beside a dataset."
)
@click.argument("dataset")
def tfds_metadata_command(dataset: str) -> None:
    """Write features.json and dataset_info.json into DATASET, a local recordkit dataset,
    so that tfds.builder_from_directory(DATASET) reads it. The shards are not rewritten.
    Fields TFDS cannot read as they are stored (packed boxes, audio ...) are refused by name."""
    folder = local_input(dataset, "DATASET")
    written = write_tfds_metadata(folder)
    click.echo(f"wrote {', '.join(path.name for path in written)} to {folder}")
