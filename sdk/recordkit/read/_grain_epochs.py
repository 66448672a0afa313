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
takes the sampler's otherwise (the form Grain's docs show for its ``IndexSampler``). The
sampler, which must know the host count to refuse an uneven division, holds them:
:meth:`EpochSampler.loader` builds Grain's ``DataLoader`` with the sampler's, consistent by
construction. A ``DataLoader`` built by hand and given shard options of its own is
checked only through Grain's public calls: a sampler given none refuses to give its
length (the ``DataLoader`` would divide the epoch unchecked), and a sampler asked for a
record its own host does not read refuses it, naming both.
"""

from __future__ import annotations

from collections.abc import Sequence
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
        return source.records.split_order
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
        stay unread in :meth:`state_after`). Build the loader with :meth:`loader`, or give
        Grain's ``DataLoader`` no shard options (it takes the sampler's). A sampler given
        none refuses ``len()``, which Grain's ``DataLoader`` asks when it is made, and a
        sampler asked for a record another host reads refuses it (both
        :class:`~recordkit.errors.ShardingError`): a ``DataLoader`` with shard options of
        its own would divide the epoch unchecked.
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
        self.source = source
        self.shuffle, self.seed, self.window, self.epoch = shuffle, int(seed), window, int(epoch)
        self.progress = Progress(len(self.order))
        if start is not None:
            saved, self.progress = resumed_progress(start, _READER, self._identity(), len(self.order))
            self.epoch = self.epoch if saved is None else saved
        #: Grain's ``DataLoader`` given no shard options takes this attribute (its public fallback).
        self._shard_options: ShardOptions | None = shard_options
        self._share(shard_options)

    def _share(self, shard_options: ShardOptions | None) -> None:
        """Divide what is left of the epoch between the hosts ``shard_options`` name:
        :attr:`dropped` and the keys read."""
        self.shard_index = 0 if shard_options is None else int(shard_options.shard_index)
        self.shard_count = 1 if shard_options is None else int(shard_options.shard_count)
        left = self.progress.length - self.progress.read
        #: Records at the end of what is left that no host reads (``drop_remainder=True``).
        self.dropped = left % self.shard_count
        if self.dropped and not (shard_options is not None and shard_options.drop_remainder):
            raise ShardingError(
                f"{left} records are left of epoch {self.epoch}, which {self.shard_count} hosts "
                f"cannot share evenly: Grain's DataLoader gives each host {left // self.shard_count} "
                f"and would silently skip the last {self.dropped}. Use a number of hosts that divides "
                f"{left}, or pass ShardOptions(..., drop_remainder=True) to the EpochSampler to "
                f"accept that those {self.dropped} records stay unread this time (state_after keeps them "
                f"as not read)"
            )
        #: The records left that the hosts read together (Grain's global indices).
        self._count = left - self.dropped
        #: This host's records' keys: global index ``i``'s is ``_keys[i // shard_count]``.
        self._keys = self._host_keys()

    def _host_keys(self) -> np.ndarray:
        """The keys of the records this host reads, in order: those at its global indices
        (every ``shard_count``-th from ``shard_index``) of the positions not read yet. A
        split's order is laid out from the host's first position to its last only
        (:meth:`SplitOrder.items_at`), and no array of all the positions left is made."""
        places = slice(self.shard_index, self._count, self.shard_count)
        options: dict[str, Any] = {
            "seed": self.seed,
            "epoch": self.epoch,
            "shuffle": self.shuffle,
            "window": self.window,
        }
        done = self.progress.done
        positions: slice | np.ndarray = (
            self.progress.unread_at(places)
            if self.progress.also
            else slice(done + self.shard_index, done + self._count, self.shard_count)
        )
        if isinstance(self.order, SplitOrder):
            keys = self.order.items_at(positions, **options)
        else:
            keys = self.order.items(**options)[positions]
        return np.ascontiguousarray(keys)  # not a view holding the whole run

    def _identity(self) -> dict[str, Any]:
        return {"shuffle": self.shuffle, "seed": self.seed, "window": self.window, **self.order.identity()}

    def loader(self, **loader_options: Any) -> Any:
        """Grain's ``grain.python.DataLoader`` reading this sampler's records of ``source``
        with the sampler's shard options (one host when it was given none).
        ``loader_options`` go to the ``DataLoader`` (``operations``, ``worker_count``,
        ``worker_buffer_size``, ``read_options``...), except ``data_source``, ``sampler``
        and ``shard_options``, which this method sets."""
        import grain.python as grain  # the extra: recordkit.grain checked it

        taken = sorted({"data_source", "sampler", "shard_options"} & set(loader_options))
        if taken:
            raise TypeError(f"EpochSampler.loader sets {', '.join(taken)} itself")
        options = self._shard_options if self._shard_options is not None else grain.NoSharding()
        if self._shard_options is None:
            self._shard_options = options
        return grain.DataLoader(
            data_source=self.source, sampler=self, shard_options=options, **loader_options
        )

    def __len__(self) -> int:
        if self._shard_options is None:
            raise ShardingError(
                "this EpochSampler was given no shard_options, so a Grain DataLoader asking its length "
                "would divide the epoch between hosts by its own shard_options, unchecked, and could skip "
                "records silently. Build the loader with sampler.loader(...), or give "
                "shard_options=ShardOptions(shard_index=..., shard_count=...) (grain.NoSharding() for one "
                "host) to the EpochSampler and none to the DataLoader, which takes the sampler's"
            )
        return self._count

    def __getitem__(self, index: int) -> Any:
        from grain.python import RecordMetadata  # the extra: present when Grain calls

        if not 0 <= index < self._count:
            raise IndexError(f"index {index} is past the epoch's {self._count} records left")
        if index % self.shard_count != self.shard_index:
            raise ShardingError(
                f"the DataLoader asked for global index {index}, which the EpochSampler's shard_options "
                f"(shard_index={self.shard_index}, shard_count={self.shard_count}) give to another host: "
                "the DataLoader divides the epoch by other shard_options than its sampler's and would "
                "leave records unread or read twice. Give shard_options to the EpochSampler only (a "
                "DataLoader given none takes the sampler's), or build the loader with sampler.loader(...)"
            )
        return RecordMetadata(index=index, record_key=int(self._keys[index // self.shard_count]))

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
        if self._count % shard_count:
            raise ShardingError(
                f"{shard_count} hosts cannot share the {self._count} records this sampler "
                f"reads evenly: Grain's DataLoader gave each {self._count // shard_count} and "
                f"skipped the last {self._count % shard_count}. Give the sampler "
                f"shard_options=ShardOptions(shard_index=..., shard_count={shard_count}), which checks "
                f"this before reading"
            )
        division = Division(shard_count, 0, 1)
        # Host h read the first ``records`` of its share of the records the hosts read
        # together, which are the first of what is left: so the first of its share of
        # all that is left (:meth:`Progress.after`, no array of the epoch).
        taken = [min(records, size) for size in division.sizes(self._count)]
        return epoch_state(_READER, self.epoch, self.progress.after(division, taken), self._identity())
