"""A split's shards as columns in a file of their own: the shard table.

A split of many shards is listed in ``dataset.json`` by a reference to its shard table
(``"shard_table": {"file": ..., "sha256": ..., "shards": N}``) instead of one JSON
object per shard: at a million shards those objects take seconds to parse and hundreds
of megabytes to hold, where the table's columns are read with no parse at all. The
table's name holds the start of its sha256, so a table is never overwritten: a new
listing is a new file, and ``dataset.json``, written last, is still the commit.

The file (little endian; nothing a reader allocates comes from a count before the
bytes that hold it are there)::

    8 bytes       magic b"RKSHARDS"
    uint64        n, the number of shards
    uint64        the length of the names block
    uint64[n]     records of each shard
    uint64[n]     bytes of each shard
    uint8[n]      1 when the shard has a record index (its file: <shard file>.index)
    32 bytes [n]  sha256 of each shard
    32 bytes [n]  sha256 of each shard's index (zeros when it has none)
    names block   each shard's file name, then b"\\n"

:class:`ShardTable` is the table in memory: a sequence of
:class:`~recordkit.dataset._manifest.ShardInfo` whose entries are made when asked for,
with the columns (``records``, ``sizes``) at hand for sums and lookups.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from recordkit.dataset._shard_info import ShardIndex, ShardInfo
from recordkit.errors import ManifestError

__all__ = ["TABLE_MAGIC", "ShardTable", "table_file_name", "total_records"]

TABLE_MAGIC = b"RKSHARDS"
_HEADER = struct.Struct("<8sQQ")
#: Bytes of one shard in the fixed-size columns.
_ROW = 8 + 8 + 1 + 32 + 32
_INDEX_SUFFIX = ".index"
_MAX_NAME = 1024
_MAX_PARTS = 8
#: Bytes a name may hold: letters, digits, "_", ".", "-" and "/" (see dataset/_paths.py),
#: and the newline that ends it.
_ALLOWED_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-/\n"


def table_file_name(split: str, sha256: str) -> str:
    """The file name of ``split``'s shard table whose bytes have ``sha256``."""
    return f"{split}.shards.{sha256[:16]}"


class ShardTable(Sequence[ShardInfo]):
    """A split's shards, held as columns; entries appended after loading are kept as they
    come (the next save writes them into a new table)."""

    def __init__(
        self,
        names: bytes,
        records: np.ndarray,
        sizes: np.ndarray,
        indexed: np.ndarray,
        sha256: bytes | memoryview,
        index_sha256: bytes | memoryview,
        ends: np.ndarray | None = None,
    ) -> None:
        self._names = names
        ends = _newlines(names) if ends is None else ends
        self._starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64) if len(ends) else ends
        self._ends = ends
        self.records = records
        self.sizes = sizes
        self._indexed = indexed
        self._sha256 = sha256
        self._index_sha256 = index_sha256
        self._tail: list[ShardInfo] = []
        #: The table's bytes and their sha256 (hex), made once: without a tail the table
        #: never changes, so a manifest saved many times hashes it once (or never, when
        #: it was loaded: the bytes it was read from and their checked sha256).
        self._bytes: bytes | None = None
        self._digest: str | None = None

    # -- the sequence ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.records) + len(self._tail)

    @overload
    def __getitem__(self, i: int) -> ShardInfo: ...

    @overload
    def __getitem__(self, i: slice) -> list[ShardInfo]: ...

    def __getitem__(self, i: int | slice) -> ShardInfo | list[ShardInfo]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self.records)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"shard {i} is out of range: the split has {len(self)} shards")
        if i >= n:
            return self._tail[i - n]
        return self._entry(i)

    def __iter__(self) -> Iterator[ShardInfo]:
        for i in range(len(self.records)):
            yield self._entry(i)
        yield from self._tail

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ShardTable, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def append(self, info: ShardInfo) -> None:
        self._tail.append(info)

    def file(self, i: int) -> str:
        """Shard ``i``'s file name, without making its entry."""
        n = len(self.records)
        if i >= n:
            return self._tail[i - n].file
        return bytes(self._names[int(self._starts[i]) : int(self._ends[i])]).decode("ascii")

    def record_counts(self) -> np.ndarray:
        """Each shard's record count, as int64."""
        tail = np.asarray([s.records for s in self._tail], dtype=np.int64)
        return np.concatenate([self.records, tail]) if len(tail) else self.records

    @property
    def total_records(self) -> int:
        return int(self.records.sum()) + sum(s.records for s in self._tail)

    @property
    def total_bytes(self) -> int:
        return int(self.sizes.sum()) + sum(s.bytes for s in self._tail)

    @property
    def largest_bytes(self) -> int:
        """The bytes of the largest shard (0 for none), from the column: no entry made."""
        listed = int(self.sizes.max()) if len(self.sizes) else 0
        return max([listed, *(s.bytes for s in self._tail)])

    def _entry(self, i: int) -> ShardInfo:
        name = self.file(i)
        index = None
        if self._indexed[i]:
            digest = bytes(self._index_sha256[32 * i : 32 * i + 32]).hex()
            index = ShardIndex.model_construct(file=name + _INDEX_SUFFIX, sha256=digest)
        return ShardInfo.model_construct(
            file=name,
            records=int(self.records[i]),
            bytes=int(self.sizes[i]),
            sha256=bytes(self._sha256[32 * i : 32 * i + 32]).hex(),
            index=index,
        )

    # -- to and from bytes -------------------------------------------------------------------

    @classmethod
    def from_entries(cls, entries: Iterable[ShardInfo]) -> ShardTable | None:
        """The table of ``entries``; None when one cannot be held in a table (no sha256, or
        an index not named ``<file>.index``): such a split stays listed in JSON."""
        if isinstance(entries, ShardTable):  # as loaded (and appended to): its columns
            return entries._merged() if entries._tail else entries
        listed = list(entries)
        names: list[bytes] = []
        sha256: list[bytes] = []
        index_sha256: list[bytes] = []
        indexed: list[int] = []
        for info in listed:
            if not info.sha256 or (info.index is not None and info.index.file != info.file + _INDEX_SUFFIX):
                return None
            names.append(info.file.encode("ascii") + b"\n")
            sha256.append(bytes.fromhex(info.sha256))
            indexed.append(info.index is not None)
            index_sha256.append(bytes.fromhex(info.index.sha256) if info.index is not None else bytes(32))
        return cls(
            b"".join(names),
            np.asarray([s.records for s in listed], dtype="<u8"),
            np.asarray([s.bytes for s in listed], dtype="<u8"),
            np.asarray(indexed, dtype=np.uint8),
            b"".join(sha256),
            b"".join(index_sha256),
        )

    def _merged(self) -> ShardTable | None:
        """The table of every entry, the appended ones joined to the columns (None: an
        appended entry a table cannot hold)."""
        tail = ShardTable.from_entries(self._tail)
        if tail is None:
            return None
        return ShardTable(
            bytes(self._names) + tail._names,
            np.concatenate([self.records, tail.records]),
            np.concatenate([self.sizes, tail.sizes]),
            np.concatenate([self._indexed, tail._indexed]),
            bytes(self._sha256) + bytes(tail._sha256),
            bytes(self._index_sha256) + bytes(tail._index_sha256),
        )

    def to_bytes(self) -> bytes:
        if self._tail:
            whole = self._merged()
            assert whole is not None  # to_bytes is called on tables from_entries made
            return whole.to_bytes()
        if self._bytes is None:
            self._bytes = self._columns_bytes()
        return self._bytes

    def _columns_bytes(self) -> bytes:
        return b"".join(
            [
                _HEADER.pack(TABLE_MAGIC, len(self.records), len(self._names)),
                np.asarray(self.records, dtype="<u8").tobytes(),
                np.asarray(self.sizes, dtype="<u8").tobytes(),
                np.asarray(self._indexed, dtype=np.uint8).tobytes(),
                bytes(self._sha256),
                bytes(self._index_sha256),
                self._names,
            ]
        )

    @classmethod
    def from_bytes(cls, data: bytes, *, file: str, shards: int, sha256: str | None = None) -> ShardTable:
        """The table in ``data`` (read from ``file``, which the manifest says lists
        ``shards`` shards; ``sha256``: the digest of ``data``, when the caller checked
        it); a ManifestError naming the file and what is wrong."""

        def bad(why: str) -> ManifestError:
            return ManifestError(f"shard table {file}: {why}", file=file)

        if len(data) < _HEADER.size:
            raise bad(f"holds {len(data)} bytes, less than its {_HEADER.size}-byte header")
        magic, count, names_length = _HEADER.unpack_from(data)
        if magic != TABLE_MAGIC:
            raise bad(f"does not start with {TABLE_MAGIC!r}: not a shard table")
        if count != shards:
            raise bad(f"lists {count} shards, the manifest says {shards}")
        expected = _HEADER.size + _ROW * count + names_length
        if len(data) != expected:
            raise bad(f"holds {len(data)} bytes; its header says {expected}")
        at = _HEADER.size

        def column(size: int, dtype: Any) -> Any:
            nonlocal at
            part = np.frombuffer(data, dtype=dtype, count=size // np.dtype(dtype).itemsize, offset=at)
            at += size
            return part

        records = column(8 * count, "<u8")
        sizes = column(8 * count, "<u8")
        for what, values in (("record count", records), ("byte size", sizes)):
            if count and int(values.max()) >= 1 << 63:
                raise bad(f"shard {int(values.argmax())} has a {what} of {int(values.max())}, too large")
        indexed = column(count, np.uint8)
        if count and int(indexed.max()) > 1:
            raise bad(f"shard {int(indexed.argmax())} has index flag {int(indexed.max())}, not 0 or 1")
        view = memoryview(data)  # the columns stay in ``data``: no copy of them
        digest = sha256
        shard_sha256 = view[at : at + 32 * count]
        at += 32 * count
        index_sha256 = view[at : at + 32 * count]
        at += 32 * count
        names = data[at:]  # one copy (a quarter of the table): bytes searches need bytes
        ends = _newlines(names)
        _check_names(names, ends, count, bad)
        records, sizes = records.astype(np.int64), sizes.astype(np.int64)
        table = cls(names, records, sizes, indexed, shard_sha256, index_sha256, ends)
        table._bytes, table._digest = data, digest
        return table

    def __deepcopy__(self, memo: dict[int, Any]) -> ShardTable:
        # Its columns are never changed in place (appends go to the tail): shared, not copied.
        copy = ShardTable(
            self._names, self.records, self.sizes, self._indexed, self._sha256, self._index_sha256, self._ends
        )
        copy._tail = [info.model_copy(deep=True) for info in self._tail]
        copy._bytes, copy._digest = self._bytes, self._digest
        return copy

    def sha256(self) -> str:
        """The sha256 (hex) of :meth:`to_bytes`."""
        if self._tail:
            return hashlib.sha256(self.to_bytes()).hexdigest()
        if self._digest is None:
            self._digest = hashlib.sha256(self.to_bytes()).hexdigest()
        return self._digest


def _check_names(names: bytes, ends: np.ndarray, count: int, bad: Any) -> None:
    """Every name a plain relative path inside the dataset (the rules of
    :func:`~recordkit.dataset._paths.check_member_name`), checked on the whole block with
    byte searches (no copy of it; ``ends``: where each name's newline is)."""
    if len(ends) != count or (count and ends[-1] != len(names) - 1):
        raise bad(f"its names block holds {len(ends)} names, not {count}")
    stray = names.translate(None, _ALLOWED_BYTES)
    if stray:
        shard = names.count(b"\n", 0, names.find(stray[:1]))
        raise bad(f"the name of shard {shard} holds byte {stray[0]:#04x}; names are plain")
    for wrong in (b"\n.", b"/.", b"//", b"\n/", b"/\n", b"\n\n"):
        where = names.find(wrong)
        if where >= 0 or names.startswith(wrong[1:]):
            shard = names.count(b"\n", 0, where + 1) if where >= 0 else 0
            raise bad(
                f"the name of shard {shard} has an empty part or one starting with '.'; "
                "it must be a plain relative path inside the dataset folder"
            )
    lengths = np.diff(ends, prepend=-1) - 1
    if count and int(lengths.max()) > _MAX_NAME:
        raise bad(f"the name of shard {int(lengths.argmax())} is longer than {_MAX_NAME} characters")
    if names.count(b"/") >= _MAX_PARTS:  # else no name can be that deep
        slashes = np.flatnonzero(np.frombuffer(names, dtype=np.uint8) == ord("/"))
        parts = np.bincount(np.searchsorted(ends, slashes), minlength=count) + 1
        if int(parts.max()) > _MAX_PARTS:
            shard = int(parts.argmax())
            raise bad(f"the name of shard {shard} is nested more than {_MAX_PARTS} folders deep")


def _newlines(names: bytes) -> np.ndarray:
    """Where each newline of ``names`` is."""
    return np.flatnonzero(np.frombuffer(names, dtype=np.uint8) == ord("\n"))


def total_records(shards: Sequence[ShardInfo]) -> int:
    """The records of ``shards`` (from the columns when they are a table)."""
    return shards.total_records if isinstance(shards, ShardTable) else sum(s.records for s in shards)
