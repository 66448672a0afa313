"""Replacing a dataset by another: what ``overwrite=True`` uses, in a local folder
(:func:`replace_folder`) and on an object store (:func:`commit_generation`).

**A local folder.**
A writer that overwrites writes the new dataset into a sibling staging folder
(``.NAME.rk-new-<id>`` beside ``NAME``); only when it is complete does
:func:`replace_folder` put it in place:

* On Linux, with ``renameat2(RENAME_EXCHANGE)`` (kernel 3.15+, on ext4, xfs, btrfs,
  tmpfs ...), the two folders swap names in one atomic step; the old dataset, now
  under the staging name, is then deleted. At every instant ``NAME`` is the complete
  old dataset or the complete new one, whatever stops the process or the machine.
* Elsewhere (or where the filesystem refuses the exchange): ``NAME`` is renamed to
  ``.NAME.rk-old-<id>``, the staging folder to ``NAME``, and the old one deleted.
  Between the two renames ``NAME`` is briefly absent; a crash exactly then leaves the
  complete old dataset at ``.NAME.rk-old-<id>`` (rename it back).

A crash before the swap leaves ``NAME`` untouched and a staging folder beside it,
which is safe to delete.

**An object store** has no rename, of objects or of prefixes. The new dataset is
written *inside* the old one's prefix, as a complete dataset of its own under a fresh
generation folder (``URL/gen-<id>/``, :func:`generation_folder`), whose names cannot
collide with the old dataset's. :func:`commit_generation` then writes ``URL/dataset.json``
listing the new files by their paths in the generation folder (``gen-<id>/train-00000.tfrecord``),
in one PUT: that is the commit. Last, the objects under ``URL`` that the new manifest
does not list are deleted (:func:`remove_unlisted`): the old dataset, and the generation
folders of other overwrites that were there before this writer read the manifest it
replaced (those runs can never commit now: each commit is conditional on a manifest
version this commit replaced). A generation folder that appeared later is left alone:
it may be an overwrite that started after this commit and is still writing, whose own
commit would list it. Readers trust only what ``dataset.json`` lists, so at every
instant they see the complete old dataset or the complete new one, never a mix:

* a crash before the commit leaves the old dataset as it was (and a ``gen-<id>/`` folder
  no manifest lists; the next overwrite that starts after the crash deletes it);
* a crash after it leaves the new dataset, and old objects no manifest lists (they
  cost storage only; rerunning the overwrite, or deleting them, removes them).

A reader that read the old ``dataset.json`` before the commit and still streams its
shards when they are deleted gets an error naming the missing shard (not another
dataset's records).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import sys
import uuid
from pathlib import Path

from recordkit.dataset._manifest import MANIFEST_FILE, Manifest, ShardInfo
from recordkit.storage import Location, location
from recordkit.write._commit import RemoteManifest
from recordkit.write._debris import of_run, unlisted
from recordkit.write._shard_file import fsync_dir, run_token_of

__all__ = [
    "BEAM_STAGING",
    "commit_generation",
    "earlier_generations",
    "generation_folder",
    "listed_files",
    "remove_unlisted",
    "replace_dataset",
    "replace_folder",
    "replacement_folder",
    "staging_folder",
    "staging_runs",
]

#: The prefix of a generation folder's name (then 12 hex digits).
GENERATION_PREFIX = "gen-"
#: Where the Beam writer's workers write shards before its commit moves them: a folder a
#: run (``.beam-staging/<run>/<attempt>/``), which an overwrite's sweep treats as it treats
#: a generation folder (deleted only when it was there before the overwrite read the
#: manifest it replaced: the run can never commit then).
BEAM_STAGING = ".beam-staging"

_AT_FDCWD = -100
_RENAME_EXCHANGE = 1 << 1


def staging_folder(target: Path) -> Path:
    """A fresh sibling folder name to write the replacement of ``target`` into."""
    return target.parent / f".{target.name}.rk-new-{uuid.uuid4().hex[:12]}"


def replacement_folder(target: Location) -> Location | None:
    """Where an overwrite of ``target`` writes the new dataset: a staging folder beside a
    local one (:func:`staging_folder`), a generation folder inside a remote one
    (:func:`generation_folder`; None when nothing is there to replace)."""
    folder = target.local_path
    return location(staging_folder(folder)) if folder is not None else generation_folder(target)


def replace_dataset(
    staged: Location, target: Location, manifest: Manifest, stored: RemoteManifest | None, *, durable: bool
) -> Manifest:
    """Put the complete dataset written at ``staged`` (its :func:`replacement_folder`) in
    ``target``'s place, and give the manifest committed: a local folder is swapped in by
    :func:`replace_folder`; a remote one is committed by :func:`commit_generation`
    against ``stored``, the target's manifest as the writer read it when it began."""
    folder = target.local_path
    if folder is not None:
        replace_folder(staged.path, folder, durable=durable)
        return manifest
    assert stored is not None  # RemoteManifest.at gives one for every remote target
    return commit_generation(staged, target, manifest, stored)


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names of ``a`` and ``b`` atomically; False when the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(result == 0)


def replace_folder(new: Path, target: Path, *, durable: bool = True) -> None:
    """Put the complete folder ``new`` at ``target``, replacing what is there (see the
    module docs for the guarantee)."""
    if not target.exists():
        os.rename(new, target)
    elif _exchange(new, target):
        shutil.rmtree(new)  # ``new`` now names the old dataset
    else:
        old = target.parent / f".{target.name}.rk-old-{uuid.uuid4().hex[:12]}"
        os.rename(target, old)
        os.rename(new, target)
        shutil.rmtree(old)
    if durable:
        fsync_dir(target.parent)


def generation_folder(target: Location) -> Location | None:
    """A fresh generation folder inside the remote dataset ``target`` to write its
    replacement into; None when nothing is under ``target`` yet (no replacement needed:
    the new dataset is written in place). ``target`` must be a folder inside a bucket:
    an overwrite deletes everything under it that the new dataset does not list."""
    key = target.url.split("://", 1)[1].strip("/")
    if "/" not in key:
        raise ValueError(
            f"overwrite=True replaces everything under {target}; give the dataset a folder inside the "
            "bucket (s3://bucket/NAME), not the bucket itself"
        )
    if next(iter(target.walk_files()), None) is None:
        return None
    return target.join(f"{GENERATION_PREFIX}{uuid.uuid4().hex[:12]}")


def earlier_generations(target: Location) -> frozenset[str]:
    """The generation folders under the remote dataset ``target`` now, and the Beam runs'
    staging folders (:func:`staging_runs`): listed before an overwrite reads the manifest
    it will replace, they belong to overwrites (or Beam runs) that read an earlier (or the
    same) version of it, so none of them can commit once this one has, and its sweep
    (:func:`remove_unlisted`) may delete them."""
    generations = (name for name in target.list_folders() if name.startswith(GENERATION_PREFIX))
    return frozenset(generations) | staging_runs(target)


def staging_runs(target: Location) -> frozenset[str]:
    """The staging folders of the Beam runs writing to ``target`` now (or that stopped
    without committing): ``.beam-staging/<run>``, one a run (:data:`BEAM_STAGING`)."""
    return frozenset(f"{BEAM_STAGING}/{name}" for name in target.join(BEAM_STAGING).list_folders())


def listed_files(manifest: Manifest) -> set[str]:
    """Every file ``manifest`` lists, as paths relative to its dataset's folder: the
    shards, their field groups' shards, their indexes and the rejects files
    (``dataset.json`` itself not included)."""
    files: set[str] = set()
    for split in manifest.splits.values():
        groups = (split.field_groups or {}).values()
        for shard in [*split.shards, *(shard for group in groups for shard in group.shards)]:
            files.add(shard.file)
            if shard.index is not None:
                files.add(shard.index.file)
        if split.rejects_file is not None:
            files.add(split.rejects_file)
    return files | manifest.table_files()


def _moved_under(manifest: Manifest, folder: str) -> Manifest:
    """``manifest`` with every file it lists renamed ``folder/<file>``."""
    moved = manifest.model_copy(deep=True)
    for split in moved.splits.values():
        split.shards = [_moved_shard(shard, folder) for shard in split.shards]
        if split.rejects_file is not None:
            split.rejects_file = f"{folder}/{split.rejects_file}"
    return moved


def _moved_shard(shard: ShardInfo, folder: str) -> ShardInfo:
    index = shard.index
    moved = None if index is None else index.model_copy(update={"file": f"{folder}/{index.file}"})
    return shard.model_copy(update={"file": f"{folder}/{shard.file}", "index": moved})


def commit_generation(
    staged: Location, target: Location, manifest: Manifest, stored: RemoteManifest
) -> Manifest:
    """Make the complete dataset in the generation folder ``staged`` (whose manifest is
    ``manifest``) the dataset at ``target``: its manifest, with paths through ``staged``,
    written as ``target/dataset.json`` in one PUT, the commit, only if ``stored`` (the
    target's manifest as the writer read it) is still there (else ConcurrentWriteError:
    another writer committed meanwhile, and its dataset stands). Returns the committed
    manifest; :func:`remove_unlisted` then deletes the old objects."""
    committed = _moved_under(manifest, staged.name)
    try:
        stored.save(committed)
    except Exception:
        # A PUT whose answer was lost may still have landed (a retry of it is then refused
        # as another writer's would be): then the commit is done, and the caller must not
        # delete the generation it lists. No other writer's manifest is byte for byte
        # this one, which names this writer's own generation folder.
        if not _holds(target, committed):
            raise
    return committed


def _holds(target: Location, manifest: Manifest) -> bool:
    """Whether ``target``'s ``dataset.json`` is ``manifest`` (False when unreadable)."""
    try:
        return target.join(MANIFEST_FILE).read_bytes() == manifest.to_json().encode("utf-8")
    except Exception:
        return False


def remove_unlisted(
    target: Location,
    manifest: Manifest,
    replaced: Manifest | None = None,
    generations: frozenset[str] | None = None,
) -> list[str]:
    """Delete the objects under ``target`` that its committed ``manifest`` does not list:
    the old dataset (the one ``replaced`` describes) and what crashed writes left; return
    their names.

    ``generations``: the generation folders whose objects may be deleted, those there
    before the overwrite read the manifest it replaced (:func:`earlier_generations`) and
    its own; None: every one. Another generation folder is an overwrite's that started
    later, after this commit maybe, and may be writing still: deleting it would make that
    overwrite fail, or commit a manifest listing deleted shards.

    A writer appending in a bucket saves ``dataset.json`` (its write marked unfinished)
    before it uploads anything. So when the manifest is still the committed one after the
    bucket was listed, no append has uploaded a listed object since the commit, and every
    unlisted object outside the generation folders is debris. When it is not, an append
    that started after the commit may own some: an object outside the generation folders
    whose name carries a run token that no file of ``replaced`` carries is then left
    alone (deleting it could lose records the append lists), to be removed by a later
    overwrite."""
    strays = unlisted(target.walk_files(), listed_files(manifest) | {MANIFEST_FILE})
    if generations is not None:
        strays = [name for name in strays if _generation_of(name) in generations | {None}]
    if not _holds(target, manifest):  # a writer saved since the commit
        old_runs = _run_tokens(replaced) if replaced is not None else frozenset()
        strays = [name for name in strays if _generation_of(name) is not None or of_run(name, old_runs)]
    target.remove_files(strays)
    return strays


def _generation_of(name: str) -> str | None:
    """The generation folder that the object ``name`` is in, or the Beam run's staging
    folder (``.beam-staging/<run>``; None: outside them)."""
    folder, slash, rest = name.partition("/")
    if folder == BEAM_STAGING:
        run, slash, _ = rest.partition("/")
        return f"{BEAM_STAGING}/{run}" if slash else None
    return folder if slash and folder.startswith(GENERATION_PREFIX) else None


def _run_tokens(manifest: Manifest) -> frozenset[str]:
    """The run tokens in the names of the files ``manifest`` lists, field groups' too."""
    return frozenset(token for name in listed_files(manifest) if (token := run_token_of(name)) is not None)
