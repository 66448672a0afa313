"""The order of a streaming PyTorch read, as one frozen object.

:meth:`recordkit.Dataset.torch_iterable`, :meth:`recordkit.Dataset.torch_batches` and
:class:`recordkit.torch.IterableDataset` take the same five keywords (``shuffle``,
``seed``, ``window``, ``rank``, ``world_size``); each makes one :class:`StreamOrder` of
them, which is all the stream itself is given, and which it keeps as ``.order``.
"""

from __future__ import annotations

import dataclasses

__all__ = ["StreamOrder"]


@dataclasses.dataclass(frozen=True)
class StreamOrder:
    """How a streaming PyTorch dataset orders a split and divides it between ranks.

    Each epoch has one order, decided by (``seed``, epoch, dataset) alone: the shards,
    shuffled when ``shuffle``, then their records shuffled within windows of ``window``
    (:mod:`recordkit.read._epoch_order`); it is dealt in blocks to the ranks and their
    DataLoader workers. Every record is read once per epoch across all of them, so a run
    resumes exactly on any cluster shape.

    :param shuffle: shuffle the shards, and the records within windows of ``window``.
    :param seed: the shuffles' seed; every rank must draw the same order, so the default
        is 0 (as ``DistributedSampler``'s), not a random one.
    :param window: records shuffled together (the larger, the better mixed).
    :param rank: this process's rank (None: ``torch.distributed``'s, else 0).
    :param world_size: the number of ranks (None: ``torch.distributed``'s, else 1).
    """

    shuffle: bool = False
    seed: int = 0
    window: int = 1024
    rank: int | None = None
    world_size: int | None = None

    @classmethod
    def of(
        cls, shuffle: bool, seed: int | None, window: int, rank: int | None, world_size: int | None
    ) -> StreamOrder:
        """The order the readers' five keywords describe, a ``seed`` of None being 0:
        every rank must draw the same order."""
        return cls(shuffle, 0 if seed is None else seed, window, rank, world_size)

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"window must be at least 1, not {self.window}")
