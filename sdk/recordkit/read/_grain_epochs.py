"""Grain reading recordkit's canonical epochs: a sampler, and a mixture's data source.

Grain's ``DataLoader`` asks its sampler for global indices and divides them itself:
host ``h`` of ``shard_count`` reads indices ``h, h + shard_count, ...``, shared between
its workers, and yields them in index order. :class:`EpochSampler` maps index ``i`` to
the ``i``-th record of the epoch's canonical order not read yet
(:mod:`recordkit.read._epoch_order`), so every host count reads the same order, each
record once; Grain's own checkpoint (``iterator.get_state()``) resumes with the same
hosts and workers, and :meth:`EpochSampler.state_after` gives recordkit's state, from
which a sampler for any number of hosts and workers continues. :class:`MixedDataSource`
is a mixture's sources as one Grain data source, for the same sampler.

Grain's ``DataLoader`` divides by its own ``shard_options`` when it is given some, and
takes the sampler's otherwise; the sampler, which must know the host count to refuse an
uneven division, learns the ``DataLoader``'s when Grain asks its length (the object that
asks holds the sampler and its shard options): a sampler given none takes them, and a
sampler given others is refused, naming both, before anything is read.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any, Protocol, SupportsIndex

import numpy as np

from recordkit.errors import ShardingError
from recordkit.read._epoch_order import Division, EpochItems, Progress, SplitOrder
from recordkit.read._epoch_state import epoch_state, resumed_progress
from recordkit.read._grain import DataSource
from recordkit.read._mixture_order import MixtureOrder
from recordkit.read._position import Start
from recordkit.read._random_access import RandomAccess

__all__ = ["EpochSampler", "MixedDataSource"]

_READER = "grain.EpochSampler"


class ShardOptions(Protocol):
    """What the sampler reads of Grain's ``ShardOptions`` (imported by Grain's users)."""

    @property
    def shard_index(self) -> int: ...
    @property
    def shard_count(self) -> int: ...
    @property
    def drop_remainder(self) -> bool: ...


class MixedDataSource:
    """A mixture's sources as one Grain ``RandomAccessDataSource``: record keys number the
    records across the sources (what :class:`EpochSampler` gives over a mixture)."""

    def __init__(self, sources: Sequence[RandomAccess], order: MixtureOrder) -> None:
        self.sources = list(sources)
        self.order = order

    def __len__(self) -> int:
        return int(self.order.item_starts[-1])

    def __getitem__(self, record_key: SupportsIndex) -> dict[str, Any]:
        key = record_key.__index__()
        source = int(self.order.source_of(np.asarray([key]))[0])
        return self.sources[source][key - int(self.order.item_starts[source])]

    def __repr__(self) -> str:
        # Grain names the source in checkpoints: stable across processes.
        return f"recordkit.grain.MixedDataSource({self.order.identity()['mixture']!r})"


def _order_of(source: DataSource | MixedDataSource) -> EpochItems:
    if isinstance(source, MixedDataSource):
        return source.order
    if isinstance(source, DataSource):
        records = source.records
        return SplitOrder.of_shards(records.dataset.shards, records.shards.counts)
    raise TypeError(f"EpochSampler reads a recordkit grain source, not {type(source).__name__}")


class EpochSampler:
    """A Grain sampler (``sampler[i]`` gives the record to read at global index ``i``)
    over epoch ``epoch`` of ``source`` (a ``recordkit.grain.DataSource``, or a mixture's
    :class:`MixedDataSource`), in its canonical order from ``start`` on.

    :param shuffle: shuffle the shards, and the records within windows of ``window``.
    :param seed: the shuffles' seed (with the epoch).
    :param epoch: the epoch whose order is read (a new sampler for each epoch).
    :param start: a state from :meth:`state_after` (or a torch reader's ``state_dict()``
        of the same dataset), saved with any number of hosts and workers.
    :param shard_options: this host's Grain ``ShardOptions`` (default: one host, or the
        ``DataLoader``'s). Give them here and not to the ``DataLoader``, which takes the
        sampler's. Grain's ``DataLoader`` gives each host ``len(sampler) // shard_count``
        records whatever ``drop_remainder`` says, so when what is left of the epoch does
        not divide by ``shard_count`` the sampler raises
        :class:`recordkit.errors.ShardingError`, unless ``drop_remainder=True`` accepts
        that the last :attr:`dropped` records of the order are not read this time (they
        stay unread in :meth:`state_after`). A sampler given none takes a ``DataLoader``'s
        shard options, with the same check, when the ``DataLoader`` is made; a
        ``DataLoader`` given other shard options than the sampler's is refused
        (:class:`~recordkit.errors.ShardingError`, naming both).
    """

    def __init__(
        self,
        source: DataSource | MixedDataSource,
        *,
        shuffle: bool = False,
        seed: int = 0,
        window: int = 1024,
        epoch: int = 0,
        start: Start = None,
        shard_options: ShardOptions | None = None,
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, not {window}")
        self.order = _order_of(source)
        self.shuffle, self.seed, self.window, self.epoch = shuffle, int(seed), window, int(epoch)
        self.progress = Progress(len(self.order))
        if start is not None:
            saved, self.progress = resumed_progress(start, _READER, self._identity(), len(self.order))
            self.epoch = self.epoch if saved is None else saved
        self._items = self.order.items(seed=self.seed, epoch=self.epoch, shuffle=shuffle, window=window)
        self._shard_options: ShardOptions | None = None  # Grain's DataLoader takes them when given none
        self._share(shard_options, "to the EpochSampler")

    def _share(self, shard_options: ShardOptions | None, given: str) -> None:
        """Divide what is left of the epoch between the hosts ``shard_options`` (given
        ``given``, for the error) name: :attr:`dropped` and the keys read."""
        self._shard_options = shard_options
        self.shard_count = 1 if shard_options is None else int(shard_options.shard_count)
        left = self.progress.remaining()
        #: Records at the end of what is left that no host reads (``drop_remainder=True``).
        self.dropped = len(left) % self.shard_count
        if self.dropped and not (shard_options is not None and shard_options.drop_remainder):
            raise ShardingError(
                f"{len(left)} records are left of epoch {self.epoch}, which {self.shard_count} hosts "
                f"cannot share evenly: Grain's DataLoader gives each host {len(left) // self.shard_count} "
                f"and would silently skip the last {self.dropped}. Use a number of hosts that divides "
                f"{len(left)}, or pass ShardOptions(..., drop_remainder=True) {given} to "
                f"accept that those {self.dropped} records stay unread this time (state_after keeps them "
                f"as not read)"
            )
        self._positions = left[: len(left) - self.dropped]
        self._keys = self._items[self._positions]

    def _check_loader(self) -> None:
        """When Grain's ``DataLoader`` asks the length: divide by its shard options if the
        sampler has none, and refuse other ones than the sampler's."""
        theirs = _loader_shard_options(self)
        if theirs is None or theirs is self._shard_options:
            return
        if self._shard_options is None:
            self._share(theirs, "to the DataLoader")
            return
        mine = self._shard_options
        if (int(theirs.shard_index), int(theirs.shard_count)) != (int(mine.shard_index), self.shard_count):
            raise ShardingError(
                f"the DataLoader's shard_options (shard_index={theirs.shard_index}, shard_count="
                f"{theirs.shard_count}) differ from the EpochSampler's shard_options (shard_index="
                f"{mine.shard_index}, shard_count={mine.shard_count}): the DataLoader would divide the "
                "epoch by its own and leave records unread or read twice. Give shard_options to the "
                "EpochSampler only (a DataLoader given none takes the sampler's), or the same to both"
            )

    def _identity(self) -> dict[str, Any]:
        return {"shuffle": self.shuffle, "seed": self.seed, "window": self.window, **self.order.identity()}

    def __len__(self) -> int:
        self._check_loader()
        return len(self._keys)

    def __getitem__(self, index: int) -> Any:
        from grain.python import RecordMetadata  # the extra: present when Grain calls

        if not 0 <= index < len(self._keys):
            raise IndexError(f"index {index} is past the epoch's {len(self._keys)} records left")
        return RecordMetadata(index=index, record_key=int(self._keys[index]))

    def __repr__(self) -> str:
        # Grain checks a checkpoint against it: the same order and starting point.
        return (
            f"recordkit.grain.EpochSampler(epoch={self.epoch}, shuffle={self.shuffle}, seed={self.seed}, "
            f"window={self.window}, from={self.progress.read}, {self.order.identity()!r})"
        )

    def state_after(self, records: int, shard_count: int | None = None) -> dict[str, Any]:
        """The state after each of ``shard_count`` hosts (default: the sampler's
        ``shard_options``) read ``records`` records from this sampler (batches times batch
        size; hosts step together); a sampler for any number of hosts and workers resumes
        from it. Records dropped by ``drop_remainder=True`` count as not read."""
        shard_count = self.shard_count if shard_count is None else shard_count
        if shard_count != self.shard_count and self._shard_options is not None:
            raise ValueError(
                f"state_after(shard_count={shard_count}) differs from the sampler's shard_options "
                f"(shard_count={self.shard_count})"
            )
        if len(self._positions) % shard_count:
            raise ShardingError(
                f"{shard_count} hosts cannot share the {len(self._positions)} records this sampler "
                f"reads evenly: Grain's DataLoader gave each {len(self._positions) // shard_count} and "
                f"skipped the last {len(self._positions) % shard_count}. Give the sampler "
                f"shard_options=ShardOptions(shard_index=..., shard_count={shard_count}), which checks "
                f"this before reading"
            )
        division = Division(shard_count, 0, 1)
        sizes = division.sizes(len(self._positions))
        taken = [min(records, size) for size in sizes]
        read = division.read_after(self._positions, taken)
        return epoch_state(_READER, self.epoch, self.progress.advanced(read), self._identity())


def _loader_shard_options(sampler: EpochSampler) -> ShardOptions | None:
    """The shard options of the Grain object asking ``sampler``'s length, if a Grain
    ``DataLoader``'s dataset is asking (it holds the sampler as ``_sampler`` and the
    loader's shard options as ``_shard_options``); None for any other caller."""
    frame: FrameType | None = sys._getframe(1)  # the sampler's own frames are passed over
    for _ in range(_CALLERS_LOOKED_AT):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if owner is not None and owner is not sampler and getattr(owner, "_sampler", None) is sampler:
            options = getattr(owner, "_shard_options", None)
            return options if hasattr(options, "shard_count") and hasattr(options, "shard_index") else None
        frame = frame.f_back
    return None


#: How many frames up the asker of a sampler's length is looked for: the sampler's two,
#: then Grain's (which asks through ``len()`` from a method of its dataset).
_CALLERS_LOOKED_AT = 5
