"""``recordkit index``: build record indexes for shards that have none.

Datasets written by recordkit since format 2 carry an index beside every shard. This
command adds them to older datasets (and lists them in ``dataset.json``, upgrading it),
or writes ``<file>.index`` sidecars beside TFRecord files recordkit did not write, which
:class:`recordkit.RandomAccess` and the PyTorch and Grain readers then use with a
schema. Each shard is read once, every CRC checked; nothing here imports TensorFlow.
"""

from __future__ import annotations

from pathlib import Path

import click

from recordkit._cli._common import dataset_root, split_option
from recordkit.dataset._manifest import MANIFEST_FILE, Manifest, ShardIndex
from recordkit.errors import ManifestError
from recordkit.format._index import build_index, index_name, write_index
from recordkit.format._tfrecord import Compression
from recordkit.read._open import expand_paths, guess_compression

__all__ = ["index_command", "index_dataset", "index_files"]


def index_dataset(root: Path, splits: tuple[str, ...] = (), *, rebuild: bool = False) -> list[str]:
    """Index the shards of ``root``'s splits that lack an index (all with ``rebuild``);
    save the manifest; return the names of the index files written."""
    manifest = Manifest.load(root)
    for name in splits:
        manifest.split(name)  # ManifestError listing the splits there are
    chosen = list(dict.fromkeys(splits)) if splits else list(manifest.splits)
    compression = Compression.parse(manifest.compression)
    written = []
    for name in chosen:
        for shard in manifest.splits[name].shards:
            if shard.index is not None and not rebuild:
                continue
            index = build_index(root / shard.file, compression)
            if len(index) != shard.records:
                raise ManifestError(
                    f"holds {len(index)} records, the manifest says {shard.records}; "
                    "run `recordkit verify` to see what is wrong",
                    shard=shard.file,
                )
            file = index_name(shard.file)
            shard.index = ShardIndex(file=file, sha256=write_index(root / file, index))
            written.append(file)
            manifest.save(root)  # after each shard: an interrupted run keeps what it did
    manifest.save(root)
    return written


def index_files(paths: list[str], compression: str | None = None) -> list[Path]:
    """Write a ``<file>.index`` sidecar beside each TFRecord file of ``paths`` (files or
    glob patterns); return the index paths."""
    files = expand_paths(paths)
    chosen = Compression.parse(compression) if compression is not None else guess_compression(files)
    written = []
    for file in files:
        target = file.with_name(index_name(file.name))
        write_index(target, build_index(file, chosen))
        written.append(target)
    return written


@click.command("index", short_help="Build record indexes for shards that have none.")
@click.argument("paths", nargs=-1, required=True)
@split_option
@click.option("--rebuild", is_flag=True, help="Rebuild indexes that already exist.")
@click.option(
    "--compression",
    type=click.Choice(["none", "GZIP", "ZLIB"], case_sensitive=False),
    default=None,
    help="For TFRecord files without a manifest (default: guessed from the suffix).",
)
def index_command(
    paths: tuple[str, ...], splits: tuple[str, ...], rebuild: bool, compression: str | None
) -> None:
    """Build the record index of every shard of a dataset, or of TFRecord files.

    PATHS is a dataset folder (or its dataset.json): its shards without an index get one,
    listed in the manifest. Or PATHS are TFRecord files (or glob patterns) that recordkit
    did not write: each gets a FILE.index sidecar, which RandomAccess and the PyTorch and
    Grain readers use when given a schema.
    """
    first = Path(paths[0])
    root = dataset_root(first)
    if len(paths) == 1 and (root / MANIFEST_FILE).is_file():
        written = index_dataset(root, splits, rebuild=rebuild)
        click.echo(
            f"indexed {len(written)} shard{'s' * (len(written) != 1)} of {root}"
            + ("" if written else " (every shard already had its index; --rebuild to redo them)")
        )
        return
    if splits:
        raise click.UsageError("--split applies to a dataset folder, not to TFRecord files")
    for target in index_files(list(paths), compression):
        click.echo(f"wrote {target}")
