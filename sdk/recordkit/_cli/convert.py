"""``recordkit convert``: rewrite an adopted dataset (a TFDS folder) as a native one."""

from __future__ import annotations

from pathlib import Path

import click

from recordkit.tools._convert import AUDIO_FORMATS, AudioFormat, convert_dataset


@click.command("convert", short_help="Rewrite a TFDS-prepared folder as a native recordkit dataset.")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("out", type=click.Path(path_type=Path))
@click.option(
    "--audio",
    type=click.Choice(AUDIO_FORMATS),
    default=None,
    help="Store audio samples (a list of numbers in TFDS) as 16-bit WAV or FLAC files; default: as they are.",
)
def convert_command(source: Path, out: Path, audio: AudioFormat | None) -> None:
    """Rewrite the TFDS-prepared folder SOURCE as a recordkit dataset at OUT.

    Encoded images are kept byte for byte; audio samples stay numbers unless --audio
    asks for WAV or FLAC. OUT gets dataset.json with per-shard sha256, so that
    `recordkit verify OUT` checks it.
    """
    manifest = convert_dataset(source, out, audio=audio)
    records = sum(info.num_records for info in manifest.splits.values())
    click.echo(f"wrote {records} records in {len(manifest.splits)} splits to {out}")
