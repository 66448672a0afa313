"""``recordkit convert``: rewrite an adopted dataset (a TFDS folder) as a native one.

OUT must be a new place: OUT that is SOURCE, holds it or lies inside it is refused before
anything is written, and a conversion that fails leaves nothing at OUT (see
:func:`~recordkit.tools.convert_dataset`)."""

from __future__ import annotations

from typing import Any

import click

from recordkit._cli._card import card_options
from recordkit._cli._common import FOLDER_OR_URL, local_input, output_at, storage_option
from recordkit.tools._convert import AUDIO_FORMATS, AudioFormat, convert_dataset

__all__ = ["CONVERT_WORDS", "convert_command"]

#: The writer's advice (Python keywords) as ``recordkit convert`` says it: it writes new
#: datasets only.
CONVERT_WORDS = {
    "pass append=True to add records or splits, or resume=True to finish an interrupted write": (
        "convert into a new folder (or remove this one first)"
    ),
    "or pass wait=True to wait for the lock": "then run the command again",
}


@click.command("convert", short_help="Rewrite a TFDS-prepared folder as a native recordkit dataset.")
@click.argument("source", type=FOLDER_OR_URL)
@click.argument("out")
@storage_option
@click.option(
    "--audio",
    type=click.Choice(AUDIO_FORMATS),
    default=None,
    help="Store audio samples (a list of numbers in TFDS) as 16-bit WAV or FLAC files; default: as they are.",
)
@card_options
def convert_command(
    source: str, out: str, storage_options: tuple[str, ...], audio: AudioFormat | None, card: dict[str, Any]
) -> None:
    """Rewrite the TFDS-prepared folder SOURCE as a recordkit dataset at OUT.

    SOURCE is a local folder; OUT a local folder or a remote URL (s3://, gs:// ...).
    Encoded images are kept byte for byte; audio samples stay numbers unless --audio
    asks for WAV or FLAC. OUT gets dataset.json with per-shard sha256, so that
    `recordkit verify OUT` checks it. OUT's card is the one TFDS recorded (citation,
    homepage, license), each entry the card options give (--license, --citation,
    --homepage, --author, --description, --version-notes) in place of its own.
    """
    folder = local_input(source, "SOURCE")
    where = output_at(out, storage_options)
    manifest = convert_dataset(
        folder, where.url, audio=audio, storage_options=where.storage_options or None, card=card or None
    )
    records = sum(info.num_records for info in manifest.splits.values())
    click.echo(f"wrote {records} records in {len(manifest.splits)} splits to {where}")
