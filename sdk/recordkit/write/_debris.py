"""What an interrupted write leaves behind, and the one sweep that finds it.

A file the manifest does not list is not part of the dataset: readers never see it. A
write that stopped may leave temporary shards, shards renamed (or uploaded) but never
listed, a manifest's temporary file, or, after an overwrite on an object store, the old
dataset's objects. :func:`unlisted` is the one test of which names those are; the local
writer (before resuming a split), the Beam writer (at its commit) and the overwrite
(after its commit) each remove what it finds.

A write that starts a split or appends to a finished one lists no folder: a folder of a
million shards takes seconds to list.

In a bucket no lock keeps two runs apart: a resume takes the write over (a conditional
save of ``dataset.json``) before it sweeps, but another resume may take it over in turn
and upload a shard that this sweep would find unlisted. So a sweep in a bucket removes
only the files of runs that are provably stopped (:func:`stopped_runs`): those whose
token names a shard the unfinished write listed, in the manifest this run replaced. Such
a run can save no manifest any more, so it can never list what is removed; a live run's
files, under a token no manifest this run saw has listed, are left alone.
 A write that stopped left its split marked
unfinished, so its debris is removed by the resume it requires; what could still be in
the way are files under the names this write will use, which :func:`check_no_strays`
looks for one by one (the split's next shard names, in order, until one is free), and
:func:`check_free` again for each new shard.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from recordkit.dataset._manifest import MANIFEST_FILE, SplitInfo
from recordkit.errors import DatasetError
from recordkit.format._index import index_name
from recordkit.format._tfrecord import Compression
from recordkit.storage import Location
from recordkit.write._shard_file import run_token_of, shard_name, shard_pattern, temp_pattern

__all__ = [
    "check_free",
    "check_no_strays",
    "of_run",
    "of_runs",
    "remove_manifest_debris",
    "remove_write_debris",
    "remove_split_debris",
    "remove_unlisted_shards",
    "stopped_runs",
    "unlisted",
]


def unlisted(names: Iterable[str], listed: Iterable[str], *, split: str | None = None) -> list[str]:
    """The ``names`` that ``listed`` leaves out, sorted; with ``split``, only that split's
    shard files (under their final names) are looked at."""
    keep = set(listed)
    pattern = None if split is None else shard_pattern(split)
    return sorted(n for n in names if n not in keep and (pattern is None or pattern.match(n)))


def stopped_runs(info: SplitInfo) -> frozenset[str]:
    """The run tokens of the shards that ``info``'s unfinished write listed: the runs
    that wrote it so far. Once a resume in a bucket has replaced the manifest that lists
    them, none of these runs can save again (each save is conditional on the version it
    read or wrote last), so their unlisted files are debris."""
    before = 0 if info.unfinished is None else info.unfinished.shards_before or 0
    return frozenset(
        token for shard in info.shards[before:] if (token := run_token_of(shard.file)) is not None
    )


def of_runs(names: Iterable[str], runs: frozenset[str] | None) -> list[str]:
    """The ``names`` written by one of ``runs`` or under no token (None: all of them):
    in a bucket, where every run writes under its own token, a name without one is a
    local write's, copied there, never a live run's."""
    return [n for n in names if runs is None or of_run(n, runs)]


def of_run(name: str, runs: frozenset[str]) -> bool:
    """Whether ``name`` was written by one of ``runs``, or under no run token."""
    token = run_token_of(name)
    return token is None or token in runs


def remove_unlisted_shards(
    root: Location,
    split: str,
    listed: Iterable[str],
    names: list[str] | None = None,
    runs: frozenset[str] | None = None,
) -> list[str]:
    """Remove the shards of ``split`` in ``root`` that ``listed`` leaves out, with their
    record indexes; return their names. ``names``: ``root``'s listing, if already made;
    ``runs``: only the shards these runs wrote (:func:`of_runs`)."""
    strays = of_runs(unlisted(root.list() if names is None else names, listed, split=split), runs)
    for name in strays:
        root.join(name).remove()
        root.join(index_name(name)).remove()
    return strays


_MANIFEST_TEMP = re.compile(r"^\.dataset\..+\.json\.tmp$")


def remove_manifest_debris(root: Path, names: list[str] | None = None) -> None:
    """Temp files of a manifest save that was interrupted (called holding the lock: no
    other writer is running, so they are a dead writer's). ``names``: ``root``'s
    listing, if already made."""
    for name in sorted(os.listdir(root)) if names is None else names:
        if _MANIFEST_TEMP.match(name):
            (root / name).unlink(missing_ok=True)


def remove_write_debris(root: Path) -> None:
    """In a folder without a manifest (a write that stopped before its first save, or a
    new dataset): the temp files of every split's shards and of the manifest."""
    names = sorted(os.listdir(root))
    remove_manifest_debris(root, names)
    temp = temp_pattern(None)
    for name in names:
        if temp.match(name):
            (root / name).unlink(missing_ok=True)


def _remove_temp_shards(root: Location, split: str, names: list[str], runs: frozenset[str] | None) -> None:
    temp = temp_pattern(split)
    for name in of_runs(names, runs):
        if temp.match(name):
            root.join(name).remove()


def remove_split_debris(
    root: Location, split: str, info: SplitInfo, runs: frozenset[str] | None = None
) -> None:
    """Before resuming: remove temp shards, and shards renamed but never listed (the
    process stopped between the rename and the manifest update; on an object store,
    between a shard's upload and the manifest PUT). ``runs``: in a bucket, only those of
    these stopped runs (:func:`stopped_runs`); None in a locked local folder, where no
    other run can be writing."""
    names = root.list()
    _remove_temp_shards(root, split, names, runs)
    remove_unlisted_shards(root, split, (s.file for s in info.shards), names, runs)
    if root.local_path is not None:
        remove_manifest_debris(root.local_path, names)


def check_no_strays(
    root: Location, split: str, info: SplitInfo, compression: Compression, token: str | None = None
) -> None:
    """Before a fresh write to a split (or an append to a finished one): refuse to
    overwrite shard files that the manifest does not list, looking only at the names this
    write will use (the split's next shard names, under the run's ``token``, in order,
    until one is free)."""
    strays: list[str] = []
    while True:
        name = shard_name(split, len(info.shards) + len(strays), compression, token)
        if not root.join(name).exists():
            break
        strays.append(name)
    if strays:
        _refuse(root, split, strays)


def check_free(where: Location, split: str) -> None:
    """Before a new shard is written at ``where``: refuse a file already there (a write
    renames a complete shard over its final name)."""
    if where.exists():
        _refuse(where.parent, split, [where.name])


def _refuse(root: Location, split: str, strays: list[str]) -> None:
    shown = ", ".join(strays[:5]) + (" ..." if len(strays) > 5 else "")
    raise DatasetError(
        f"holds shard files of split {split!r} that {MANIFEST_FILE} does not list ({shown}); "
        "remove them, or pass resume=True if they come from an interrupted write",
        file=str(root),
    )
