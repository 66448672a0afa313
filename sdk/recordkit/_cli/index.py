"""``recordkit index``: build record indexes for shards that have none.

Datasets written by recordkit since format 2 carry an index beside every shard. This
command adds them to older datasets (and lists them in ``dataset.json``, upgrading it),
or writes ``<file>.index`` sidecars beside TFRecord files recordkit did not write, which
:class:`recordkit.RandomAccess` and the PyTorch and Grain readers then use with a
schema, and beside every shard of a folder TFDS prepared (read in place). Each shard is
read once, every CRC checked; nothing here imports TensorFlow.

Datasets and files may be local or remote (``s3://``, ``gs://`` ..., through the storage
layer). The manifest is rewritten after the index files it lists are written (on an
object store: uploaded, each in one PUT), so it never lists an index that is not there:
at the end, and every :data:`CHECKPOINT_SECONDS` in between, so that an interrupted run
keeps the indexes it listed (a rerun indexes the rest).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import click

from recordkit._cli._common import (
    dataset_at,
    has_manifest,
    parse_storage_options,
    split_option,
    storage_option,
)
from recordkit.dataset._manifest import ShardIndex, read_manifest, write_manifest
from recordkit.dataset._paths import member, resolve_member
from recordkit.dataset._tfds import is_tfds_folder, load_tfds
from recordkit.errors import ManifestError
from recordkit.format._index import build_index, index_name, write_index
from recordkit.format._tfrecord import Compression
from recordkit.read._paths import expand_files, guess_compression, to_locations
from recordkit.storage import Location, StorageOptions, location

__all__ = ["CHECKPOINT_SECONDS", "index_command", "index_dataset", "index_files", "index_tfds"]

#: How often a long run saves the manifest with the indexes written so far.
CHECKPOINT_SECONDS = 60.0


def index_dataset(root: Location, splits: Sequence[str] = (), *, rebuild: bool = False) -> list[str]:
    """Index the shards of the dataset at ``root``'s splits that lack an index (all
    with ``rebuild``); save the manifest; return the names of the index files written."""
    manifest = read_manifest(root)
    for name in splits:
        manifest.split(name)  # ManifestError listing the splits there are
    chosen = list(dict.fromkeys(splits)) if splits else list(manifest.splits)
    compression = Compression.parse(manifest.compression)
    written = []
    saved = time.monotonic()
    for name in chosen:
        # As a list: the entries of a shard table are made on each access, and these change.
        shards = manifest.splits[name].shards = list(manifest.splits[name].shards)
        for shard in shards:
            if shard.index is not None and not rebuild:
                continue
            index = build_index(member(root, shard.file), compression)
            if len(index) != shard.records:
                raise ManifestError(
                    f"holds {len(index)} records, the manifest says {shard.records}; "
                    "run `recordkit verify` to see what is wrong",
                    shard=shard.file,
                )
            file = index_name(shard.file)
            shard.index = ShardIndex(file=file, sha256=write_index(member(root, file), index))
            written.append(file)
            if time.monotonic() - saved >= CHECKPOINT_SECONDS:
                write_manifest(manifest, root)  # an interrupted run keeps what it listed
                saved = time.monotonic()
    write_manifest(manifest, root)  # last: it lists only indexes already written
    return written


def index_tfds(root: Path, splits: Sequence[str] = ()) -> list[Path]:
    """Write a ``<file>.index`` sidecar beside every shard of the TFDS folder ``root``'s
    splits (every one, rebuilt: a sidecar already there may be stale); return where
    they went. A shard holding another count than ``dataset_info.json`` says is an error."""
    manifest = load_tfds(root).manifest
    for name in splits:
        manifest.split(name)  # ManifestError listing the splits there are
    written = []
    for name in list(dict.fromkeys(splits)) if splits else list(manifest.splits):
        for shard in manifest.splits[name].shards:
            index = build_index(location(resolve_member(root, shard.file)))
            if len(index) != shard.records:
                raise ManifestError(
                    f"holds {len(index)} records, dataset_info.json says {shard.records}", shard=shard.file
                )
            target = resolve_member(root, index_name(shard.file))
            write_index(location(target), index)
            written.append(target)
    return written


def index_files(
    paths: Sequence[str], compression: str | None = None, storage_options: StorageOptions | None = None
) -> list[Location]:
    """Write a ``<file>.index`` sidecar beside each TFRecord file of ``paths`` (files or
    glob patterns, local or remote URLs); return where the indexes went."""
    files = expand_files(to_locations(list(paths), storage_options))
    chosen = Compression.parse(compression) if compression is not None else guess_compression(files)
    written = []
    for file in files:
        target = file.parent.join(index_name(file.name))
        write_index(target, build_index(file, chosen))
        written.append(target)
    return written


@click.command("index", short_help="Build record indexes for shards that have none.")
@click.argument("paths", nargs=-1, required=True)
@split_option
@storage_option
@click.option("--rebuild", is_flag=True, help="Rebuild indexes that already exist.")
@click.option(
    "--compression",
    type=click.Choice(["none", "GZIP", "ZLIB"], case_sensitive=False),
    default=None,
    help="For TFRecord files without a manifest (default: guessed from the suffix).",
)
def index_command(
    paths: tuple[str, ...],
    splits: tuple[str, ...],
    storage_options: tuple[str, ...],
    rebuild: bool,
    compression: str | None,
) -> None:
    """Build the record index of every shard of a dataset, or of TFRecord files.

    PATHS is a dataset folder (or its dataset.json): its shards without an index get one,
    listed in the manifest. Or PATHS are TFRecord files (or glob patterns) that recordkit
    did not write: each gets a FILE.index sidecar, which RandomAccess and the PyTorch and
    Grain readers use when given a schema. Or PATHS is a folder TFDS prepared: each of its
    shards gets a sidecar (rebuilt if it has one). Datasets and files may be remote
    URLs (s3://, gs:// ...).
    """
    root = dataset_at(paths[0], storage_options)
    if len(paths) == 1 and has_manifest(root):
        written = index_dataset(root, splits, rebuild=rebuild)
        click.echo(
            f"indexed {len(written)} shard{'s' * (len(written) != 1)} of {root}"
            + ("" if written else " (every shard already had its index; --rebuild to redo them)")
        )
        return
    folder = root.local_path
    if len(paths) == 1 and folder is not None and is_tfds_folder(folder):
        for sidecar in index_tfds(folder, splits):
            click.echo(f"wrote {sidecar}")
        return
    if splits:
        raise click.UsageError("--split applies to a dataset folder, not to TFRecord files")
    for target in index_files(paths, compression, parse_storage_options(storage_options)):
        click.echo(f"wrote {target}")
