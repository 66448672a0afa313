"""The canonical order of an epoch, its division between readers, and elastic resume.

Pure numpy: nothing here knows of PyTorch, Grain or TensorFlow, so every reader shares
one definition of what an epoch is.

* **The order.** An epoch reads the items of a dataset (a split's records, or a
  mixture's samples) in one order, a function of the seed, the epoch and the dataset
  alone (:func:`epoch_order`): the shards shuffled, then the records shuffled within
  windows of ``window`` consecutive records (a window spans one shard or a few, so a
  reader's reads stay close together).
* **The division.** ``world_size`` ranks with ``num_workers`` workers each are
  ``readers = world_size * num_workers`` readers (:class:`Division`). The order is cut
  into blocks of ``block`` items; block ``j`` goes to reader ``j % readers``, and worker
  ``w`` of rank ``r`` is reader ``w * world_size + r``. A DataLoader takes batches from
  its workers in turn, so when ``block`` is the batch size, the ``i``-th batches of all
  ranks together are blocks ``i * world_size`` to ``(i + 1) * world_size - 1``: the global
  batches follow the canonical order whatever the number of workers.
* **Progress.** What of an epoch has been read is a set of positions in its order
  (:class:`Progress`): a prefix, and the few positions beyond it that some readers
  reached first. It is the same whoever read it, so a run resumes with any division:
  the positions not yet read, in the canonical order, are divided afresh.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

__all__ = [
    "Division",
    "EpochItems",
    "Progress",
    "SplitOrder",
    "epoch_order",
    "epoch_order_from",
    "fingerprint",
    "located_pairs",
    "loader_taken",
    "pairs_of_codes",
    "slice_windows",
]


def epoch_order(
    counts: Sequence[int] | np.ndarray, *, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int
) -> np.ndarray:
    """The global indices (records numbered across the shards in manifest order) of the
    records of shards of ``counts`` records each, in epoch ``epoch``'s canonical order.

    Without ``shuffle``: manifest order. With it: the shards in an order drawn from
    ``(seed, epoch)``, then each run of ``window`` consecutive records shuffled."""
    return epoch_order_from(counts, 0, seed=seed, epoch=epoch, shuffle=shuffle, window=window)


def epoch_order_from(
    counts: Sequence[int] | np.ndarray,
    begin: int,
    *,
    seed: int | Sequence[int],
    epoch: int,
    shuffle: bool,
    window: int,
    stop: int | None = None,
) -> np.ndarray:
    """Positions ``begin`` to ``stop - 1`` (None: the end) of :func:`epoch_order`
    (``epoch_order(...)[begin:stop]``), without laying out the records before or after
    them: what a reader resumed part way through an epoch reads from. The windows before
    the one ``begin`` lies in are still shuffled (the windows draw from one generator in
    turn, so each window's draws follow from those before it), in a scratch array of a
    window's size: their draws depend on their length alone, not on what they shuffle.
    The windows after the one ``stop - 1`` lies in are not drawn at all."""
    sizes = np.asarray(counts, dtype=np.int64)
    if not shuffle:
        total = int(sizes.sum())
        end = total if stop is None else min(max(int(stop), 0), total)
        return np.arange(min(max(int(begin), 0), end), end, dtype=np.int64)
    firsts = np.cumsum(sizes) - sizes
    return _keys_from(firsts, sizes, begin, stop, seed=seed, epoch=epoch, shuffle=shuffle, window=window)


def _keys_from(
    firsts: np.ndarray,
    sizes: np.ndarray,
    begin: int,
    stop: int | None,
    *,
    seed: int | Sequence[int],
    epoch: int,
    shuffle: bool,
    window: int,
) -> np.ndarray:
    """Positions ``begin`` to ``stop - 1`` (None: the end) of an epoch's order of shards of
    ``sizes`` records, each record given by a key: its shard's ``firsts`` plus its number
    in the shard (a global index when ``firsts`` are the shards' first records; a code
    (:func:`pairs_of_codes`) when they are the shards' numbers shifted). The draws do not
    depend on the keys, so every kind of key comes in the same order."""
    total = int(sizes.sum())
    end = total if stop is None else min(max(int(stop), 0), total)
    begin = min(max(int(begin), 0), end)
    if not shuffle:
        return _runs_in_turn(firsts, sizes, begin, end)
    seeds = [seed] if isinstance(seed, int) else list(seed)
    rng = np.random.default_rng([*seeds, epoch])
    shards = rng.permutation(len(sizes))
    # Laid out from the start of the window ``begin`` lies in to the end of the window
    # ``end - 1`` lies in: whole windows, but the epoch's last.
    first = begin - begin % window if window > 1 else begin
    last = min(-(-end // window) * window, total) if window > 1 else end
    order = _runs_in_turn(firsts[shards], sizes[shards], first, last)
    if window > 1:
        _shuffle_windows(np.random.default_rng([*seeds, epoch, 1]), order, first // window, window)
    return order[begin - first : end - first]


def _shuffle_windows(mix: np.random.Generator, order: np.ndarray, skipped: int, window: int) -> None:
    """Shuffle each run of ``window`` items of ``order`` in place, in turn, after the
    ``skipped`` (full) windows before it, which only move ``mix`` on.

    Each window is shuffled where it lies: ``shuffle`` draws what ``permutation`` of the
    window's copy draws (``permutation`` is a copy, then ``shuffle``), and ``permuted``
    along the rows of the full windows laid out as a matrix draws what ``shuffle`` of each
    row in turn draws (one call, not one a window: each call's own cost was about a tenth
    of a window's). The skipped windows are the rows of a matrix whose rows all lie on one
    scratch window (their draws depend on their length alone, not on what they shuffle)."""
    if skipped:
        scratch = np.empty(window, dtype=np.int64)
        rows = np.lib.stride_tricks.as_strided(scratch, (skipped, window), (0, scratch.itemsize))
        mix.permuted(rows, axis=1, out=rows)
    whole = len(order) // window
    if whole:
        rows = order[: whole * window].reshape(whole, window)
        mix.permuted(rows, axis=1, out=rows)
    if len(order) > whole * window:
        mix.shuffle(order[whole * window :])


#: Records :func:`_runs_in_turn` numbers at a time (its temporary, a few hundred KB).
_RUN_STEP = 1 << 15


def _runs_in_turn(firsts: np.ndarray, lengths: np.ndarray, skip: int, stop: int) -> np.ndarray:
    """Items ``skip`` to ``stop - 1`` of the runs ``firsts[k], firsts[k] + 1, ...
    firsts[k] + lengths[k] - 1``, one after another: each item its run's offset (one
    ``repeat``) plus its place, added a step at a time (one array of the items' size, no
    temporary as large; a cumulative sum of steps cost 2.5 times as much)."""
    ends = np.cumsum(lengths)
    begins = ends - lengths
    # Each run's part within [skip, stop): those outside it left out, those across its
    # edges cut.
    low, high = np.clip(begins, skip, stop), np.clip(ends, skip, stop)
    kept = high > low
    firsts = firsts[kept] + (low - begins)[kept]
    lengths = (high - low)[kept]
    order = np.repeat(firsts - (np.cumsum(lengths) - lengths), lengths)
    for at in range(0, len(order), _RUN_STEP):
        order[at : at + _RUN_STEP] += np.arange(at, min(at + _RUN_STEP, len(order)), dtype=np.int64)
    return order


def slice_windows(places: slice, window: int) -> np.ndarray:
    """The window of ``window`` positions each of the positions ``places`` (a slice with a
    start, a stop and a positive step, or none) lies in, in order: each window's number
    repeated as many times as the places in it (no array of the places themselves)."""
    start, stop, step = places.start, places.stop, places.step or 1
    count = len(range(start, stop, step))
    if not count:
        return np.zeros(0, dtype=np.int64)
    first, last = start // window, (start + (count - 1) * step) // window
    # The places before each window after the first begins: ceil((its start - start) / step).
    before = -((start - np.arange(first + 1, last + 1, dtype=np.int64) * window) // step)
    counts = np.diff(before, prepend=0, append=count)
    return np.repeat(np.arange(first, last + 1, dtype=np.int64), counts)


def _span(places: slice | np.ndarray, length: int) -> tuple[int, int, slice | np.ndarray]:
    """Where an order of ``length`` positions is laid out for ``places`` (a slice, or
    positions in order): from its first to its last, and ``places`` within that run."""
    if isinstance(places, slice):
        begin, stop = min(places.start, length), min(places.stop, length)
        return begin, stop, slice(places.start - begin, places.stop - begin, places.step)
    begin = int(places[0]) if len(places) else length
    stop = int(places[-1]) + 1 if len(places) else length
    return begin, stop, places - begin


def fingerprint(parts: Sequence[object]) -> str:
    """A short digest of what identifies a dataset's order (its shards' names, record
    counts and checksums): two datasets with one fingerprint have the same epochs."""
    return hashlib.sha256(repr([str(part) for part in parts]).encode("utf-8")).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class Division:
    """``world_size`` ranks of ``num_workers`` readers each (0 workers: the rank reads in
    its own process, one reader), reading blocks of ``block`` items in turn."""

    world_size: int = 1
    num_workers: int = 1
    block: int = 1

    def __post_init__(self) -> None:
        for name, least in (("world_size", 1), ("num_workers", 0), ("block", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise ValueError(f"{name} must be an int of at least {least}, not {value!r}")

    @property
    def workers(self) -> int:
        """Readers per rank (a rank without workers is one reader)."""
        return max(self.num_workers, 1)

    @property
    def readers(self) -> int:
        return self.world_size * self.workers

    def reader(self, rank: int, worker: int) -> int:
        """The reader that worker ``worker`` of rank ``rank`` is."""
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank must be in 0..{self.world_size - 1}, not {rank}")
        if not 0 <= worker < self.workers:
            raise ValueError(f"worker must be in 0..{self.workers - 1}, not {worker}")
        return worker * self.world_size + rank

    def places(self, start: int, stop: int, reader: int) -> slice | np.ndarray:
        """The places ``start`` to ``stop - 1`` (an epoch's positions not read yet, when
        they are one run) that reader ``reader`` reads, in order (its blocks, every
        ``readers``-th from its own), without an array of them all; a slice when it is
        one (one reader, or blocks of one), so that the items are taken as a view."""
        if self.readers == 1:
            return slice(start, stop)
        if self.block == 1:
            return slice(start + reader, stop, self.readers)
        firsts = np.arange(start + reader * self.block, stop, self.readers * self.block, dtype=np.int64)
        places = (firsts[:, None] + np.arange(self.block, dtype=np.int64)).ravel()
        return places[places < stop] if len(places) and places[-1] >= stop else places

    def sizes(self, count: int) -> list[int]:
        """How many of ``count`` items each reader reads: its whole blocks (one a round of
        ``readers`` blocks, and one more for the first readers of the last, short round),
        and the epoch's last, partial block for the reader whose turn it is."""
        blocks, rest = divmod(int(count), self.block)
        rounds, extra = divmod(blocks, self.readers)
        sizes = [(rounds + (reader < extra)) * self.block for reader in range(self.readers)]
        if rest:
            sizes[extra] += rest
        return sizes


#: :meth:`Progress.unread_at` shifts at least this many places a run at a time (fewer: by
#: one search for each, whose temporary is small, where a step a run of ``also`` cost more).
_SHIFT_RUNS = 1 << 16


@dataclasses.dataclass(frozen=True)
class Progress:
    """What of an epoch of ``length`` items has been read: positions ``0 .. done - 1`` of
    its canonical order, and the positions ``also`` beyond them (sorted)."""

    length: int
    done: int = 0
    also: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.done <= self.length:
            raise ValueError(f"done must be in 0..{self.length} (the epoch's items), not {self.done}")
        if any(not self.done < p < self.length for p in self.also) or list(self.also) != sorted(
            set(self.also)
        ):
            raise ValueError(
                f"also must be distinct positions after done={self.done} and before {self.length}, in order"
            )

    @property
    def read(self) -> int:
        """How many items of the epoch have been read."""
        return self.done + len(self.also)

    def unread_at(self, places: slice | np.ndarray) -> np.ndarray:
        """The positions of the epoch's order at ``places`` (ascending) of those not yet
        read, without an array of them all: each place shifted by the
        prefix and by the ``also`` positions before it, a run of places at a time (one
        array of the places' size, no temporary as large)."""
        if isinstance(places, slice):
            places = np.arange(places.start, places.stop, places.step or 1, dtype=np.int64)
        positions: np.ndarray = np.add(places, self.done, dtype=np.int64)
        if self.also:
            # The places not read before each of ``also``: those at or after it lie beyond it.
            before = np.asarray(self.also, dtype=np.int64) - self.done - np.arange(len(self.also))
            if len(positions) < _SHIFT_RUNS:
                positions += np.searchsorted(before, places, side="right")
                return positions
            cuts = np.searchsorted(places, before, side="left").tolist()
            for shift, (low, high) in enumerate(itertools.pairwise([*cuts, len(positions)]), start=1):
                positions[low:high] += shift
        return positions

    def after(self, division: Division, taken: Sequence[int]) -> Progress:
        """This progress once reader ``r`` of ``division`` has read the first ``taken[r]``
        of its share of the positions not yet read, worked out from each reader's blocks:
        the first position a reader has not read ends the new prefix, and only the
        positions read beyond it are laid out (the new ``also``), not the epoch's."""
        left = self.length - self.read
        sizes = division.sizes(left)
        block, readers = division.block, division.readers
        took = [min(max(int(t), 0), size) for t, size in zip(taken, sizes, strict=True)]
        # The first place (among those not read before) each reader has not read.
        firsts = [
            left if t >= size else ((t // block) * readers + reader) * block + t % block
            for reader, (t, size) in enumerate(zip(took, sizes, strict=True))
        ]
        stop = min(firsts, default=left)
        if stop >= left:
            return Progress(self.length, self.length)
        beyond = [np.zeros(0, dtype=np.int64)]
        stop_block = stop // block
        for reader, t in enumerate(took):
            # The reader's first block at or after ``stop``'s, and its first place there.
            first_block = stop_block + (reader - stop_block) % readers
            place = (first_block // readers) * block + (stop % block if first_block == stop_block else 0)
            if place < t:
                places = np.arange(place, t, dtype=np.int64)
                beyond.append(((places // block) * readers + reader) * block + places % block)
        extra = np.sort(np.concatenate(beyond))
        done = int(self.unread_at(np.array([stop], dtype=np.int64))[0])
        also = np.concatenate(
            [np.asarray([p for p in self.also if p > done], dtype=np.int64), self.unread_at(extra)]
        )
        also.sort()
        return Progress(self.length, done, tuple(also.tolist()))


def loader_taken(sizes: Sequence[int], batch_size: int, batches: int, *, drop_last: bool) -> list[int] | None:
    """The items each of a rank's workers (with ``sizes[w]`` items each) has yielded once
    a DataLoader took ``batches`` batches of ``batch_size`` from them in turn, skipping
    workers that have finished; None if they hold fewer batches.

    Taken in turn, the workers give their batches in rounds: round ``k`` takes one from
    each worker (in order) that holds more than ``k``. So the whole rounds are the most
    whose batches do not exceed ``batches`` (a search over the rounds, each counted in one
    step a worker), and the first workers still holding batches give one more each: no
    step a batch."""
    if batches <= 0:
        return [0] * len(sizes)
    held = [int(size) // batch_size if drop_last else -(-int(size) // batch_size) for size in sizes]
    if batches > sum(held):
        return None
    low, high = 0, max(held)
    while low < high:
        middle = (low + high + 1) // 2
        if sum(min(count, middle) for count in held) <= batches:
            low = middle
        else:
            high = middle - 1
    more = batches - sum(min(count, low) for count in held)
    done = []
    for size, count in zip(sizes, held, strict=True):
        took = min(count, low)
        if count > low and more:
            took, more = took + 1, more - 1
        done.append(min(took * batch_size, int(size)))
    return done


#: :func:`located_pairs` looks items up in a table of every item's shard when they are
#: at least this share of all items (a table for a few items costs more than it saves).
_TABLE_SHARE = 16


def located_pairs(starts: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Each of ``items`` (numbered across shards whose first items are ``starts``, then
    their total) as a row ``(shard, number in it)`` of an ``[n, 2]`` array. Many items
    (an epoch's, or a reader's share of one) are looked up in a table of each item's
    shard, two bytes an item for fewer than 65,536 shards: a binary search over the
    shards for each item in shuffled order cost several times the table (one cache miss
    after another)."""
    pairs = np.empty((len(items), 2), dtype=np.int64)
    total = int(starts[-1])
    shards: np.ndarray
    if len(items) and len(items) * _TABLE_SHARE >= total:
        kind = np.uint16 if len(starts) <= 1 << 16 else np.int32
        shards = np.repeat(np.arange(len(starts) - 1, dtype=kind), np.diff(starts)).take(items)
    else:
        shards = np.searchsorted(starts, items, side="right")
        shards -= 1
    pairs[:, 0] = shards
    pairs[:, 1] = items
    pairs[:, 1] -= starts.take(shards)
    return pairs


#: A record's code: its shard's number shifted left by this many bits, plus its number
#: in the shard (:func:`pairs_of_codes`).
_CODE_SHIFT = 32


def pairs_of_codes(codes: np.ndarray) -> np.ndarray:
    """Records given as codes (``shard << 32 | number``) as an ``[n, 2]`` array of
    ``(shard, number)`` rows: two passes over them, no lookup of their shards."""
    pairs = np.empty((len(codes), 2), dtype=np.int64)
    np.right_shift(codes, _CODE_SHIFT, out=pairs[:, 0])
    np.bitwise_and(codes, (1 << _CODE_SHIFT) - 1, out=pairs[:, 1])
    return pairs


def pair_list(pairs: np.ndarray) -> list[tuple[int, int]]:
    """The rows of an ``[n, 2]`` array of ``(shard, number)`` as a list of int pairs."""
    return list(zip(*pairs.reshape(-1, 2).T.tolist(), strict=True)) if len(pairs) else []


class EpochItems(Protocol):
    """What a streaming reader reads in epochs: a split (:class:`SplitOrder`) or a mixture
    (:class:`~recordkit.read._mixture.MixtureOrder`)."""

    def __len__(self) -> int:
        """The items of an epoch."""

    def items(self, *, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int) -> np.ndarray:
        """The epoch's items (ints) in its canonical order."""

    def locate(self, items: np.ndarray) -> list[tuple[int, int]]:
        """Each item's ``(shard, number)`` (shards numbered across all sources)."""

    def locate_pairs(self, items: np.ndarray) -> np.ndarray:
        """:meth:`locate` as an ``[n, 2]`` array (no Python tuple a record)."""

    def pairs_at(
        self, places: slice | np.ndarray, *, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int
    ) -> np.ndarray:
        """The ``(shard, number)`` of the items at ``places`` of the epoch's order, as an
        ``[n, 2]`` array."""

    def identity(self) -> dict[str, Any]:
        """What a state records of the order, checked on resume."""


class SplitOrder:
    """The epochs of one split: the canonical order of its records (global indices),
    where each is (shard and number), and what identifies it in a state (its fingerprint)."""

    def __init__(self, counts: Sequence[int] | np.ndarray, parts: Sequence[object]) -> None:
        self.counts = np.asarray(counts, dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        self.fingerprint = fingerprint([*parts, *self.counts.tolist()])
        #: Each shard's code (its number shifted: :meth:`pairs_at`); None when a shard holds
        #: too many records for a code to give its number.
        self._codes: np.ndarray | None = (
            np.arange(len(self.counts), dtype=np.int64) << _CODE_SHIFT
            if len(self.counts) < 1 << 30 and int(self.counts.max(initial=0)) < 1 << _CODE_SHIFT
            else None
        )

    @classmethod
    def of_shards(cls, shards: Sequence[Any], counts: Sequence[int] | np.ndarray) -> SplitOrder:
        """The order of a split's ``shards`` (their names, checksums and slices identify
        it) holding ``counts`` records each."""
        return cls(counts, [(shard.name, shard.sha256, shard.skip) for shard in shards])

    def __len__(self) -> int:
        return int(self.starts[-1])

    def items(self, *, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int) -> np.ndarray:
        """The split's records in epoch ``epoch``'s order."""
        return epoch_order(self.counts, seed=seed, epoch=epoch, shuffle=shuffle, window=window)

    def items_from(
        self,
        begin: int,
        *,
        seed: int | Sequence[int],
        epoch: int,
        shuffle: bool,
        window: int,
        stop: int | None = None,
    ) -> np.ndarray:
        """:meth:`items` from position ``begin`` to ``stop - 1`` (None: the end)
        (:func:`epoch_order_from`)."""
        return epoch_order_from(
            self.counts, begin, seed=seed, epoch=epoch, shuffle=shuffle, window=window, stop=stop
        )

    def locate(self, items: np.ndarray) -> list[tuple[int, int]]:
        """Each record's ``(shard, number)``."""
        return pair_list(self.locate_pairs(items))

    def locate_pairs(self, items: np.ndarray) -> np.ndarray:
        """:meth:`locate` as an ``[n, 2]`` array."""
        return located_pairs(self.starts, items)

    def pairs_at(
        self, places: slice | np.ndarray, *, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int
    ) -> np.ndarray:
        """The ``(shard, number)`` of the records at ``places`` of epoch ``epoch``'s order (a
        slice of it, or positions in order), as an ``[n, 2]`` array: the order laid out
        from the first of them to the last only (a resumed reader's places all lie after
        what was read), each record as its code (``shard << 32 | number``:
        :func:`pairs_of_codes`), so that no record is looked up in its shard."""
        options: dict[str, Any] = {"seed": seed, "epoch": epoch, "shuffle": shuffle, "window": window}
        if self._codes is None:
            return self.locate_pairs(self.items_at(places, **options))
        begin, stop, cut = _span(places, len(self))
        return pairs_of_codes(self.codes_from(begin, **options, stop=stop)[cut])

    def items_at(
        self, places: slice | np.ndarray, *, seed: int | Sequence[int], epoch: int, shuffle: bool, window: int
    ) -> np.ndarray:
        """The records (numbered across the shards) at ``places`` of epoch ``epoch``'s order,
        laid out from the first of them to the last only, as :meth:`pairs_at`."""
        begin, stop, cut = _span(places, len(self))
        items: np.ndarray = self.items_from(
            begin, seed=seed, epoch=epoch, shuffle=shuffle, window=window, stop=stop
        )[cut]
        return items

    @property
    def coded(self) -> bool:
        """Whether every record has a code (:meth:`codes_from`): no shard holds 2**32 records."""
        return self._codes is not None

    def codes_from(
        self,
        begin: int,
        *,
        seed: int | Sequence[int],
        epoch: int,
        shuffle: bool,
        window: int,
        stop: int | None = None,
        first_shard: int = 0,
    ) -> np.ndarray:
        """:meth:`items_from`, each record as its code ``shard << 32 | number``
        (:func:`pairs_of_codes`), its shard numbered from ``first_shard`` (a mixture's
        sources number their shards one after another)."""
        if self._codes is None:
            raise ValueError("a shard holds too many records for their codes")
        codes = self._codes + (first_shard << _CODE_SHIFT) if first_shard else self._codes
        return _keys_from(
            codes, self.counts, begin, stop, seed=seed, epoch=epoch, shuffle=shuffle, window=window
        )

    def identity(self) -> dict[str, Any]:
        """What a state records of this order, to refuse a state of another dataset."""
        return {"dataset": self.fingerprint}
