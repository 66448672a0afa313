"""``recordkit show``: records drawn to PNG files (boxes, masks, audio, captions), and a
contact sheet of them, to look at a dataset before training on it."""

from __future__ import annotations

import itertools
from pathlib import Path

import click
import soundfile

from recordkit._cli._common import FOLDER_TO_WRITE, PATH_OR_URL, dataset_at, reader_path, storage_option
from recordkit.codec._plugins import default_registry
from recordkit.dataset._manifest import read_manifest
from recordkit.errors import RecordkitError
from recordkit.read._open import bind_to_read
from recordkit.read._shortcuts import iter_records
from recordkit.tools._render import contact_sheet, render_record

__all__ = ["show_command"]


@click.command("show", short_help="Draw records to PNG (boxes, masks, audio) and a contact sheet.")
@click.argument("dataset", type=PATH_OR_URL)
@storage_option
@click.option("-s", "--split", default="train", show_default=True, help="The split (or a slice: train[:10]).")
@click.option(
    "--index", type=click.IntRange(min=0), help="Draw only the record at this position of the split."
)
@click.option(
    "-n", "--n", "count", type=click.IntRange(min=1), default=16, show_default=True, help="Records to draw."
)
@click.option(
    "-o",
    "--output",
    type=FOLDER_TO_WRITE,
    required=True,
    help="Folder for the PNGs.",
)
def show_command(
    dataset: str, storage_options: tuple[str, ...], split: str, index: int | None, count: int, output: Path
) -> None:
    """Draw records of DATASET to OUTPUT/record-NNNNN.png: images with their boxes and
    class names, masks overlaid with a legend, audio as waveform and spectrogram (also
    saved as WAV), other fields as captions; and OUTPUT/contact-sheet.png with all of
    them. DATASET is a dataset folder (or its dataset.json), or a remote URL (s3://,
    gs:// ...); OUTPUT is a local folder. No TensorFlow is needed."""
    root = dataset_at(dataset, storage_options)
    manifest = read_manifest(root)
    bound = bind_to_read(manifest, default_registry(), split=split)  # with its field groups
    output.mkdir(parents=True, exist_ok=True)
    source, options = reader_path(root)
    records = iter_records(source, split, storage_options=options)
    start = index if index is not None else 0
    chosen = itertools.islice(records, start, start + (1 if index is not None else count))
    drawn = []
    for position, record in enumerate(chosen, start=start):
        try:
            rendered = render_record(bound.fields, record)
        except RecordkitError as exc:
            raise exc.with_context(record=position, split=split) from exc.__cause__
        path = output / f"record-{position:05d}.png"
        rendered.picture.save(path)
        for name, (samples, rate) in rendered.audio.items():
            soundfile.write(output / f"record-{position:05d}-{name}.wav", samples, rate, subtype="PCM_16")
        drawn.append((f"#{position}", rendered.picture))
        click.echo(str(path))
    if not drawn:
        raise click.ClickException(f"split {split!r} has no record at position {start}")
    sheet = output / "contact-sheet.png"
    contact_sheet(drawn).save(sheet)
    click.echo(f"{sheet} ({len(drawn)} record{'s' * (len(drawn) != 1)})")
