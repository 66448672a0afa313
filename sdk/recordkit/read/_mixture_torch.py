"""A weighted mixture of datasets as a streaming PyTorch dataset (the ``torch`` extra).

:class:`MixtureStream` is :class:`~recordkit.torch.IterableDataset` with a mixture's
epochs (:class:`~recordkit.read._mixture.MixtureOrder`) in place of a split's: the same
division between ranks and DataLoader workers, ``set_epoch``, ``loader_state`` and
elastic resume; each sample is read from its source's :class:`~recordkit.RandomAccess`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import numpy as np

from recordkit.read._mixture_order import MixtureOrder
from recordkit.read._position import Start
from recordkit.read._random_access import RandomAccess
from recordkit.read._torch import IterableDataset, Transform

__all__ = ["MixtureStream"]


class MixtureStream(IterableDataset):
    """A mixture's samples streamed in its canonical order (made by
    :meth:`recordkit.Mixture.torch_iterable`); records are those of each source, with
    the fields every source reads."""

    sources: list[RandomAccess]
    _reader_name = "torch.MixtureStream"

    @classmethod
    def mixed(
        cls,
        sources: list[RandomAccess],
        order: MixtureOrder,
        *,
        shuffle: bool,
        seed: int,
        window: int,
        rank: int | None,
        world_size: int | None,
        start: Start,
        transform: Transform | None,
        tensors: bool,
        prefetch: int,
        batch_size: int | None,
    ) -> MixtureStream:
        """The stream of a mixture of ``sources`` in ``order``, with the options of
        :meth:`recordkit.Dataset.torch_iterable`."""
        self = cast(
            MixtureStream,
            cls.over(
                sources[0],
                "mixture",
                shuffle=shuffle,
                seed=seed,
                window=window,
                rank=rank,
                world_size=world_size,
                transform=transform,
                tensors=tensors,
                prefetch=prefetch,
                batch_size=batch_size,
            ),
        )
        self.sources = sources
        self.order = order
        if start is not None:
            self.load_state_dict(start)
        return self

    def _read(self, located: list[tuple[int, int]]) -> Iterator[dict[str, Any]]:
        """Each ``(shard, number)``'s record (shards numbered across the sources), read
        ``prefetch`` at a time from their sources, in order."""
        order = cast(MixtureOrder, self.order)
        for begin in range(0, len(located), self.prefetch):
            chunk = located[begin : begin + self.prefetch]
            shards = np.asarray([shard for shard, _ in chunk], dtype=np.int64)
            owners = np.searchsorted(order.shard_starts, shards, side="right") - 1
            out: list[dict[str, Any] | None] = [None] * len(chunk)
            for source in np.unique(owners).tolist():
                places = np.flatnonzero(owners == source).tolist()
                first = int(order.shard_starts[source])
                local = [(chunk[p][0] - first, chunk[p][1]) for p in places]
                for place, record in zip(places, self.sources[source].records(local), strict=True):
                    out[place] = record
            yield from (record for record in out if record is not None)
