"""Reading a shard joined with its field groups' shards past damage (``on_corrupt="skip"``).

A record of a split with field groups is its bytes from the split's shard followed by
its bytes from each group's shard, the files read side by side. Skipping a damaged
record in one file alone would join every later record with the next one's fields in
that file, so a damaged record is skipped in every file: each file is scanned past its
damage (:func:`~recordkit.format._tfrecord.scan_tfrecords`), each intact record numbered
with its position in the file (a damaged record keeps its number), and only positions
intact in every file are joined.

A record whose data fails its CRC is one known position, skipped alone. After a damaged
header the scan finds the next intact record, but not how many records it lost: the
files can no longer be matched record for record, so the rest of the shard is skipped in
every file and reported as one loss. A file that ends intact while another holds more
records is not damage but misalignment, and stops the read naming both files, as
without ``on_corrupt``.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

from recordkit.dataset._shards import Shard
from recordkit.errors import CorruptRecordError
from recordkit.format._tfrecord import Compression, Damage, scan_tfrecords
from recordkit.read._corruption import CorruptionReport, SkippedRecords

__all__ = ["joined_records_skipping"]

#: A record of one file: its position in the file, offset and data.
_Item = tuple[int, int, bytes]


class _Positioned:
    """One file of a joined shard, scanned past damage, each record with its position."""

    def __init__(self, file: Shard, compression: Compression, verify: bool) -> None:
        self.file = file
        #: Each damage found, with the position of the first record it cost.
        self.damages: list[tuple[int, Damage]] = []
        #: The position from which the records cannot be numbered (damage of unknown size).
        self.lost_at: int | None = None
        self.position = 0
        self._records = scan_tfrecords(file.path, compression, self._damaged, verify=verify)

    def _damaged(self, damage: Damage) -> None:
        self.damages.append((self.position, damage))
        if damage.records is None:
            if self.lost_at is None:
                self.lost_at = self.position
        else:
            self.position += damage.records

    def next(self) -> _Item | None:
        """The next intact record (None: the file ended, or its records can no longer be numbered)."""
        item = next(self._records, None)
        if item is None or self.lost_at is not None:
            return None
        position = self.position
        self.position += 1
        return position, item[0], item[1]

    def close(self) -> None:
        if isinstance(self._records, Generator):
            self._records.close()


def joined_records_skipping(
    shard: Shard, files: Sequence[Shard], compression: Compression, *, verify: bool, report: CorruptionReport
) -> Generator[tuple[int, bytes]]:
    """``(offset, data)`` of each record of ``shard`` intact in all its ``files`` (the
    shard's, then its groups'), its bytes from each joined; what was skipped goes to
    ``report`` once per record, naming the file where the damage is (see the module docs)."""
    cursors = [_Positioned(file, compression, verify) for file in files]
    try:
        heads = [cursor.next() for cursor in cursors]
        while True:
            present = [head for head in heads if head is not None]
            if len(present) < len(heads):
                break
            target = max(head[0] for head in present)
            if all(head[0] == target for head in present):
                yield present[0][1], b"".join(head[2] for head in present)
                heads = [cursor.next() for cursor in cursors]
            else:
                heads = [_at_least(cursor, head, target) for cursor, head in zip(cursors, heads, strict=True)]
        if not any(cursor.lost_at is not None for cursor in cursors):
            _check_ends(shard, cursors, heads)
    finally:
        for cursor in cursors:
            cursor.close()
        for skipped in _skips(shard, cursors):
            report.add(skipped)


def _at_least(cursor: _Positioned, head: _Item | None, target: int) -> _Item | None:
    """``cursor``'s first record at position ``target`` or later (those before are damaged
    in another file: skipped)."""
    while head is not None and head[0] < target:
        head = cursor.next()
    return head


def _check_ends(shard: Shard, cursors: list[_Positioned], heads: list[_Item | None]) -> None:
    """The files ended intact: one that holds a record past another's end is misaligned."""
    end = min(cursor.position for cursor, head in zip(cursors, heads, strict=True) if head is None)
    for cursor, head in zip(cursors, heads, strict=True):
        head = _at_least(cursor, head, end)
        if head is not None:
            ended = [c.file.name for c in cursors if c.position <= end]
            raise CorruptRecordError(
                f"{', '.join(ended)} ends after {end} records, {cursor.file.name} holds more: "
                "a field group's shard must hold the records of the shard it is aligned with",
                shard=shard.name,
            )


def _skips(shard: Shard, cursors: list[_Positioned]) -> list[SkippedRecords]:
    """Each damaged record once, in the file where it is damaged; from the first position
    where a file lost count, the rest of the shard as one skip."""
    lost = [c for c in cursors if c.lost_at is not None]
    cut = min((c.lost_at for c in lost if c.lost_at is not None), default=None)
    also = "; its fields in the shard's other files were skipped with it"
    out: list[SkippedRecords] = []
    covered: set[int] = set()
    for cursor in cursors:
        for position, damage in cursor.damages:
            if damage.records is None or (cut is not None and position >= cut):
                continue
            positions = set(range(position, position + damage.records))
            if positions <= covered:
                continue
            covered |= positions
            out.append(SkippedRecords(cursor.file.name, damage.offset, damage.records, damage.reason + also))
    if cut is not None:
        cursor = next(c for c in lost if c.lost_at == cut)
        damage = next(d for p, d in cursor.damages if d.records is None)
        rest = None if shard.records is None else max(shard.records - cut, 0)
        reason = (
            f"{damage.reason}; the records past it cannot be matched with the shard's other files, "
            "so the rest of the shard was skipped in every file"
        )
        out.append(SkippedRecords(cursor.file.name, damage.offset, rest, reason))
    return out
