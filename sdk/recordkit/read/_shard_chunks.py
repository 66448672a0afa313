"""A local, uncompressed shard file's records read a chunk at a time, their framing
checked chunk by chunk: what the numpy reader's parsed shards hold of a file
(:mod:`recordkit.read._parsed_shard`).

A :class:`ChunkedRecords` reads the file sequentially into one buffer of
:data:`CHUNK_BYTES` (private anonymous memory, advised to be backed by huge pages), used
again for every chunk: it holds the records read and not yet taken, and the start of the
record that the chunk's end cut (moved to the buffer's front before the next read, so
that a record straddling two chunks is whole in the next). A record larger than the
chunk is read whole into a buffer of its own size, and the next chunk goes back to one
of :data:`CHUNK_BYTES`. A reader thus holds at most about one chunk and one record of a
file, where reading the file whole held all of it (up to the writer's 128 MiB a shard).

Each record made whole by a read has its framing checked before it is taken (every
length leads to the next record, every length and data CRC right:
:func:`~recordkit.format._framing_check.framing_matches`). A record whose framing is not
sound, a length that declares more bytes than the file holds, or a file that ends (or
was cut short while it was read) inside a record make the reader :attr:`~ChunkedRecords.sound`
no more: its records stop there, and the caller reads the rest of the file record by
record, whose error names the record.

Read, never mapped: a mapped file cut short while it is read (rewritten in place by
another process, changed on a network filesystem) kills the process with ``SIGBUS``,
which nothing in Python can catch.
"""

from __future__ import annotations

import contextlib
import io
import mmap

import numpy as np

from recordkit.format._framing_check import framing_matches
from recordkit.format._tfrecord import CRC_FIELD, FRAMING_BYTES, HEADER_BYTES, LENGTH_FIELD, masked_crc
from recordkit.storage._ranges import read_into

__all__ = ["CHUNK_BYTES", "ChunkedRecords"]

#: Bytes of a shard file a parsed read holds at a time (a record larger than this is held
#: whole, alone).
CHUNK_BYTES = 8 << 20


class ChunkedRecords:
    """The records of the uncompressed TFRecord file ``raw`` (open at its start, ``size``
    bytes when it was opened), read ``chunk`` bytes at a time (see the module docs).
    With ``frame``, the framed size of its first record when the file's size is a
    multiple of it: its records are taken to be of that size, if their framing checks
    so, without a walk of their headers (a field group's).

    :meth:`fill` reads on; :attr:`available` records, checked, can then be taken with
    :meth:`take`; :attr:`finished` once every record of the file has been taken."""

    def __init__(
        self,
        raw: io.RawIOBase | io.BufferedIOBase,
        size: int,
        chunk: int = CHUNK_BYTES,
        *,
        frame: int | None = None,
    ) -> None:
        self._raw = raw
        self._frame = frame  # the records' one framed size, as far as the file's size tells
        self._size = size
        self._chunk = max(chunk, FRAMING_BYTES)
        #: The buffer the records are read into (None until the first read).
        self.buffer: mmap.mmap | None = None
        #: The file's offset of the buffer's first byte.
        self.base = 0
        self._filled = 0  # the buffer's bytes read from the file
        self._offsets = np.zeros(1, dtype=np.int64)  # checked records' bounds in the buffer
        self._cursor = 0  # the first of them not taken
        self._eof = size == 0
        #: False once the file's framing failed (or the file ended inside a record): no
        #: more records are given.
        self.sound = True

    @property
    def available(self) -> int:
        """Records read and checked, not yet taken."""
        return len(self._offsets) - 1 - self._cursor

    @property
    def finished(self) -> bool:
        """Whether every record of the file has been taken (the file read to its end)."""
        return self.sound and self._eof and self.available == 0

    @property
    def held(self) -> int:
        """Bytes of memory this reader holds (its buffer)."""
        return 0 if self.buffer is None else len(self.buffer)

    def take(self, count: int) -> np.ndarray:
        """The bounds of the next ``count`` records in :attr:`buffer` (``count + 1``
        offsets: each record's frame start, then the last one's end), taken. They stay
        valid until the next :meth:`fill`."""
        first = self._cursor
        self._cursor += count
        return self._offsets[first : first + count + 1]

    def fill(self) -> None:
        """Read on: drop the records taken, read the file until the buffer is full (one
        chunk, or the record after those held when it is larger) or the file ends, and
        check the framing of the records made whole."""
        if not self.sound or self._eof:
            return
        self._drop_taken()
        while self.sound and not self._eof:
            capacity = self._capacity()
            if capacity is None:
                return
            self._read(capacity)
            if not self.sound:
                return
            before = self.available
            self._walk()
            if self.available > before or not self.sound:
                break
        if self.sound and self._eof and int(self._offsets[-1]) != self._filled:
            self.sound = False  # the file ends inside a record (cut short)

    def close(self) -> None:
        """Let go of the buffer (a numpy view of it still alive in a traceback keeps it
        until that view goes, so that the error raised is the read's, not mmap's
        ``BufferError``)."""
        if self.buffer is not None:
            with contextlib.suppress(BufferError):
                self.buffer.close()
            self.buffer = None

    def _drop_taken(self) -> None:
        """Move the records not taken, and the start of the record after them, to the
        buffer's front (a buffer grown for a large record is replaced by one chunk's
        when what is kept fits in it)."""
        buffer = self.buffer
        if buffer is None:
            return
        start = int(self._offsets[self._cursor])
        kept = self._filled - start
        if kept and start:
            if len(buffer) > self._chunk and kept <= self._chunk:
                fresh = _anonymous(self._chunk)
                fresh[:kept] = buffer[start : self._filled]
                self.close()
                self.buffer = fresh
            else:
                buffer.move(0, start, kept)
        elif not kept and len(buffer) > self._chunk:
            self.close()  # a large record's buffer: the next read allocates one chunk's
        self.base += start
        self._filled = kept
        self._offsets = self._offsets[self._cursor :] - start
        self._cursor = 0

    def _capacity(self) -> int | None:
        """The buffer's size for the next read: one chunk (at most the file's bytes left
        past the buffer's start), or the bytes up to the end of the record after those
        held when that record is larger; None when that record's length cannot be
        trusted (a wrong length CRC, or more bytes than the file holds: not sound)."""
        left = self._size - self.base
        capacity = min(self._chunk, left)
        tail = int(self._offsets[-1])
        buffer = self.buffer
        if buffer is not None and self._filled - tail < HEADER_BYTES:  # its header cut too
            capacity = max(capacity, min(tail + HEADER_BYTES, left))
        elif buffer is not None:
            length_bytes = buffer[tail : tail + LENGTH_FIELD.size]
            (stored,) = CRC_FIELD.unpack_from(buffer, tail + LENGTH_FIELD.size)
            end = tail + LENGTH_FIELD.unpack(length_bytes)[0] + FRAMING_BYTES
            if masked_crc(length_bytes) != stored or end > left:
                self.sound = False
                return None
            capacity = max(capacity, end)
        if buffer is None or len(buffer) < capacity:
            grown = _anonymous(capacity)
            if buffer is not None:
                grown[: self._filled] = buffer[: self._filled]
                self.close()
            self.buffer = grown
        return capacity

    def _read(self, capacity: int) -> None:
        """Read the file into the buffer up to ``capacity`` bytes (or the file's end as
        it was opened); a read that stops short is the file's end (cut short)."""
        assert self.buffer is not None
        wanted = min(capacity, self._size - self.base) - self._filled
        if wanted <= 0:  # no room to read on (never expected): the record-by-record read takes over
            self.sound = False
            return
        got = read_into(self._raw, memoryview(self.buffer)[self._filled : self._filled + wanted])
        self._filled += got
        if got < wanted or self.base + self._filled >= self._size:
            self._eof = True

    def _walk(self) -> None:
        """Find the records made whole by the last read (after those checked) and check
        their framing."""
        buffer = self.buffer
        assert buffer is not None
        tail, filled = int(self._offsets[-1]), self._filled
        if filled - tail < HEADER_BYTES:
            return
        frame = self._frame
        count = 0 if frame is None else (filled - tail) // frame
        if frame is not None and count > 1:  # records of one size: no walk, if they check
            bounds = np.arange(tail, tail + (count + 1) * frame, frame, dtype=np.int64)
            if framing_matches(buffer, bounds, whole=False):
                self._offsets = np.concatenate([self._offsets, bounds[1:]])
                return
        walked = []
        position = tail
        unpack = LENGTH_FIELD.unpack_from
        while position + HEADER_BYTES <= filled:
            end = position + unpack(buffer, position)[0] + FRAMING_BYTES
            if end > filled:
                break
            walked.append(end)
            position = end
        if not walked:
            return
        bounds = np.asarray([tail, *walked], dtype=np.int64)
        if not framing_matches(buffer, bounds, whole=False):
            self.sound = False
            return
        self._offsets = np.concatenate([self._offsets, bounds[1:]])


def _anonymous(size: int) -> mmap.mmap:
    """``size`` bytes of private anonymous memory, advised to be backed by huge pages where
    the system has them (``MADV_HUGEPAGE``: 512 times fewer page faults; as numpy does for
    a large array). It slices to ``bytes``, which the CRC and the parse take."""
    if not hasattr(mmap, "MAP_PRIVATE"):  # Windows: anonymous memory backed by the paging file
        return mmap.mmap(-1, size)
    buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    with contextlib.suppress(AttributeError, OSError):  # no madvise, or no huge pages
        buffer.madvise(mmap.MADV_HUGEPAGE)
    return buffer
