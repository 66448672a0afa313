"""The shards a split expression reads, listed from the manifest.

A reader names a split (``"train"``) or an expression in TFDS's syntax
(``"train[:10%]"``, ``"train+validation"``; :mod:`recordkit.dataset._slices`).
:func:`split_shards` turns it into the :class:`Shard`\\ s to read, from the manifest
alone: each listed file as a Location inside the dataset's folder
(:func:`~recordkit.dataset._paths.member`), with its record count, size and sha256, and
for a slice only the shards it touches, each with the records to skip and take. Nothing
is read or listed on storage here; the readers check the shards before they read them.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
from collections.abc import Sequence
from typing import overload

from recordkit.dataset._manifest import Manifest, ShardInfo
from recordkit.dataset._paths import member
from recordkit.dataset._picture_sizes import PictureSizes, common_sizes
from recordkit.dataset._shard_table import total_records
from recordkit.dataset._slices import SplitRange, is_plain_split, resolve_split, shard_slices
from recordkit.errors import ManifestError
from recordkit.storage import Location

__all__ = [
    "ListedShards",
    "Shard",
    "ShardPiece",
    "SlicedShards",
    "selected_records",
    "split_names",
    "split_picture_sizes",
    "split_shards",
]

logger = logging.getLogger("recordkit")


@dataclasses.dataclass(frozen=True)
class Shard:
    """One TFRecord file to read (local or remote alike), with what the manifest says
    about it (None: unknown)."""

    path: Location
    name: str
    records: int | None = None
    bytes: int | None = None
    sha256: str | None = None
    #: A slice of the split (``train[:10%]``): records to read past, then to read (None:
    #: all the rest) (:mod:`recordkit.dataset._slices`).
    skip: int = 0
    take: int | None = None
    #: Files aligned with this one (a field group's shards, :mod:`recordkit.dataset._split_groups`):
    #: each record is this file's record followed by theirs, concatenated.
    joined: tuple[Shard, ...] = ()

    def __post_init__(self) -> None:
        # A remote shard knows its listed sha256: with a cache, it is read from a checked local copy.
        if self.sha256 is not None:
            object.__setattr__(self, "path", self.path.with_sha256(self.sha256))

    @property
    def files(self) -> tuple[Shard, ...]:
        """This file and those joined to it, in the order their bytes are joined."""
        return (self, *self.joined)

    @property
    def label(self) -> str:
        """The shard's name, with the files joined to it (what errors name)."""
        if not self.joined:
            return self.name
        return f"{self.name} (joined with {', '.join(j.name for j in self.joined)})"

    @property
    def sliced(self) -> bool:
        """Whether only part of the shard is read."""
        return self.skip > 0 or self.take is not None

    @property
    def selected(self) -> int | None:
        """How many of the shard's records are read (None: unknown)."""
        if self.take is not None:
            return self.take
        return None if self.records is None else max(self.records - self.skip, 0)


#: Shards a :class:`LazyShards` keeps once made (random reads come back to them).
_MADE_KEPT = 4096


@dataclasses.dataclass(frozen=True)
class ShardPiece:
    """A listed shard that a split expression reads, with the records to read past and
    to read (None: all the rest), before its :class:`Shard` is made."""

    info: ShardInfo
    skip: int = 0
    take: int | None = None


class LazyShards(Sequence[Shard]):
    """Shards made when they are asked for (``_make``), so opening a split of a million
    shards makes none until they are read; the ones made are kept, at most a few
    thousand at a time, so a pass over every shard holds few. Subclasses say how many
    there are (``__len__``, abstract in :class:`Sequence`), how the ``i``-th is made and
    what the manifest lists for it (``piece``)."""

    def __init__(self) -> None:
        self._made: dict[int, Shard] = {}

    @abc.abstractmethod
    def _make(self, i: int) -> Shard:
        """The ``i``-th shard, made (its path resolved and checked)."""

    @abc.abstractmethod
    def piece(self, i: int) -> ShardPiece:
        """The ``i``-th shard's manifest entry and the records read of it, without making it."""

    def place(self, i: int) -> int | None:
        """The ``i``-th shard's position in its split's listing, when known without a
        search (None: look its file up in the manifest)."""
        return None

    @property
    def known_records(self) -> int | None:
        """The records of all the shards, when the manifest's columns give them without
        making a shard (None: ask each shard)."""
        return None

    @overload
    def __getitem__(self, i: int) -> Shard: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Shard, ...]: ...

    def __getitem__(self, i: int | slice) -> Shard | tuple[Shard, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        made = self._made.get(i)
        if made is None:
            if len(self._made) >= _MADE_KEPT:
                self._made.clear()
            made = self._made[i] = self._make(i)
        return made


class ListedShards(LazyShards):
    """A whole split's shards as its manifest lists them: each :class:`Shard` (its path
    checked to stay inside the dataset) made when it is asked for."""

    def __init__(self, root: Location, listed: Sequence[ShardInfo]) -> None:
        super().__init__()
        self.root = root
        self.listed = listed

    def __len__(self) -> int:
        return len(self.listed)

    def _make(self, i: int) -> Shard:
        return _shard(self.root, self.listed[i])

    def piece(self, i: int) -> ShardPiece:
        return ShardPiece(self.listed[i])

    def place(self, i: int) -> int:
        return i  # a whole split: its place is its index

    @property
    def total_records(self) -> int:
        return total_records(self.listed)

    @property
    def known_records(self) -> int | None:
        return self.total_records


class SlicedShards(LazyShards):
    """The shards of a split expression (``train[:10%]``, ``train+validation``, ``all``),
    each :class:`Shard` made when it is asked for, as :class:`ListedShards` makes a whole
    split's: opening makes none, and a reader whose fields all live in field groups never
    makes (nor touches on disk) the split's own shards."""

    def __init__(self, root: Location, pieces: Sequence[ShardPiece]) -> None:
        super().__init__()
        self.root = root
        self.pieces = pieces

    def __len__(self) -> int:
        return len(self.pieces)

    def _make(self, i: int) -> Shard:
        piece = self.pieces[i]
        return _shard(self.root, piece.info, piece.skip, piece.take)

    def piece(self, i: int) -> ShardPiece:
        return self.pieces[i]


def selected_records(shards: Sequence[Shard]) -> int | None:
    """How many records ``shards`` read (None: unknown), from the manifest's columns
    when it lists them, without making every shard."""
    if isinstance(shards, LazyShards) and shards.known_records is not None:
        return shards.known_records
    counts = [shard.selected for shard in shards]
    return None if any(count is None for count in counts) else sum(c for c in counts if c is not None)


def split_shards(root: Location, manifest: Manifest, split: str) -> LazyShards:
    """The shards ``split`` (a name, or a TFDS-style expression) reads in the dataset at
    ``root``; for a slice only those it touches, each with the records to skip and take.

    An unknown split or a slice that cannot be read is a ManifestError naming it. A split
    whose write (or append) did not finish is read as far as its complete shards go, with
    a warning saying so."""
    if is_plain_split(split):
        _warn_if_unfinished(root, manifest, split)
        return ListedShards(root, manifest.split(split).readable_shards)
    ranges = _ranges(manifest, split)
    for name in dict.fromkeys(part.split for part in ranges):
        _warn_if_unfinished(root, manifest, name)
    pieces: list[ShardPiece] = []
    for part in ranges:
        listed = manifest.split(part.split).readable_shards
        for piece in shard_slices(part.start, part.stop, [s.records for s in listed]):
            pieces.append(ShardPiece(listed[piece.index], piece.skip, piece.take))
    return SlicedShards(root, pieces)


def split_names(manifest: Manifest, split: str) -> list[str]:
    """The splits that ``split`` (a name, or a TFDS-style expression) reads, in order."""
    if is_plain_split(split):
        return [split]
    return list(dict.fromkeys(part.split for part in _ranges(manifest, split)))


def split_picture_sizes(manifest: Manifest, split: str) -> dict[str, PictureSizes]:
    """The sizes of the pictures ``split`` (a name or an expression) reads, by field:
    those of the whole splits it names (a slice's pictures are among them), a field's only
    when each of them lists it (:mod:`recordkit.dataset._picture_sizes`)."""
    return common_sizes(manifest.split(name).picture_sizes for name in split_names(manifest, split))


def _shard(root: Location, info: ShardInfo, skip: int = 0, take: int | None = None) -> Shard:
    path = member(root, info.file)
    return Shard(path, info.file, info.records, info.bytes, info.sha256 or None, skip, take)


def _ranges(manifest: Manifest, split: str) -> list[SplitRange]:
    shard_counts = {name: [s.records for s in info.readable_shards] for name, info in manifest.splits.items()}
    counts = {name: sum(records) for name, records in shard_counts.items()}
    try:
        return resolve_split(split, counts, shard_counts)
    except ValueError as exc:
        raise ManifestError(str(exc)) from None


def _warn_if_unfinished(root: Location, manifest: Manifest, name: str) -> None:
    info = manifest.split(name)
    if info.unfinished is not None:
        logger.warning(
            "recordkit: split %r of %s has an unfinished %s; reading its %d complete shards%s",
            name,
            root,
            "write" if info.unfinished.shards_before is None else "append",
            len(info.readable_shards),
            "" if info.unfinished.shards_before is None else " from before the append",
        )
