"""PyTorch datasets over a recordkit split, without TensorFlow (the ``torch`` extra).

* :class:`MapDataset`: random access (``len`` and ``ds[i]``) through
  :class:`recordkit.RandomAccess`; any sampler works, ``DistributedSampler`` included.
* :class:`IterableDataset`: streaming. Each epoch has one canonical order, a function of
  the seed, the epoch and the dataset alone (:mod:`recordkit.read._epoch_order`: the
  shards shuffled, then the records within windows of ``window``), dealt in blocks of
  ``batch_size`` records to the ``world_size * num_workers`` readers in turn. Every
  record is read exactly once per epoch across all ranks and workers, and a state saved
  with one number of ranks and workers resumes with any other. Records are read by
  their index (one ``pread`` each, one ranged GET each from a remote dataset), so
  resuming skips the records already yielded without reading them.
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
from recordkit.read._epoch_stream import EpochStream, check_prefetch
from recordkit.read._numpy_decode import preload_decoding
from recordkit.read._paths import Paths
from recordkit.read._position import Start
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
        preload_decoding()  # here, before a DataLoader forks its workers
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


class IterableDataset(torch.utils.data.IterableDataset[Any], EpochStream):
    """A split's records streamed in a seeded order, shared between ranks and workers;
    a shortcut for ``recordkit.open(path, split).torch_iterable(...)``.

    ``shuffle``, ``seed``, ``window``, ``rank`` and ``world_size`` make its
    :class:`~recordkit.torch.StreamOrder` (kept as ``order``; :meth:`set_epoch` for a new
    order).

    :param start: resume: a state dict from :meth:`state_dict` or :meth:`loader_state`,
        saved with any number of ranks and workers (or a count of the epoch's first
        records read).
    :param prefetch: records whose bytes are fetched together, ahead of decoding (from a
        remote dataset: their ranged GETs run concurrently); small records up to 8 times
        as many, at most 1 MB (see :meth:`recordkit.RandomAccess.stream`).
    :param batch_size: the DataLoader's batch size: records are dealt to the readers in
        blocks of it, so that the ranks' ``i``-th batches together are the canonical
        order's ``i``-th global batch, whatever the number of workers (None: one record
        at a time).

    With DataLoader workers each worker reads its own blocks; :meth:`loader_state`
    gives the state after the DataLoaders yielded some batches, from which DataLoaders
    with any number of ranks and workers read exactly the records that were left.
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
        batch_size: int | None = None,
    ) -> None:
        order = StreamOrder(shuffle, seed, window, rank, world_size)
        check_prefetch(prefetch)
        records = RandomAccess(
            path,
            split,
            fields,
            schema=schema,
            registry=registry,
            verify=verify,
            storage_options=storage_options,
        )
        self._attach(records, split, order, start, transform, tensors, prefetch, batch_size)

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
        batch_size: int | None = None,
    ) -> IterableDataset:
        """An IterableDataset over records already opened (what
        :meth:`recordkit.Dataset.torch_iterable` gives), in ``order`` (default: in stored
        order, one rank); ``split`` names them in state dicts."""
        check_prefetch(prefetch)
        self = cls.__new__(cls)
        order = order if order is not None else StreamOrder()
        self._attach(records, split, order, start, transform, tensors, prefetch, batch_size)
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
        batch_size: int | None = None,
    ) -> None:
        preload_decoding()  # here, before a DataLoader forks its workers
        distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
        world_size = order.world_size
        if world_size is None:
            world_size = torch.distributed.get_world_size() if distributed else 1
        rank = order.rank
        if rank is None:
            rank = torch.distributed.get_rank() if distributed else 0
        self.transform = transform
        self.tensors = tensors
        self.collate_fn = _Collate(pad_values(records))
        self.attach_epochs(
            records, split, order, prefetch=prefetch, batch_size=batch_size, rank=rank, world_size=world_size
        )
        if start is not None:
            self.load_state_dict(start)

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        records = self.read_share(worker, workers, count=info is None)
        if not self.tensors and self.transform is None:
            return records  # the records as they are: no Python step of ours per record
        return self._finished(records)

    def _finished(self, records: Iterator[Any]) -> Iterator[Any]:
        """``records`` as tensors (``tensors=True``), then through ``transform``."""
        for record in records:
            if self.tensors:
                record = to_tensors(record)
            if self.transform is not None:
                record = self.transform(record)
            yield record
