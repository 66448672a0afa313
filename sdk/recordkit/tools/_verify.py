"""The checks of ``recordkit verify`` (and of ``recordkit view``'s verify run): every
shard of a dataset against its manifest.

For each shard ``dataset.json`` lists: the file exists, has the recorded size and
sha256, and reads as TFRecord with every length and data CRC intact and the recorded
number of records; and its record index, when the manifest lists one, has the recorded
sha256 and gives exactly the offsets of the records read. The shards of a split's field
groups are checked the same way. Shards are checked several at once in threads or in
processes; the results come in manifest order whatever the order they finish in.
Nothing here imports TensorFlow or click.
"""

from __future__ import annotations

import dataclasses
import hashlib
import mmap
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Literal

from recordkit.dataset._manifest import Manifest, ShardInfo
from recordkit.dataset._paths import member
from recordkit.errors import CorruptRecordError, ManifestError
from recordkit.format._framing_check import framing_matches
from recordkit.format._index import RecordIndex, max_index_bytes
from recordkit.format._tfrecord import FRAMING_BYTES, Compression, iter_tfrecords
from recordkit.read._corruption import file_sha256
from recordkit.storage import Location

__all__ = ["Parallel", "ShardCheck", "check_index", "check_shard", "verify_dataset"]


@dataclasses.dataclass(frozen=True)
class ShardCheck:
    """What checking one shard found; no problems means it matches the manifest."""

    split: str
    shard: ShardInfo
    records: int
    problems: tuple[str, ...]
    #: The field group the shard belongs to (None: one of the split's own shards).
    group: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def check_shard(root: Location, split: str, shard: ShardInfo, compression: Compression) -> ShardCheck:
    """Check one shard's size, sha256, TFRecord framing and CRCs, and record count."""
    try:
        path = member(root, shard.file)
    except ManifestError as exc:
        return ShardCheck(split, shard, 0, (exc.reason,))
    if compression is Compression.NONE and _matches_at_once(root, shard, path):
        return ShardCheck(split, shard, shard.records, ())
    if not path.is_file():
        return ShardCheck(split, shard, 0, ("listed in the manifest but missing on disk",))
    problems: list[str] = []
    try:
        size = path.size()
        if size != shard.bytes:
            problems.append(f"the file has {size} bytes, the manifest says {shard.bytes}")
        digest = file_sha256(path)
    except OSError as exc:
        return ShardCheck(split, shard, 0, (f"cannot be read: {exc}",))
    if shard.sha256 and digest != shard.sha256:  # empty: none recorded (a TFDS folder)
        problems.append(f"sha256 {digest} differs from the manifest's {shard.sha256}")
    count = 0
    offsets: list[int] = []
    end = 0
    try:
        for offset, data in iter_tfrecords(path, compression, verify=True):
            count += 1
            offsets.append(offset)
            end = offset + len(data) + FRAMING_BYTES
    except CorruptRecordError as exc:
        at = exc.context.offset
        where = f"record {count}" + (f" (offset {at})" if at is not None else "")
        problems.append(f"{where}: {exc.reason}")
    else:
        if count != shard.records:
            problems.append(f"holds {count} records, the manifest says {shard.records}")
        problems += check_index(root, shard, RecordIndex.from_offsets(offsets, end))
    return ShardCheck(split, shard, count, tuple(problems))


#: Shards of up to this many bytes are read whole; larger ones are mapped (``mmap``).
_READ_WHOLE = 4 << 20


def _matches_at_once(root: Location, shard: ShardInfo, path: Location) -> bool:
    """Whether a local uncompressed ``shard`` with a record index matches the manifest,
    checked at once: its bytes mapped and hashed in one call (hashlib releases the GIL, so
    threads hash side by side) and its framing checked against its index by
    :func:`~recordkit.format._framing_check.framing_matches`. False (for any reason):
    the shard is checked record by record, which names what is wrong."""
    local = path.local_path
    if local is None or shard.index is None or not shard.sha256 or not shard.bytes:
        return False
    found = _stored_index(root, shard)
    if isinstance(found, str) or len(found) != shard.records:
        return False
    try:
        with open(local, "rb") as stream:
            if os.fstat(stream.fileno()).st_size != shard.bytes:
                return False
            if shard.bytes <= _READ_WHOLE:
                return _bytes_match(stream.read(), shard, found)
            with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                return _bytes_match(mapped, shard, found)
    except (OSError, ValueError, BufferError):
        return False


def _bytes_match(data: bytes | mmap.mmap, shard: ShardInfo, index: RecordIndex) -> bool:
    return hashlib.sha256(data).hexdigest() == shard.sha256 and framing_matches(data, index.offsets)


def _stored_index(root: Location, shard: ShardInfo) -> RecordIndex | str:
    """``shard``'s record index as the manifest lists it, its sha256 checked; else what is
    wrong with it."""
    assert shard.index is not None
    path = root.join(shard.index.file)
    # An index is untrusted: no more of it is read than the index of this shard can hold,
    # plus one byte to tell one that is larger.
    limit = max_index_bytes(shard.bytes)
    try:
        data = path.read_range(0, limit + 1)
    except OSError as exc:
        return f"record index {shard.index.file}: cannot be read ({exc.strerror or exc})"
    if len(data) > limit:
        return (
            f"record index {shard.index.file}: holds more than the {limit} bytes that the index of "
            f"a {shard.bytes}-byte shard can hold"
        )
    digest = hashlib.sha256(data).hexdigest()
    if digest != shard.index.sha256:
        expected = shard.index.sha256
        return f"record index {shard.index.file}: sha256 {digest} differs from the manifest's {expected}"
    try:
        return RecordIndex.from_bytes(data, name=shard.index.file)
    except CorruptRecordError as exc:
        return f"record index {shard.index.file}: {exc.reason}"


def check_index(root: Location, shard: ShardInfo, scanned: RecordIndex) -> list[str]:
    """Problems of ``shard``'s record index (none when the manifest lists no index)."""
    if shard.index is None:
        return []
    stored = _stored_index(root, shard)
    if isinstance(stored, str):
        return [stored]
    if len(stored) != len(scanned) or bool((stored.offsets != scanned.offsets).any()):
        return [f"record index {shard.index.file}: its offsets are not those of the shard's records"]
    return []


#: How shards are checked in parallel: threads share one process (the hashing and CRCs of
#: large shards release the GIL); processes also run the Python around each shard on
#: every core (what a split of many small shards needs).
Parallel = Literal["threads", "processes"]
#: One shard to check: the dataset, the split, the shard, the compression, its field group.
_Work = tuple[Location, str, ShardInfo, Compression, str | None]


def verify_dataset(
    root: Location,
    manifest: Manifest,
    splits: Sequence[str],
    *,
    jobs: int = 1,
    parallel: Parallel = "threads",
    progress: Callable[[], object] | None = None,
) -> list[ShardCheck]:
    """Check every shard of ``splits`` (each split's, then its field groups'), ``jobs``
    at a time (in threads or processes), the results in manifest order; ``progress`` is
    called once per shard checked."""
    compression = Compression.parse(manifest.compression)
    work: list[_Work] = []
    for name in splits:
        info = manifest.splits[name]
        work += [(root, name, shard, compression, None) for shard in info.shards]
        for group, fields in (info.field_groups or {}).items():
            work += [(root, name, shard, compression, group) for shard in fields.shards]
    checks: Iterable[ShardCheck]
    if jobs == 1:
        checks = (_check_item(item) for item in work)
        return [_counted(check, progress) for check in checks]
    pool: Executor
    if parallel == "processes":
        pool = ProcessPoolExecutor(jobs)
        chunk = max(1, min(256, len(work) // (4 * jobs)))
    else:
        pool = ThreadPoolExecutor(jobs, thread_name_prefix="recordkit-verify")
        chunk = 1
    with pool:
        checks = pool.map(_check_item, work, chunksize=chunk)
        return [_counted(check, progress) for check in checks]


def _check_item(item: _Work) -> ShardCheck:
    root, split, shard, compression, group = item
    check = check_shard(root, split, shard, compression)
    return check if group is None else dataclasses.replace(check, group=group)


def _counted(check: ShardCheck, progress: Callable[[], object] | None) -> ShardCheck:
    if progress is not None:
        progress()
    return check
