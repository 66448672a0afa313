"""Corrupt records: what a read that skips them reports, and where a damaged shard breaks.

:class:`CorruptionReport` collects what a read with ``on_corrupt="skip"`` left out (one
:class:`SkippedRecords` per skip, each also logged on the ``recordkit`` logger);
:func:`locate_corruption` finds the first framing or CRC error of a shard, which the
checks against the manifest name beside a wrong size or sha256; :func:`file_sha256` is
the digest the manifest records for each shard.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from typing import Literal

from recordkit.errors import CorruptRecordError
from recordkit.format._tfrecord import Compression, iter_tfrecords
from recordkit.storage import Location

__all__ = [
    "CorruptionReport",
    "OnCorrupt",
    "SkippedRecords",
    "check_on_corrupt",
    "file_sha256",
    "locate_corruption",
]

logger = logging.getLogger("recordkit")

#: What a reader does with a corrupt record: stop with an error, or skip it and report.
OnCorrupt = Literal["raise", "skip"]


def check_on_corrupt(on_corrupt: object) -> None:
    """A ValueError for an ``on_corrupt`` that is neither ``"raise"`` nor ``"skip"``,
    before anything is read."""
    if on_corrupt not in ("raise", "skip"):
        raise ValueError(f"on_corrupt must be 'raise' or 'skip', not {on_corrupt!r}")


@dataclasses.dataclass(frozen=True)
class SkippedRecords:
    """Records a read skipped: where, how many (None: unknown) and why."""

    shard: str
    offset: int | None
    records: int | None
    reason: str

    def __str__(self) -> str:
        count = "records" if self.records is None else f"{self.records} record{'s' * (self.records != 1)}"
        where = f"shard {self.shard}" + (f", offset {self.offset}" if self.offset is not None else "")
        return f"{where}: skipped {count}: {self.reason}"


class CorruptionReport:
    """What a read with ``on_corrupt="skip"`` skipped; pass one in to see it.

    It fills in while the data is read (with tf.data, when a shard's end is reached), so
    look at it after iterating. Each skip is also logged as a warning on the
    ``recordkit`` logger.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._skipped: list[SkippedRecords] = []

    def add(self, skipped: SkippedRecords) -> None:
        """Note records skipped (the readers call it), and log them as a warning."""
        with self._lock:
            self._skipped.append(skipped)
        logger.warning("recordkit: %s", skipped)

    @property
    def skipped(self) -> list[SkippedRecords]:
        """Each skip, in the order it happened."""
        with self._lock:
            return list(self._skipped)

    @property
    def records_skipped(self) -> int:
        """How many records were skipped in all (those of unknown count not included)."""
        return sum(s.records or 0 for s in self.skipped)

    @property
    def shards(self) -> list[str]:
        """The shards where something was skipped."""
        return list(dict.fromkeys(s.shard for s in self.skipped))

    def __bool__(self) -> bool:
        return bool(self.skipped)

    def __str__(self) -> str:
        skipped = self.skipped
        if not skipped:
            return "nothing skipped"
        lines = "".join(f"\n  - {s}" for s in skipped)
        return f"{self.records_skipped} records skipped in {len(self.shards)} shard(s):{lines}"

    def __repr__(self) -> str:
        return f"CorruptionReport({self.skipped!r})"


def file_sha256(path: Location) -> str:
    """The sha256 of a file's bytes, as the manifest records it for each shard (a
    remote object: streamed)."""
    digest = hashlib.sha256()
    with path.open_read() as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def locate_corruption(path: Location, compression: Compression) -> CorruptRecordError | None:
    """The first framing or CRC error in the shard at ``path``, or None when its records
    are intact."""
    try:
        for _ in iter_tfrecords(path, compression):
            pass
    except CorruptRecordError as exc:
        return exc
    return None
