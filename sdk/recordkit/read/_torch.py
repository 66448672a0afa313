"""PyTorch datasets over a recordkit split, without TensorFlow (the ``torch`` extra).

* :class:`MapDataset`: random access (``len`` and ``ds[i]``) through
  :class:`recordkit.RandomAccess`; any sampler works, ``DistributedSampler`` included.
* :class:`IterableDataset`: streaming. Each epoch has one order: the shards (shuffled
  with ``seed`` and the epoch when ``shuffle``), split between the distributed ranks and
  each rank's DataLoader workers (every ``slots``-th shard, ``slots = world_size *
  num_workers``; with fewer shards than slots, every ``slots``-th record), then shuffled
  within windows of ``window`` records. Every record is read exactly once per epoch
  across all ranks and workers. Records are read by their index (one ``pread`` each,
  one ranged GET each from a remote dataset), so resuming skips the records already
  yielded without reading them.
* :func:`collate`: stacks records into a batch; arrays whose shapes differ (images,
  audio, boxes, masks) are padded to the batch's largest with the codec's pad value,
  and ``"<field>/shape"`` holds each record's true shape, as ``load_dataset(pad=True)``
  gives them.

Arrays become tensors with ``torch.from_numpy`` (no copy) when numpy allows it;
strings, bytes and absent optional fields (None) stay Python values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.utils.data

from recordkit.codec._registry import CodecRegistry
from recordkit.read._batch_assemble import field_pad_values
from recordkit.read._dense import SHAPE_SUFFIX
from recordkit.read._paths import Paths
from recordkit.read._position import Start, position_state, resolve_start
from recordkit.read._random_access import RandomAccess
from recordkit.read._stream_order import StreamOrder
from recordkit.schema._schema import SchemaLike
from recordkit.storage import StorageOptions

__all__ = ["IterableDataset", "MapDataset", "collate", "pad_values", "to_tensors"]

Record = dict[str, Any]
Transform = Callable[[Record], Any]


def to_tensors(value: Any) -> Any:
    """numpy arrays (also inside dicts and lists) as tensors, shared with numpy when the
    array is writable; numpy scalars as 0-d tensors; anything else unchanged."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf" or value.dtype == np.bool_:
            array = value if value.flags.writeable else value.copy()
            return torch.from_numpy(np.ascontiguousarray(array))
        return value
    if isinstance(value, np.generic) and (value.dtype.kind in "biuf" or value.dtype == np.bool_):
        return torch.as_tensor(value.item())
    if isinstance(value, dict):
        return {key: to_tensors(item) for key, item in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
        return [to_tensors(v) for v in value]
    return value


def pad_values(ds: RandomAccess) -> dict[str, float]:
    """Each field's codec pad value (what :func:`collate` pads it with)."""
    return field_pad_values(ds)


def _pad(tensors: list[torch.Tensor], pad_value: float) -> tuple[torch.Tensor, torch.Tensor]:
    shapes = torch.tensor([list(t.shape) for t in tensors], dtype=torch.int64)
    size = [len(tensors), *shapes.max(dim=0).values.tolist()] if len(shapes) else [0]
    out = torch.full(size, pad_value, dtype=tensors[0].dtype)
    for i, t in enumerate(tensors):
        window: tuple[int | slice, ...] = (i, *(slice(0, d) for d in t.shape))
        out[window] = t
    return out, shapes


def _collate_values(
    key: str, values: list[Any], pads: Mapping[str, float], out: dict[str, Any], field: str
) -> None:
    first = values[0]
    if isinstance(first, dict) and all(isinstance(v, dict) for v in values):
        nested: dict[str, Any] = {}
        for name in first:
            _collate_values(name, [v[name] for v in values], pads, nested, field)
        out[key] = {name: v for name, v in nested.items() if not name.endswith(SHAPE_SUFFIX)}
        for name, v in nested.items():
            if name.endswith(SHAPE_SUFFIX):
                out[f"{key}/{name}"] = v
        return
    if isinstance(first, (int, float, bool)) and all(type(v) is type(first) for v in values):
        out[key] = torch.from_numpy(np.asarray(values))
        return
    tensors = [to_tensors(v) for v in values]
    if not all(isinstance(t, torch.Tensor) for t in tensors) or len({t.dtype for t in tensors}) > 1:
        out[key] = values  # strings, None, sequences: a list
        return
    if len({t.dim() for t in tensors}) > 1:
        out[key] = tensors
        return
    if tensors[0].dim() == 0:
        out[key] = torch.stack(tensors)
        return
    # Shapes always come with arrays, so a batch's keys do not depend on whether its
    # records happen to share a size.
    out[key], out[key + SHAPE_SUFFIX] = _pad(tensors, pads.get(field, 0.0))


def collate(batch: Sequence[Record], pad_values: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Records to one batch: arrays stacked, padded to the batch's largest where shapes
    differ (with ``pad_values[field]``, default 0), and ``"<field>/shape"`` giving each
    record's true shape (for a field of dicts, such as boxes with labels,
    ``"<field>/<key>/shape"``); numbers become tensors; strings, bytes, None and
    sequence fields stay lists."""
    if not batch:
        return {}
    pads = pad_values or {}
    out: dict[str, Any] = {}
    for key in batch[0]:
        _collate_values(key, [record[key] for record in batch], pads, out, key)
    return out


def _check_prefetch(prefetch: int) -> None:
    """Refuse a ``prefetch`` that cannot be right, before anything is read."""
    if prefetch < 1:
        raise ValueError(f"prefetch must be at least 1, not {prefetch}")


class _Collate:
    """A picklable collate bound to a dataset's pad values."""

    def __init__(self, pads: dict[str, float]) -> None:
        self.pads = pads

    def __call__(self, batch: Sequence[Record]) -> dict[str, Any]:
        return collate(batch, self.pads)


class MapDataset(torch.utils.data.Dataset[Any]):
    """Record ``i`` of a split, decoded, as tensors (see :class:`recordkit.RandomAccess`
    for the arguments); a shortcut for ``recordkit.open(path, split).torch()``.
    ``transform`` is applied to each record (after ``to_tensors`` when that is True).
    ``collate_fn`` is :func:`collate` with the fields' pad values."""

    def __init__(
        self,
        path: Paths,
        split: str = "train",
        fields: str | Sequence[str] | None = None,
        *,
        schema: SchemaLike | None = None,
        registry: CodecRegistry | None = None,
        transform: Transform | None = None,
        tensors: bool = True,
        verify: bool = True,
        storage_options: StorageOptions | None = None,
    ) -> None:
        records = RandomAccess(
            path,
            split,
            fields,
            schema=schema,
            registry=registry,
            verify=verify,
            storage_options=storage_options,
        )
        self._attach(records, transform, tensors)

    @classmethod
    def over(
        cls, records: RandomAccess, *, transform: Transform | None = None, tensors: bool = True
    ) -> MapDataset:
        """A MapDataset over records already opened (what :meth:`recordkit.Dataset.torch` gives)."""
        self = cls.__new__(cls)
        self._attach(records, transform, tensors)
        return self

    def _attach(self, records: RandomAccess, transform: Transform | None, tensors: bool) -> None:
        self.records = records
        self.transform = transform
        self.tensors = tensors
        self.collate_fn = _Collate(pad_values(records))

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> Any:
        return self._finish(self.records[int(index)])

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """A batch's records, fetched together (the DataLoader calls this with a batch's
        indices): from a remote dataset, the batch's ranged GETs run concurrently."""
        return [self._finish(record) for record in self.records[[int(i) for i in indices]]]

    def _finish(self, record: Any) -> Any:
        if self.tensors:
            record = to_tensors(record)
        return self.transform(record) if self.transform is not None else record


class IterableDataset(torch.utils.data.IterableDataset[Any]):
    """A split's records streamed in a seeded order, shared between ranks and workers;
    a shortcut for ``recordkit.open(path, split).torch_iterable(...)``.

    ``shuffle``, ``seed``, ``window``, ``rank`` and ``world_size`` make its
    :class:`~recordkit.torch.StreamOrder` (kept as ``order``; :meth:`set_epoch` for a new
    order).

    :param start: resume: a state dict from :meth:`state_dict` or :meth:`loader_state`
        (or, read in one process, a record count).
    :param prefetch: records whose bytes are fetched together, ahead of decoding (from a
        remote dataset: their ranged GETs run concurrently).

    With DataLoader workers each worker reads its slots' records; :meth:`loader_state`
    gives the state after the DataLoader yielded some batches, from which a new
    DataLoader (same options) continues with exactly the batches that were left.
    """

    def __init__(
        self,
        path: Paths,
        split: str = "train",
        fields: str | Sequence[str] | None = None,
        *,
        schema: SchemaLike | None = None,
        registry: CodecRegistry | None = None,
        shuffle: bool = False,
        seed: int = 0,
        window: int = 1024,
        rank: int | None = None,
        world_size: int | None = None,
        start: Start = None,
        transform: Transform | None = None,
        tensors: bool = True,
        verify: bool = True,
        storage_options: StorageOptions | None = None,
        prefetch: int = 64,
    ) -> None:
        order = StreamOrder(shuffle, seed, window, rank, world_size)
        _check_prefetch(prefetch)
        records = RandomAccess(
            path,
            split,
            fields,
            schema=schema,
            registry=registry,
            verify=verify,
            storage_options=storage_options,
        )
        self._attach(records, split, order, start, transform, tensors, prefetch)

    @classmethod
    def over(
        cls,
        records: RandomAccess,
        split: str,
        order: StreamOrder | None = None,
        *,
        start: Start = None,
        transform: Transform | None = None,
        tensors: bool = True,
        prefetch: int = 64,
    ) -> IterableDataset:
        """An IterableDataset over records already opened (what
        :meth:`recordkit.Dataset.torch_iterable` gives), in ``order`` (default: in stored
        order, one rank); ``split`` names them in state dicts."""
        _check_prefetch(prefetch)
        self = cls.__new__(cls)
        order = order if order is not None else StreamOrder()
        self._attach(records, split, order, start, transform, tensors, prefetch)
        return self

    def _attach(
        self,
        records: RandomAccess,
        split: str,
        order: StreamOrder,
        start: Start,
        transform: Transform | None,
        tensors: bool,
        prefetch: int,
    ) -> None:
        #: How this stream orders the split and divides it.
        self.order = order
        self.prefetch = prefetch
        self.records = records
        self.split = split
        self.shuffle = order.shuffle
        self.seed = int(order.seed)
        self.window = order.window
        distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
        self.world_size = (
            order.world_size
            if order.world_size is not None
            else (torch.distributed.get_world_size() if distributed else 1)
        )
        self.rank = (
            order.rank if order.rank is not None else (torch.distributed.get_rank() if distributed else 0)
        )
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank must be in 0..{self.world_size - 1}, not {self.rank}")
        self.transform = transform
        self.tensors = tensors
        self.collate_fn = _Collate(pad_values(self.records))
        self.epoch = 0
        #: Where each of this rank's workers starts (resume), and which worker plays which.
        self._starts: list[int] | None = None
        self._rotation = 0
        self._yielded = 0
        if start is not None:
            self.load_state_dict(start)

    # -- the order ---------------------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Use epoch ``epoch``'s order (call before each epoch, as with DistributedSampler);
        a resumed position applies only to the epoch it was saved in."""
        if epoch != self.epoch:
            self._starts, self._rotation = None, 0
        self.epoch = int(epoch)

    def _options(self, workers: int) -> dict[str, Any]:
        return {
            "split": self.split,
            "shuffle": self.shuffle,
            "seed": self.seed,
            "window": self.window,
            "world_size": self.world_size,
            "rank": self.rank,
            "num_workers": workers,
        }

    def slot_order(self, slot: int, slots: int) -> tuple[np.ndarray, np.ndarray]:
        """``(shard, record)`` arrays: the records slot ``slot`` of ``slots`` reads this
        epoch, in order."""
        shards = self.records.shards
        count = len(shards.counts)
        order = (
            np.random.default_rng([self.seed, self.epoch]).permutation(count)
            if self.shuffle
            else np.arange(count)
        )
        if count >= slots:
            mine = order[slot::slots]
            shard_ids = np.concatenate([np.full(shards.counts[s], s) for s in mine] or [np.zeros(0)])
            numbers = np.concatenate([np.arange(shards.counts[s]) for s in mine] or [np.zeros(0)])
        else:
            all_ids = np.concatenate([np.full(shards.counts[s], s) for s in order])
            all_numbers = np.concatenate([np.arange(shards.counts[s]) for s in order])
            shard_ids, numbers = all_ids[slot::slots], all_numbers[slot::slots]
        shard_ids, numbers = shard_ids.astype(np.int64), numbers.astype(np.int64)
        if self.shuffle and self.window > 1 and len(numbers):
            rng = np.random.default_rng([self.seed, self.epoch, slot, 1])
            perm = np.arange(len(numbers))
            for begin in range(0, len(perm), self.window):
                perm[begin : begin + self.window] = rng.permutation(perm[begin : begin + self.window])
            shard_ids, numbers = shard_ids[perm], numbers[perm]
        return shard_ids, numbers

    def _slot_sizes(self, workers: int) -> list[int]:
        slots = self.world_size * workers
        return [len(self.slot_order(self.rank * workers + w, slots)[0]) for w in range(workers)]

    # -- iterating ---------------------------------------------------------------------------

    def worker_records(self, worker: int, workers: int) -> list[tuple[int, int]]:
        """The ``(shard, record)`` pairs DataLoader worker ``worker`` of ``workers`` reads
        this epoch, from where a resumed state says it left off."""
        if self._starts is not None and len(self._starts) != workers:
            raise ValueError(
                f"the resumed state was saved with {len(self._starts)} DataLoader workers per rank; "
                f"this DataLoader has {workers}: use the same num_workers to resume"
            )
        local = (worker + self._rotation) % workers  # after a resume, worker 0 plays the next one due
        shard_ids, numbers = self.slot_order(self.rank * workers + local, self.world_size * workers)
        begin = self._starts[local] if self._starts is not None else 0
        return list(zip(shard_ids[begin:].tolist(), numbers[begin:].tolist(), strict=True))

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        located = self.worker_records(worker, workers)
        if info is None:
            self._yielded = self._starts[0] if self._starts is not None else 0
        for record in self.records.stream(located, prefetch=self.prefetch):
            if self.tensors:
                record = to_tensors(record)
            if self.transform is not None:
                record = self.transform(record)
            if info is None:
                self._yielded += 1
            yield record

    # -- position -----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The position of what this dataset has yielded when iterated in this process
        (no DataLoader workers), to pass back as ``start=``."""
        return position_state(
            "torch.IterableDataset",
            self._yielded,
            epoch=self.epoch,
            positions=[self._yielded],
            rotation=0,
            **self._options(1),
        )

    def loader_state(
        self, batches: int, batch_size: int, num_workers: int, *, drop_last: bool = False
    ) -> dict[str, Any]:
        """The position after a ``DataLoader(self, batch_size, num_workers=...)`` yielded
        ``batches`` batches this epoch.

        A DataLoader takes batches from its workers in turn (worker 0, 1, ... skipping
        those that have finished); each worker's records are known in advance, so the
        records each one has yielded follow from the count of batches.
        """
        workers = max(num_workers, 1)
        sizes = self._slot_sizes(workers)
        done = list(self._starts) if self._starts is not None else [0] * workers
        pointer = self._rotation
        for _ in range(batches):
            for step in range(workers):
                slot = (pointer + step) % workers
                left = sizes[slot] - done[slot]
                if left >= batch_size or (left > 0 and not drop_last):
                    done[slot] += min(batch_size, left)
                    pointer = (slot + 1) % workers
                    break
            else:
                raise ValueError(f"the DataLoader cannot have yielded {batches} batches: the epoch has fewer")
        return position_state(
            "torch.IterableDataset",
            sum(done),
            epoch=self.epoch,
            positions=done,
            rotation=pointer,
            **self._options(workers),
        )

    def load_state_dict(self, state: Start) -> None:
        """Resume from ``state`` (see ``start=``)."""
        if state is None:
            self._starts, self._rotation = None, 0
            return
        if not isinstance(state, Mapping):
            self._starts, self._rotation = [resolve_start(state, "torch.IterableDataset")], 0
            return
        workers = int(state.get("num_workers", 1))
        resolve_start(state, "torch.IterableDataset", **self._options(workers))
        self.epoch = int(state["epoch"])
        self._starts = [int(p) for p in state["positions"]]
        self._rotation = int(state["rotation"])
