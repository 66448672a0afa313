"""One split being written by a :class:`~recordkit.DatasetWriter`: its current shard,
the shard being completed in the background, its rejects, and how far its input got.

A :class:`SplitWriter` knows nothing of the writer that owns it: what it needs (where
shards go and how they are cut, the progress bar, the manifest and the lock that guards
it) comes in a :class:`SplitSink`. A split with field groups writes each record's group
fields into group shards beside its shard (:class:`~recordkit.write._group_shards.GroupAppend`):
they roll over with it, and are listed with it in one save of the manifest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import threading
from collections.abc import Callable
from concurrent.futures import Future

from recordkit.dataset._manifest import ShardInfo, SplitInfo, UnfinishedWrite
from recordkit.dataset._picture_sizes import PictureSizes, merge_sides, sizes_from_seen
from recordkit.errors import RecordkitError
from recordkit.format._tfrecord import FRAMING_BYTES, Compression
from recordkit.schema._encoder import SidesSeen
from recordkit.storage import Location
from recordkit.write._debris import check_free
from recordkit.write._group_shards import GroupAppend, GroupShards
from recordkit.write._parallel import Item
from recordkit.write._progress import Progress
from recordkit.write._rejects import RejectsFile
from recordkit.write._shard_file import ShardFile, ShardLimits, shard_name

__all__ = ["SplitSink", "SplitWriter", "now"]


def now() -> str:
    """The time a write starts, as the manifest records it."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def takeover_time() -> str:
    """The time a resume in a bucket takes a write over, to the microsecond: the saved
    manifest then always differs from the one the taken-over run saved (whose ``now()``
    has no fraction), so its version changes and that run's next save fails."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


@dataclasses.dataclass(frozen=True)
class SplitSink:
    """What a split being written needs of its writer."""

    #: The dataset's folder, where shards and rejects files go.
    where: Location
    compression: Compression
    durable: bool
    limits: ShardLimits
    progress: Progress
    #: Held while the manifest changes or is saved: shards are listed from their
    #: background threads as they complete.
    lock: threading.RLock
    #: Save the manifest, its folder synced first (called holding ``lock``).
    save: Callable[[], None]
    #: The run token in the names of the shards this run writes (see ``shard_name``):
    #: set in a bucket, where no lock keeps another run's uploads off these names; None
    #: (plain names) in a local folder, which the run's lock keeps to itself.
    token: str | None = None


class SplitWriter:
    """The state of one split being written."""

    def __init__(
        self, sink: SplitSink, name: str, info: SplitInfo, *, skip: int, groups: GroupAppend | None = None
    ) -> None:
        self.sink = sink
        self.name = name
        self.info = info
        #: Input records to drop before writing (resume): those already accounted for.
        self.skip = skip
        #: Index of the next record given to write() (its position in the input).
        self.next_index = 0
        #: Input records handled so far (written, rejected or skipped), in order.
        self.handled = skip
        self.shard: ShardFile | None = None
        #: The split's field groups, which each record fills in too (None: it has none).
        self.groups = groups
        #: The group shards beside :attr:`shard`.
        self.group_shards: GroupShards | None = None
        #: The previous shard, being completed and listed in the background.
        self.committing: Future[ShardInfo] | None = None
        self.rejects = RejectsFile(
            sink.where,
            name,
            keep=info.rejected,
            durable=sink.durable,
            file=info.rejects_file,
            token=sink.token,
        )
        self.rejected_since_commit = 0
        #: Records waiting to be sent to the workers: (index, key) and (label, record).
        self.batch_meta: list[tuple[int, str | None]] = []
        self.batch_items: list[Item] = []
        #: write_all() went through its whole input: if the writer stops because another
        #: split fails, this split is complete and is finished, not thrown away.
        self.input_done = False
        #: The sides of the pictures encoded for this split, listed with every shard
        #: (``picture_sizes``, merged with what the split listed before); None when the
        #: split already holds records whose pictures' sizes it does not list (a split
        #: written before they were recorded): then it never lists them.
        self._sizes_before = info.picture_sizes
        self._had_records = bool(info.shards)
        self.seen: SidesSeen | None = None if self._had_records and info.picture_sizes is None else {}

    def note_sides(self, seen: SidesSeen) -> None:
        """Add the sides of a batch's pictures (encoded elsewhere) to :attr:`seen`."""
        if self.seen is not None:
            merge_sides(self.seen, seen)

    def add(self, framed: bytes) -> None:
        """Append one framed record (as worker processes send them)."""
        assert self.groups is None, "a split with field groups is encoded in the writer's process"
        self._shard_for(len(framed)).add(framed)
        self.handled += 1
        self.sink.progress.advance(len(framed))

    def add_pieces(self, pieces: list[bytes], size: int, group_parts: list[bytes] | None = None) -> None:
        """Append one record given as the pieces of its Example (``size`` bytes), framed
        straight into the shard (the one-process path), and its framed ``group_parts``
        (one per field group, in order) into the group shards beside it."""
        framed_size = size + FRAMING_BYTES
        self._shard_for(framed_size).add_pieces(pieces, size)
        if self.group_shards is not None:
            assert group_parts is not None, "a split with field groups takes each record's group parts"
            self.group_shards.add(group_parts)
        self.handled += 1
        self.sink.progress.advance(framed_size)

    def _shard_for(self, framed_size: int) -> ShardFile:
        """The shard a record of ``framed_size`` bytes goes to: the current one, or a
        new one when it is full (the full one is committed)."""
        shard = self.shard
        if shard is None or not shard.fits(framed_size, self.sink.limits):
            if shard is not None:
                self.commit_shard()
            sink = self.sink
            index = len(self.info.shards) + (self.committing is not None)
            where = sink.where.join(shard_name(self.name, index, sink.compression, sink.token))
            check_free(where, self.name)  # a file the manifest does not list is never replaced
            shard = self.shard = ShardFile(where, sink.compression, durable=sink.durable)
            if self.groups is not None:
                self.group_shards = self.groups.open(index)
        return shard

    def reject(self, index: int, key: str | None, error: RecordkitError) -> None:
        self.rejects.add(index, key, error)
        self.rejected_since_commit += 1
        self.handled += 1
        self.sink.progress.advance(0)

    def commit_shard(self) -> None:
        """Complete the current shard in the background: its last writes and fsync, its
        rename and the manifest that lists it overlap the encoding of the next records."""
        assert self.shard is not None
        self.settle_commit()  # at most one shard completing at a time
        shard, self.shard = self.shard, None
        beside, self.group_shards = self.group_shards, None
        handled, rejected = self.handled, self.rejected_since_commit
        self.rejected_since_commit = 0
        # The sides seen so far: every picture of the shard (and perhaps of the next).
        sizes = self._picture_sizes()
        try:
            committing = shard.commit_async(
                then=lambda info: self._list(info, handled, rejected, beside, sizes)
            )
        except BaseException:
            if beside is not None:
                beside.discard()
            raise
        if beside is not None:  # what of the group shards the commit did not complete goes
            committing.add_done_callback(lambda _: beside.discard())
        self.committing = committing

    def _picture_sizes(self) -> dict[str, PictureSizes] | None:
        """What the split lists as its pictures' sizes once the records encoded so far
        are written."""
        if self.seen is None:
            return None
        return sizes_from_seen(self.seen, self._sizes_before, had_records=self._had_records)

    def _list(
        self,
        shard_info: ShardInfo,
        handled: int,
        rejected: int,
        beside: GroupShards | None,
        sizes: dict[str, PictureSizes] | None,
    ) -> None:
        """On the shard's background thread, once it is complete: complete the group
        shards ``beside`` it, then list them all in one save of the manifest, with the
        ``handled`` input records and the ``rejected`` ones the shard accounts for, and
        the ``sizes`` of the pictures the split holds."""
        entries = beside.commit(shard_info) if beside is not None else []
        self.rejects.sync()  # the manifest never counts rejects not on disk
        with self.sink.lock:
            self.info.shards.append(shard_info)
            for group, entry in entries:
                group.shards.append(entry)
            if self.seen is not None:
                self.info.picture_sizes = sizes
            if rejected:
                self.info.rejected += rejected
                self.info.rejects_file = self.rejects.name
            previous = self.info.unfinished
            # Records handled up to the commit (not the one that opened the next shard).
            self.info.unfinished = UnfinishedWrite(
                consumed=handled,
                started=previous.started if previous else now(),
                shards_before=previous.shards_before if previous else None,
            )
            self.sink.save()

    def settle_commit(self) -> None:
        """Wait until the shard being completed, if any, is listed (re-raising its error)."""
        committing, self.committing = self.committing, None
        if committing is not None:
            committing.result()

    def finish(self) -> None:
        if self.shard is not None:
            self.commit_shard()
        self.settle_commit()
        self.rejects.sync()
        with self.sink.lock:
            if self.rejected_since_commit:
                self.info.rejected += self.rejected_since_commit
                self.info.rejects_file = self.rejects.name
                self.rejected_since_commit = 0
            self.info.unfinished = None
        self.rejects.close()

    def abort(self) -> None:
        if self.shard is not None:
            self.shard.discard()
            self.shard = None
        if self.group_shards is not None:
            self.group_shards.discard()
            self.group_shards = None
        # A shard completed before the error stays listed, as if committed at once; if it
        # failed too, that failure is not the error being reported.
        with contextlib.suppress(Exception):
            self.settle_commit()
        # Rejects after the last complete shard are not counted: cut them from the file.
        with self.sink.lock:
            self.rejects.cut_to(self.info.rejected)
        self.rejected_since_commit = 0
        self.batch_meta, self.batch_items = [], []
