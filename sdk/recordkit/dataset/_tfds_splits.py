"""The splits of a TFDS folder: ``dataset_info.json``'s shard lists, checked against the
files that exist before anything is built from them.

Each split names its shards through a file-name template
(``{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}``) and a count (``shardLengths``, or
``numShards`` in older versions). Both are untrusted:

* the template, with the first shard's number put in, must be a plain file name inside
  the folder (:func:`~recordkit.dataset._paths.check_member_name`: no ``..``, no absolute
  path, no backslash), checked before any file is looked at; each shard found is
  resolved with its symlinks and must stay in the folder;
* a split cannot have more shards than the folder has files, checked (by one listing of
  the folder) before a single shard name is made, so ``numShards: 100000000`` costs one
  listing, not 10^8 names; shards are then looked at one at a time, and the first
  missing one is the error;
* a shard cannot hold more records than its bytes can frame (each record takes at least
  :data:`~recordkit.format._tfrecord.FRAMING_BYTES`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from recordkit.dataset._manifest import ShardInfo, SplitInfo
from recordkit.dataset._paths import check_member_name, resolve_member
from recordkit.dataset._tfds_json import TfdsJson
from recordkit.format._tfrecord import FRAMING_BYTES, iter_tfrecords
from recordkit.storage import location

__all__ = ["DEFAULT_TEMPLATE", "tfds_split"]

DEFAULT_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"


def tfds_split(
    info: TfdsJson, where: str, split: Mapping[str, Any], root: Path, dataset: str, file_format: str
) -> tuple[str, SplitInfo]:
    """The name and shards of ``split`` (``dataset_info.json``'s entry ``where``)."""
    name = info.text(split.get("name"), f"{where}.name")
    if not name:
        raise info.error(f"{where}.name", "is missing: every split needs a name")
    template = info.text(split.get("filepathTemplate"), f"{where}.filepathTemplate") or DEFAULT_TEMPLATE
    template = (
        template.replace("{DATASET}", dataset).replace("{SPLIT}", name).replace("{FILEFORMAT}", file_format)
    )
    try:
        check_member_name(_shard_file(template, 0, 1), what="its first shard's file name")
    except ValueError as exc:
        raise info.error(f"{where}.filepathTemplate", str(exc)) from None
    files = _Folder(root)
    if "shardLengths" not in split:
        return name, _counted_split(info, where, split, files, template)
    lengths = [
        info.count(n, f"{where}.shardLengths[{i}]")
        for i, n in enumerate(info.items(split["shardLengths"], f"{where}.shardLengths"))
    ]
    files.check_count(info, f"{where}.shardLengths", len(lengths))
    shards = []
    for index, records in enumerate(lengths):
        file = _shard_file(template, index, len(lengths))
        size = files.size(info, f"{where}.shardLengths", file)
        if records > size // FRAMING_BYTES:
            raise info.error(
                f"{where}.shardLengths[{index}]",
                f"says shard {file} holds {records} records; its {size} bytes hold at most "
                f"{size // FRAMING_BYTES}",
            )
        # TFDS records no sha256: an empty one means unknown.
        shards.append(ShardInfo(file=file, records=records, bytes=size, sha256=""))
    return name, SplitInfo(shards=shards)


def _shard_file(template: str, index: int, count: int) -> str:
    return (
        template.replace("{SHARD_X_OF_Y}", f"{index:05d}-of-{count:05d}")
        .replace("{SHARD_INDEX}", f"{index:05d}")
        .replace("{NUM_SHARDS}", f"{count:05d}")
    )


class _Folder:
    """The TFDS folder's files: how many there are (one listing, made when first asked),
    and each shard's size, looked at when it is needed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._count: int | None = None

    def check_count(self, info: TfdsJson, where: str, shards: int) -> None:
        """A split of ``shards`` shards: an error when the folder holds fewer files."""
        if self._count is None:
            with os.scandir(self.root) as entries:
                self._count = sum(1 for _ in entries)
        if shards > self._count:
            raise info.error(
                where, f"lists {shards} shards, but the folder {self.root} holds only {self._count} files"
            )

    def size(self, info: TfdsJson, where: str, file: str) -> int:
        """The size of shard ``file`` (inside the folder once its symlinks are resolved)."""
        path = resolve_member(self.root, file, shard=file)
        try:
            if path.is_file():
                return path.stat().st_size
        except OSError:
            pass
        raise info.error(where, f"lists shard {file}, which is missing from {self.root}")


def _counted_split(
    info: TfdsJson, where: str, split: Mapping[str, Any], files: _Folder, template: str
) -> SplitInfo:
    """A split whose ``dataset_info.json`` has no ``shardLengths`` (older TFDS versions):
    its shards from ``numShards`` or, without it, every file the template matches; each
    shard's records counted by walking its record headers (data CRCs are left to
    ``verify``), and the total checked against ``statistics.numExamples`` when given."""
    names: Iterator[str] | list[str]
    if "numShards" in split:
        count = info.count(split["numShards"], f"{where}.numShards")
        files.check_count(info, f"{where}.numShards", count)
        names = (_shard_file(template, index, count) for index in range(count))
    else:
        pattern = _shard_file(template, 0, 0).replace("00000-of-00000", "*-of-*").replace("00000", "*")
        names = sorted(path.relative_to(files.root).as_posix() for path in files.root.glob(pattern))
    shards = []
    for file in names:
        size = files.size(info, f"{where}.numShards", file)
        records = sum(1 for _ in iter_tfrecords(location(files.root / file), verify=False))
        shards.append(ShardInfo(file=file, records=records, bytes=size, sha256=""))
    if not shards:
        raise info.error(where, f"has no shard lengths and no shard files matching {template}")
    statistics = info.obj(split.get("statistics"), f"{where}.statistics", default={})
    expected = statistics.get("numExamples")
    counted = sum(shard.records for shard in shards)
    if expected is not None and info.count(expected, f"{where}.statistics.numExamples") != counted:
        raise info.error(
            where,
            f"has {counted} records in its {len(shards)} shards, but statistics.numExamples is {expected}",
        )
    return SplitInfo(shards=shards)
