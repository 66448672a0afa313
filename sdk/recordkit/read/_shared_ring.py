"""A DataLoader worker's ring of reused shared-memory batch buffers.

Why: a batch written into fresh shared memory has the kernel allocate and zero every
4 KiB page of it (shared memory gets no huge pages) and fault each into the worker,
about ten times the cost of writing the same bytes into pages already there. So a worker keeps a few buffers
(slots) alive and lays each batch out in one of them, every numeric array of the batch
in it: the batch crosses to the main process as one shared-memory segment, and from the
second use of a slot on, without a page fault.

Why it cannot overwrite a batch still in use: a slot is written only when nobody holds
a batch laid out in it.

* In the worker, a batch's tensors own a numpy array of the slot made for that batch
  alone; a finalizer on it marks the slot idle when the last of them (or anything the
  worker's code kept of them) is freed.
* Each time a batch is pickled to cross (:meth:`RingBatch.__reduce__`), the slot's
  ``sent`` count (its first 8 bytes, written by the worker only) goes up; in the main
  process :func:`_received` rebuilds the batch as tensors owning a numpy array of the
  slot, whose finalizer counts the slot ``returned`` (its next 8 bytes, written by the
  main process only) when the last tensor, view or slice of that batch is freed,
  however long the program keeps it (a reference cycle frees it later, never earlier).
* A slot is taken again only when it is idle and ``returned`` equals ``sent``. A batch
  pickled but never received keeps its slot from reuse for good: safe, only a slot lost.

When no slot is free (the program keeps batches, or prefetches deeper than the ring),
the worker makes the batch in fresh shared memory as before: no wait, no overwrite. A
tensor of a ring batch sent on its own (not inside its batch) is copied as torch copies
any tensor not in shared memory.
"""

from __future__ import annotations

import copy
import math
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch

from recordkit.read._torch import to_tensors
from recordkit.read._worker_malloc import keep_freed_memory

__all__ = ["RingArrays", "SharedRing", "new_shared", "worker_ring"]

#: Bytes at the start of a slot holding its in-use flag (a cache line: the arrays after it
#: start aligned).
_HEADER = 64
#: Arrays start at multiples of this many bytes in a slot.
_ALIGN = 64
#: A slot holds this much more than the largest batch seen (torch allocates a shared
#: segment's every byte when it makes it, so a slot is sized to the batches).
_HEADROOM = 1.25


def new_shared(shape: tuple[int, ...], dtype: np.dtype[Any]) -> torch.Tensor:
    """A tensor in fresh shared memory, as ``default_collate`` makes one in a worker (no
    copy when it is sent); torch reserves all of it as it makes it, zero-filled."""
    like = torch.from_numpy(np.empty(0, dtype))
    # (torch leaves these storage calls unannotated)
    storage = cast(Any, like)._typed_storage()._new_shared(math.prod(shape))
    return like.new(storage).view(shape)


class _Slot:
    """One reused buffer: its shared tensor, its ``sent`` and ``returned`` counts, and
    whether the worker still holds a batch laid out in it."""

    def __init__(self, size: int) -> None:
        self.tensor = new_shared((size,), np.dtype(np.uint8))
        self.counts = self.tensor[:16].numpy().view(np.int64)
        self.size = size
        self.busy = False

    def free(self) -> bool:
        return not self.busy and int(self.counts[0]) == int(self.counts[1])


def _idle(slot: _Slot) -> None:
    slot.busy = False


class SharedRing:
    """A worker's slots (see the module docstring), made as batches need them, up to
    ``slots`` of them (a DataLoader's default ``prefetch_factor`` of 2 keeps about three
    of a worker's batches alive at once)."""

    def __init__(self, slots: int = 4) -> None:
        self.slots: list[_Slot] = []
        self.limit = slots
        self.largest = 0  # the most bytes a batch has laid out in a slot

    def take(self, guess: int) -> _Slot | None:
        """A free slot, marked busy (replaced by a larger one first when it is smaller
        than the largest batch seen), a new one while there are fewer than ``slots``, or
        None; ``guess`` is the batch's size in bytes before any batch has been seen."""
        wanted = int(_HEADROOM * max(self.largest, guess)) + _HEADER
        chosen: _Slot | None = None
        for number, slot in enumerate(self.slots):
            if slot.free():
                chosen = slot if slot.size >= self.largest else _Slot(wanted)
                self.slots[number] = chosen
                break
        if chosen is None and len(self.slots) < self.limit:
            chosen = _Slot(wanted)
            self.slots.append(chosen)
        if chosen is not None:
            chosen.busy = True
        return chosen

    def arrays(self, records: Sequence[Mapping[str, Any]]) -> RingArrays:
        """An allocator for the batch of ``records`` (:class:`RingArrays`)."""
        return RingArrays(self, self.take(_batch_bytes(records)))


def _batch_bytes(records: Sequence[Mapping[str, Any]]) -> int:
    """At most the bytes the batch of ``records`` lays out in a slot: per field, each
    record's array counted at the batch's largest shape (what padding makes; joining
    makes no more), its shape row and its alignment; numbers as 8 bytes. The first
    slot is sized by it, so a worker's first buffers are not made larger than its
    batches need (every byte of a new buffer is reserved, and costs, as it is made)."""
    if not records:
        return 0
    return sum(_field_bytes([record[key] for record in records]) for key in records[0])


def _field_bytes(values: list[Any]) -> int:
    first = values[0]
    if isinstance(first, Mapping) and all(isinstance(v, Mapping) for v in values):
        return sum(_field_bytes([v[key] for v in values]) for key in first)
    if all(isinstance(v, (int, float, bool)) for v in values):
        return 8 * len(values) + _ALIGN
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    if len(arrays) < len(values) or len({a.ndim for a in arrays}) > 1:
        return 0  # strings, absent values, sequences: a list, not laid out
    ndim = int(arrays[0].ndim)
    largest = np.max([a.shape for a in arrays], axis=0) if ndim else np.zeros(0, np.int64)
    itemsize = int(max(a.dtype.itemsize for a in arrays))
    values_bytes = len(arrays) * int(np.prod(largest)) * itemsize
    return values_bytes + 8 * len(arrays) * max(ndim, 1) + 2 * _ALIGN


@dataclass(frozen=True)
class _View:
    """Where one array of a ring batch lies in its slot (what crosses instead of the
    tensor): its first byte, shape, strides in bytes and numpy dtype."""

    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str


class RingArrays:
    """An ``Allocate`` (:mod:`recordkit.read._batch_assemble`) that lays one batch's
    arrays out one after another in ``slot``, and an array that does not fit (or every
    array, with no slot) in fresh shared memory; :meth:`batch` makes the batch that crosses."""

    def __init__(self, ring: SharedRing, slot: _Slot | None) -> None:
        self.ring = ring
        self.slot = slot
        self.used = _HEADER
        self._fresh: dict[int, torch.Tensor] = {}
        self._whole: np.ndarray | None = None
        if slot is not None:
            self._whole = slot.tensor.numpy()  # this batch's own array of the slot
            weakref.finalize(self._whole, _idle, slot)

    def __call__(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
        size = math.prod(shape) * dtype.itemsize
        begin = -(-self.used // _ALIGN) * _ALIGN
        if self._whole is not None:
            self.used = begin + size  # what the slot needs (it grows to it if it is short)
            if begin + size <= self._whole.shape[0]:
                return self._whole[begin : begin + size].view(dtype).reshape(shape)
        tensor = new_shared(shape, dtype)
        array = tensor.numpy()
        self._fresh[_address(array)] = tensor
        return array

    def batch(self, value: dict[str, Any]) -> dict[str, Any]:
        """``value`` (a batch made with this allocator) as tensors: a :class:`RingBatch`
        when it lies in a slot, else a dict of tensors in fresh shared memory."""
        tensors = self._tensors(value)
        self._whole = None  # the batch's tensors hold the slot busy from here on
        if self.slot is None:
            return cast(dict[str, Any], tensors)
        self.ring.largest = max(self.ring.largest, self.used)
        return RingBatch(tensors, self.slot)

    def _tensors(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {key: self._tensors(item) for key, item in value.items()}
        if isinstance(value, np.ndarray):
            fresh = self._fresh.get(_address(value))
            if fresh is not None and tuple(fresh.shape) == value.shape:
                return fresh
        return to_tensors(value)  # arrays of the slot: tensors owning them


class RingBatch(dict[str, Any]):
    """A batch laid out in a slot: in the worker, a dict of tensors over the slot; it
    crosses to the main process as the slot and where each array lies in it, and
    arrives as a plain dict (see the module docstring)."""

    def __init__(self, tensors: dict[str, Any], slot: _Slot) -> None:
        super().__init__(tensors)
        self._slot = slot

    def __reduce__(self) -> tuple[Any, ...]:
        slot = self._slot
        begin = slot.tensor.data_ptr()
        crossing = _crossing(dict(self), begin, begin + slot.size)
        slot.counts[0] += 1
        return (_received, (slot.tensor, crossing))

    def __copy__(self) -> RingBatch:
        return RingBatch(dict(self), self._slot)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        copied: dict[str, Any] = copy.deepcopy(dict(self), memo)
        return copied


def _crossing(value: Any, begin: int, end: int) -> Any:
    """``value`` with each tensor lying in the slot at ``begin:end`` as its :class:`_View`."""
    if isinstance(value, dict):
        return {key: _crossing(item, begin, end) for key, item in value.items()}
    if isinstance(value, torch.Tensor) and value.device.type == "cpu" and begin <= value.data_ptr() < end:
        try:
            dtype = torch.empty(0, dtype=value.dtype).numpy().dtype
        except TypeError:  # no numpy dtype (bfloat16): sent as a copy
            return value
        size = value.element_size()
        return _View(
            value.data_ptr() - begin, tuple(value.shape), tuple(size * s for s in value.stride()), dtype.str
        )
    return value


def _received(slot: torch.Tensor, crossing: dict[str, Any]) -> dict[str, Any]:
    """A ring batch, unpickled in the main process (see the module docstring)."""
    counts = slot[:16].numpy().view(np.int64)  # its own array: it does not hold ``whole``
    whole = slot.numpy()
    weakref.finalize(whole, _returned, counts)
    batch: dict[str, Any] = _unpack(crossing, whole)
    return batch


def _returned(counts: np.ndarray) -> None:
    counts[1] += 1


def _unpack(value: Any, whole: np.ndarray) -> Any:
    if isinstance(value, dict):
        return {key: _unpack(item, whole) for key, item in value.items()}
    if isinstance(value, _View):
        array = np.ndarray(value.shape, np.dtype(value.dtype), whole, value.offset, value.strides)
        return torch.from_numpy(array)  # owns ``array``, whose base is ``whole``
    return value


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


_rings: dict[int, SharedRing] = {}


def worker_ring() -> SharedRing:
    """This DataLoader worker's ring (made on first use; a forked worker makes its own,
    and tells its malloc to keep freed memory: :mod:`recordkit.read._worker_malloc`)."""
    ring = _rings.get(os.getpid())
    if ring is None:
        _rings.clear()  # a ring inherited through a fork belongs to the parent
        ring = _rings[os.getpid()] = SharedRing()
        keep_freed_memory()  # the worker's decoded arrays reuse its pages too
    return ring
