"""Batch-first PyTorch readers: whole batches assembled where the records are decoded.

* :class:`BatchStream`: an :class:`~recordkit.torch.IterableDataset` that yields whole
  batches (``DataLoader(stream, batch_size=None, num_workers=...)``): each worker reads
  its own records (the same split between ranks and workers, the same order and resume
  as the record stream), decodes them and lays them out as one batch of a few large
  tensors (:mod:`recordkit.read._batch_assemble`), so a batch crosses to the main
  process as a handful of shared-memory segments, not one per record, and no ``collate``
  runs in Python per record.
* :class:`BatchMapDataset`: the map-style form (``__getitems__`` gives a whole batch),
  for samplers such as ``DistributedSampler``.
* :class:`ThreadLoader`: the same batches as ``DataLoader(stream, batch_size=None,
  num_workers=n)``, decoded on a pool of threads in the training process (the codecs'
  decoders release the GIL), ``prefetch`` batches ahead; its :meth:`ThreadLoader.state_dict`
  resumes either of them.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, cast

import torch
import torch.utils.data

from recordkit.read._batch_assemble import BatchLayout, batch_layout
from recordkit.read._position import Start
from recordkit.read._random_access import RandomAccess
from recordkit.read._shared_batch import batch_tensors
from recordkit.read._stream_order import StreamOrder
from recordkit.read._torch import IterableDataset, MapDataset

__all__ = ["BatchMapDataset", "BatchStream", "ThreadLoader"]


def _check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")


class BatchStream(IterableDataset):
    """A split's records streamed as whole batches of ``batch_size`` (see the module
    docstring); the order, the split between ranks and workers and ``start`` are those
    of :class:`~recordkit.torch.IterableDataset`. Made by
    :meth:`recordkit.Dataset.torch_batches`."""

    batch_size: int
    drop_last: bool
    layout: BatchLayout

    @classmethod
    def batched(
        cls,
        records: RandomAccess,
        split: str,
        order: StreamOrder | None = None,
        *,
        batch_size: int,
        drop_last: bool = False,
        concat: Sequence[str] = (),
        channels_first: Sequence[str] = (),
        start: Start = None,
    ) -> BatchStream:
        """Batches of ``records`` (already opened) in ``order``; ``split`` names them in
        state dicts."""
        _check_batch_size(batch_size)
        self = cast(BatchStream, cls.over(records, split, order, batch_size=batch_size))
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.layout = batch_layout(records, concat, channels_first)
        self.collate_fn = None  # type: ignore[assignment]  # DataLoader(batch_size=None): no collate
        if start is not None:
            self.load_state_dict(start)
        return self

    def worker_batches(self, worker: int, workers: int) -> list[list[tuple[int, int]]]:
        """The ``(shard, record)`` pairs of each batch DataLoader worker ``worker`` of
        ``workers`` yields this epoch (the last one short, or left out with ``drop_last``)."""
        located = self.worker_records(worker, workers)
        size = self.batch_size
        batches = [located[begin : begin + size] for begin in range(0, len(located), size)]
        if self.drop_last and batches and len(batches[-1]) < size:  # only the epoch's last block is short
            batches.pop()
        return batches

    def batch(self, located: Sequence[tuple[int, int]]) -> dict[str, Any]:
        """The records at ``located``, read, decoded and laid out as one batch of tensors."""
        return batch_tensors(self.read_located(located), self.layout)

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        batches = self.worker_batches(worker, workers)
        if info is None:
            self._yielded = 0
        for located in batches:
            batch = self.batch(located)
            if info is None:
                self._yielded += len(located)
            yield batch

    def batches_state(self, batches: int, num_workers: int) -> dict[str, Any]:
        """The state after every rank's ``DataLoader(self, batch_size=None,
        num_workers=...)`` (or :class:`ThreadLoader` with that many workers) yielded
        ``batches`` batches, to pass back as ``start=`` with any number of ranks and workers."""
        return self.loader_state(batches, self.batch_size, num_workers, drop_last=self.drop_last)


class _PassBatch:
    """A picklable ``collate_fn`` for a dataset whose ``__getitems__`` already gives a batch."""

    def __call__(self, batch: Any) -> Any:
        return batch


class BatchMapDataset(MapDataset):
    """A map-style dataset whose ``__getitems__`` gives a DataLoader batch's records as
    one batch (laid out as :class:`BatchStream`'s); ``ds[i]`` is one record, as
    :class:`~recordkit.torch.MapDataset` gives it. Pass ``collate_fn=ds.collate_fn``."""

    layout: BatchLayout

    @classmethod
    def batched(
        cls, records: RandomAccess, *, concat: Sequence[str] = (), channels_first: Sequence[str] = ()
    ) -> BatchMapDataset:
        """A map-style dataset over ``records`` whose ``__getitems__`` returns whole
        batches laid out as ``concat`` and ``channels_first`` say (``Dataset.torch_batch_map``
        builds it)."""
        self = cast(BatchMapDataset, cls.over(records))
        self.layout = batch_layout(records, concat, channels_first)
        self.collate_fn = _PassBatch()  # type: ignore[assignment]  # batches come whole from __getitems__
        return self

    def __getitems__(self, indices: Sequence[int]) -> Any:  # a batch, not a list: see collate_fn
        return batch_tensors(self.records.read_batch(indices), self.layout)


class ThreadLoader:
    """``stream``'s batches in the order ``DataLoader(stream, batch_size=None,
    num_workers=num_workers)`` yields them, decoded on ``threads`` threads of this
    process with ``prefetch`` batches in flight.

    :param num_workers: the DataLoader workers whose order is reproduced (it decides
        which records go in which batch; not a number of processes).
    :param threads: decoding threads (default: the CPUs this process may use).
    :param prefetch: batches decoded ahead of the one being used.
    """

    def __init__(
        self, stream: BatchStream, *, num_workers: int = 1, threads: int | None = None, prefetch: int = 4
    ) -> None:
        if num_workers < 1:
            raise ValueError(f"num_workers must be at least 1, not {num_workers}")
        if prefetch < 1:
            raise ValueError(f"prefetch must be at least 1, not {prefetch}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        self.stream = stream
        self.num_workers = num_workers
        self.threads = threads or len(os.sched_getaffinity(0))
        self.prefetch = prefetch
        self._taken = 0

    def plan(self) -> list[list[tuple[int, int]]]:
        """Each batch's ``(shard, record)`` pairs, in the order they are yielded: the
        workers' batches taken in turn, skipping workers that have finished (as the
        DataLoader does)."""
        queues = [deque(self.stream.worker_batches(w, self.num_workers)) for w in range(self.num_workers)]
        order: list[list[tuple[int, int]]] = []
        while any(queues):
            order.extend(queue.popleft() for queue in queues if queue)
        return order

    def __len__(self) -> int:
        return len(self.plan())

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._taken = 0
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="recordkit-batches")
        pending: deque[Future[dict[str, Any]]] = deque()
        try:
            for located in self.plan():
                pending.append(pool.submit(self.stream.batch, located))
                if len(pending) > self.prefetch:
                    yield self._next(pending)
            while pending:
                yield self._next(pending)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _next(self, pending: deque[Future[dict[str, Any]]]) -> dict[str, Any]:
        batch = pending.popleft().result()
        self._taken += 1
        return batch

    def state_dict(self) -> dict[str, Any]:
        """The state after the batches yielded so far this epoch (pass it as the stream's
        ``start=``; a DataLoader or ThreadLoader with any ``num_workers`` resumes from it)."""
        return self.stream.batches_state(self._taken, self.num_workers)
