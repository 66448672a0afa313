"""An epoch's records read in the canonical order, by one reader of many, without PyTorch.

:class:`EpochStream` holds what every streaming reader of recordkit's epochs shares
(:mod:`recordkit.read._epoch_order`): the epoch's order, this rank's and worker's share
of it, the progress a resumed state brings, and the states to save
(:mod:`recordkit.read._epoch_state`). Iterated, it yields decoded records as numpy and
Python values (``Dataset.epoch_stream()``); :class:`recordkit.torch.IterableDataset` is the
same stream as a PyTorch dataset, shared between DataLoader workers.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from recordkit.read._epoch_order import (
    Division,
    EpochItems,
    Progress,
    SplitOrder,
    loader_taken,
    pair_list,
    slice_windows,
)
from recordkit.read._epoch_state import epoch_state, resumed_progress
from recordkit.read._mixture_order import MixtureOrder
from recordkit.read._mixture_read import mixed_chunks, source_chunks
from recordkit.read._numpy_geometry import epoch_draws
from recordkit.read._position import Start
from recordkit.read._random_access import RandomAccess
from recordkit.read._stream_order import StreamOrder

__all__ = ["EpochStream", "check_prefetch"]

#: What a mixture's read gives per record (decoded dicts, or serialized bytes).
_Read = TypeVar("_Read")


def _batch_block(batch_size: int | None) -> int:
    """The records dealt to each reader in turn: ``batch_size`` (None: one)."""
    if batch_size is None:
        return 1
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int of at least 1 (or None), not {batch_size!r}")
    return batch_size


def check_prefetch(prefetch: int) -> None:
    """Refuse a ``prefetch`` that cannot be right, before anything is read."""
    if prefetch < 1:
        raise ValueError(f"prefetch must be at least 1, not {prefetch}")


class _Yielding:
    """The records a stream yielded: those of the chunks before (``before``) and those
    taken from ``records``, the iterator over the current chunk of ``size``."""

    def __init__(self, before: int = 0, size: int = 0, records: Iterator[Any] | None = None) -> None:
        self.before = before
        self.size = size
        self.records: Iterator[Any] = records if records is not None else iter(())

    def next_chunk(self, chunk: list[Any]) -> _Yielding:
        """The count once ``chunk`` follows (the current chunk is read through)."""
        return _Yielding(self.before + self.size, len(chunk), iter(chunk))

    def count(self) -> int:
        """The records yielded: a list iterator's length hint is the records left in it."""
        return self.before + self.size - operator.length_hint(self.records)


class EpochStream:
    """A split's records in its canonical epoch order: this rank's share (of ``world_size``),
    dealt in blocks of ``batch_size``, from where ``start`` left the epoch (see
    :meth:`recordkit.Dataset.epoch_stream` for the options). Iterated in one process it
    yields decoded records; :meth:`state_dict` then gives the state to resume from with
    any number of ranks and workers."""

    #: Names the kind of stream in its states (a split's, or a mixture's).
    _reader_name = "split stream"
    #: A mixture's sources (:meth:`mix_in`); None: the split of ``records``.
    sources: list[RandomAccess] | None = None

    @classmethod
    def over(
        cls,
        records: RandomAccess,
        split: str,
        order: StreamOrder | None = None,
        *,
        start: Start = None,
        prefetch: int = 64,
        batch_size: int | None = None,
    ) -> EpochStream:
        """The stream of ``records`` (already opened) in ``order`` (default: stored order,
        one rank); ``split`` names them in states."""
        check_prefetch(prefetch)
        self = cls.__new__(cls)
        self.attach_epochs(records, split, order or StreamOrder(), prefetch=prefetch, batch_size=batch_size)
        if start is not None:
            self.load_state_dict(start)
        return self

    def attach_epochs(
        self,
        records: RandomAccess,
        split: str,
        order: StreamOrder,
        *,
        prefetch: int,
        batch_size: int | None,
        rank: int | None = None,
        world_size: int | None = None,
    ) -> None:
        """Set the stream's order and share (the constructors' common step). ``rank`` and
        ``world_size`` are those ``order`` leaves None (worked out by the caller, as from
        ``torch.distributed``), else 0 and 1."""
        world_size = order.world_size if order.world_size is not None else (world_size or 1)
        rank = order.rank if order.rank is not None else (rank or 0)
        if world_size < 1:
            raise ValueError(f"world_size must be at least 1, not {world_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in 0..{world_size - 1}, not {rank}")
        #: How this stream orders the split and divides it.
        self.order = order
        self.records = records
        self.split = split
        self.shuffle = order.shuffle
        self.seed = int(order.seed)
        self.window = order.window
        self.rank = rank
        self.world_size = world_size
        self.prefetch = prefetch
        #: Records dealt to a reader at a time (the DataLoader's batch size keeps global
        #: batches in the canonical order).
        self.block = _batch_block(batch_size)
        self.epoch = 0
        #: The epochs read: a split's records, or a mixture's samples (:meth:`mix_in`).
        self.epochs: EpochItems = records.split_order
        #: What of this epoch was read before (a resumed state), and the records yielded
        #: since in this process (no DataLoader workers).
        self._progress: Progress | None = None
        self._yielding = _Yielding()
        #: The place of each record in the order of an epoch (for its random draws).
        self._places: tuple[int, np.ndarray] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.read_share(0, 1, count=True)

    def read_share(self, worker: int, workers: int, *, count: bool) -> Iterator[dict[str, Any]]:
        """The records of worker ``worker`` of ``workers``, decoded; ``count``: they are
        this process's whole share, counted for :meth:`state_dict`. The records come in
        lists (a fetched batch's), chained in C: no Python step a record."""
        places = self._worker_places(worker, workers)
        run = self._mixed_run(places)
        chunks = run if run is not None else self._read_chunks(self._located(places), self._windows(places))
        return itertools.chain.from_iterable(self._counted(chunks) if count else chunks)

    def _counted(self, chunks: Iterator[list[dict[str, Any]]]) -> Iterator[Iterator[dict[str, Any]]]:
        """Each of ``chunks`` as an iterator kept in :attr:`_yielding`, so that
        :attr:`_yielded` counts the records taken from it (its length hint says how many
        are left) without a Python step a record. Resets the count when it starts."""
        self._yielding = _Yielding()
        for chunk in chunks:
            self._yielding = self._yielding.next_chunk(chunk)
            yield self._yielding.records

    @property
    def _yielded(self) -> int:
        """The records this process yielded since its last iteration started (:meth:`_counted`)."""
        return self._yielding.count()

    @_yielded.setter
    def _yielded(self, count: int) -> None:
        """Set the count (a reader that counts its own records, as whole batches)."""
        self._yielding = _Yielding(count)

    # -- the order ---------------------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Use epoch ``epoch``'s order (call before each epoch, as with DistributedSampler);
        a resumed position applies only to the epoch it was saved in."""
        if epoch != self.epoch:
            self._progress = None
        self.epoch = int(epoch)

    def _identity(self) -> dict[str, Any]:
        """What fixes the epoch's order (checked when resuming); the ranks, workers and
        batch size are not in it: any of them resumes."""
        return {
            "split": self.split,
            "shuffle": self.shuffle,
            "seed": self.seed,
            "window": self.window,
            **self.epochs.identity(),
        }

    def division(self, num_workers: int) -> Division:
        """How this epoch is divided between the ranks and ``num_workers`` DataLoader workers each."""
        return Division(self.world_size, num_workers, self.block)

    def _current(self) -> Progress:
        """The progress through this epoch (what a state needs: not the order itself)."""
        return self._progress or Progress(len(self.epochs))

    # -- iterating ---------------------------------------------------------------------------

    def worker_records(self, worker: int, workers: int) -> list[tuple[int, int]]:
        """The ``(shard, record)`` pairs DataLoader worker ``worker`` of ``workers`` reads
        this epoch, from where a resumed state says the epoch was left."""
        return pair_list(self.worker_pairs(worker, workers))

    def worker_pairs(self, worker: int, workers: int) -> np.ndarray:
        """:meth:`worker_records` as an ``[n, 2]`` array (what the stream reads: no
        Python tuple a record)."""
        return self._located(self._worker_places(worker, workers))

    def _worker_places(self, worker: int, workers: int) -> slice | np.ndarray:
        """The positions in this epoch's order that worker ``worker`` of ``workers`` reads,
        in order: a slice when they are one (see :meth:`Division.places`)."""
        progress = self._current()
        division = self.division(workers)
        reader = division.reader(self.rank, worker)
        if progress.also:
            # This reader's places among the positions not read, each shifted past the
            # positions read: an array of its share, not of all that is left.
            return progress.unread_at(division.places(0, progress.length - progress.read, reader))
        # What is left is one run of the order (a fresh epoch, or a resume after whole
        # global batches): this reader's places are taken from it without an array of
        # all the positions left (a view of the order, when they are a slice of it).
        return division.places(progress.done, progress.length, reader)

    def _located(self, places: slice | np.ndarray) -> np.ndarray:
        """The ``(shard, record)`` of the items at ``places`` of this epoch's order, laid
        out from the first of them only where it can be (a split's: a resumed reader's
        places all lie after what was read)."""
        return self.epochs.pairs_at(
            places, seed=self.seed, epoch=self.epoch, shuffle=self.shuffle, window=self.window
        )

    def _windows(self, places: slice | np.ndarray) -> np.ndarray | None:
        """The window of the order each of ``places`` lies in, when the split is shuffled in
        windows (a window's records lie in one shard or a few, which a read of them reads
        once: :meth:`RandomAccess.stream_chunks`); else None."""
        if not self.shuffle or self.window <= 1 or self.sources is not None:
            return None
        if isinstance(places, slice):
            return slice_windows(places, self.window)
        windows: np.ndarray = places // self.window
        return windows

    def _read_chunks(
        self, located: np.ndarray, windows: np.ndarray | None = None
    ) -> Iterator[list[dict[str, Any]]]:
        """The records at ``located``, decoded, in order, in lists (``windows``: each
        one's window of the order, which reads end with where they can)."""
        if self.sources is None:
            return self.records.stream_chunks(
                located, prefetch=self.prefetch, draws=self._geometry_draws(located), groups=windows
            )
        return self._read_mixed(located)

    def read_located(self, located: Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
        """The records at ``located`` (from :meth:`worker_records`), decoded, fetched
        together: a batch's records (a mixture's from their sources)."""
        if self.sources is None:
            return self.records.records(located, draws=self._geometry_draws(located))
        return self._mixed_records(located)

    # -- random crops and flips ------------------------------------------------------------

    def epoch_draws(self, seed: int, located: Sequence[tuple[int, int]] | np.ndarray) -> np.ndarray:
        """The random draws of the split's records at ``located`` this epoch, keyed by
        ``(seed, epoch, place in the epoch's order)``
        (:func:`~recordkit.read._numpy_geometry.epoch_draws`): the same for a record
        however the epoch is divided between ranks and workers, or resumed."""
        if self.sources is not None:
            raise ValueError("a mixture's records have no random geometry to draw for")
        order = cast(SplitOrder, self.epochs)
        if self._places is None or self._places[0] != self.epoch:
            items = self.epochs.items(
                seed=self.seed, epoch=self.epoch, shuffle=self.shuffle, window=self.window
            )
            places = np.empty(len(items), dtype=np.int64)
            places[items] = np.arange(len(items), dtype=np.int64)
            self._places = (self.epoch, places)
        pairs = np.asarray(located, dtype=np.int64).reshape(-1, 2)
        return epoch_draws(seed, self.epoch, self._places[1][order.starts[pairs[:, 0]] + pairs[:, 1]])

    def _geometry_draws(self, located: Sequence[tuple[int, int]] | np.ndarray) -> np.ndarray | None:
        """The draws of a seeded random geometry's records at ``located`` (None: no
        geometry, or one without a seed, whose draws are fresh)."""
        plan = self.records.geometry_plan
        if plan is None or plan.geometry.seed is None or len(located) == 0:
            return None
        return self.epoch_draws(plan.geometry.seed, located)

    def mix_in(self, sources: Sequence[RandomAccess], order: MixtureOrder) -> None:
        """Read the mixture of ``sources`` in ``order``'s epochs instead of the split
        (``rk.mix``); ``records`` stays the first source (its fields are the mixture's)."""
        self.sources = list(sources)
        self.epochs = order
        self._reader_name = "mixture stream"

    def _read_mixed(self, located: np.ndarray) -> Iterator[list[dict[str, Any]]]:
        """Each ``(shard, number)``'s record (shards numbered across the sources), in
        order, in lists (:func:`~recordkit.read._mixture_read.mixed_chunks`: each source
        streams its own records, ``prefetch`` at a time, more for small records). When a
        source raises, the records before its place are yielded first, then the error."""
        sources = cast(list[RandomAccess], self.sources)
        return mixed_chunks(sources, located, cast(MixtureOrder, self.epochs).shard_owners, self.prefetch)

    def _mixed_run(self, places: slice | np.ndarray) -> Iterator[list[dict[str, Any]]] | None:
        """A mixture's records at ``places`` when they are one run of the epoch's order (a
        reader's whole share: one reader), each source's share of them handed straight
        from the order (:meth:`MixtureOrder.source_pairs`,
        :func:`~recordkit.read._mixture_read.source_chunks`); else None."""
        if self.sources is None or not isinstance(places, slice):
            return None
        start, stop, step = places.indices(len(self.epochs))
        if step != 1:
            return None
        order = cast(MixtureOrder, self.epochs)
        shares = order.source_pairs(
            start,
            max(start, stop),
            seed=self.seed,
            epoch=self.epoch,
            shuffle=self.shuffle,
            window=self.window,
        )
        if shares is None:
            return None
        return source_chunks(self.sources, *shares, self.prefetch)

    def _mixed_records(self, chunk: Sequence[tuple[int, int]] | np.ndarray) -> list[dict[str, Any]]:
        """Each ``(shard, number)``'s record of a mixture, each source's fetched together."""
        return self._by_source(chunk, RandomAccess.records)

    def serialized_located(self, located: Sequence[tuple[int, int]] | np.ndarray) -> list[bytes]:
        """The serialized records at ``located`` (from :meth:`worker_records`), checked,
        not decoded (a mixture's from their sources): what ``tf.data`` parses."""
        if self.sources is None:
            return self.records.serialized(located)
        return self._by_source(located, RandomAccess.serialized)

    def _by_source(
        self,
        chunk: Sequence[tuple[int, int]] | np.ndarray,
        read: Callable[[RandomAccess, np.ndarray], list[_Read]],
    ) -> list[_Read]:
        """``read`` of each ``(shard, number)`` of a mixture (shards numbered across the
        sources), each source's read together, in ``chunk``'s order."""
        sources = cast(list[RandomAccess], self.sources)
        owner_of, first_shard = cast(MixtureOrder, self.epochs).shard_owners
        pairs = np.asarray(chunk, dtype=np.int64).reshape(-1, 2)
        owners = np.asarray(owner_of, dtype=np.int64)[pairs[:, 0]]
        out: list[Any] = [None] * len(chunk)
        for source in range(len(sources)):
            places = np.flatnonzero(owners == source)
            if not len(places):
                continue
            local = pairs[places]
            local[:, 0] -= first_shard[source]
            read_ = read(sources[source], local)
            list(map(out.__setitem__, places.tolist(), read_))  # each in its place, in C
        return out

    # -- position -----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The state after this dataset yielded what it has when iterated in this process
        (no DataLoader workers), every rank having read as many records (they step
        together); pass it back as ``start=``, with any number of ranks and workers."""
        return self._state_after(Division(self.world_size, 0, self.block), [self._yielded] * self.world_size)

    def loader_state(
        self, batches: int, batch_size: int, num_workers: int, *, drop_last: bool = False
    ) -> dict[str, Any]:
        """The state after every rank's ``DataLoader(self, batch_size, num_workers=...)``
        yielded ``batches`` batches this epoch; pass it back as ``start=``, with any
        number of ranks and workers.

        A DataLoader takes batches from its workers in turn (worker 0, 1, ... skipping
        those that have finished); each worker's records are known in advance, so the
        records each one has yielded follow from the count of batches.
        """
        division = self.division(num_workers)
        progress = self._current()
        sizes = division.sizes(progress.length - progress.read)
        taken = [0] * division.readers
        for rank in range(self.world_size):
            readers = [division.reader(rank, w) for w in range(division.workers)]
            done = loader_taken([sizes[r] for r in readers], batch_size, batches, drop_last=drop_last)
            if done is None and rank == self.rank:
                raise ValueError(f"the DataLoader cannot have yielded {batches} batches: the epoch has fewer")
            for reader, count in zip(readers, done or [sizes[r] for r in readers], strict=True):
                taken[reader] = count
        return self._state_after(division, taken)

    def _state_after(self, division: Division, taken: list[int]) -> dict[str, Any]:
        """The state once reader ``r`` of ``division`` read the first ``taken[r]`` of its
        share of what was left (:meth:`Progress.after`: no array of the epoch)."""
        progress = self._current().after(division, taken)
        return epoch_state(self._reader_name, self.epoch, progress, self._identity())

    def load_state_dict(self, state: Start) -> None:
        """Resume from ``state`` (see ``start=``): a state dict saved with any number of
        ranks and workers, or a count of the epoch's first records read."""
        if state is None:
            self._progress = None
            return
        epoch, progress = resumed_progress(state, self._reader_name, self._identity(), len(self.epochs))
        if epoch is not None:
            self.epoch = epoch
        self._progress = progress
