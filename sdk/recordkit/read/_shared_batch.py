"""A batch built straight in shared memory inside a DataLoader worker.

A tensor that a worker puts on the DataLoader's queue is moved into shared memory
first, a copy of every byte, unless its storage is there already (what PyTorch's own
``default_collate`` arranges for the batches it stacks in a worker). A batch-first
worker allocates each padded or joined array of its batch in shared memory
(:class:`SharedArrays`), decodes into it through a numpy view and hands the tensor
itself over: the batch crosses to the main process with no copy, and the padding of a
zero-padded field costs nothing (fresh shared memory is zero). Outside a worker (no
workers, :class:`~recordkit.torch.ThreadLoader`) the arrays are ordinary ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch
import torch.utils.data

from recordkit.read._batch_assemble import BatchLayout, Record, assemble_batch
from recordkit.read._torch import to_tensors

__all__ = ["SharedArrays", "batch_tensors"]


class SharedArrays:
    """An ``Allocate`` (see :mod:`recordkit.read._batch_assemble`) whose arrays are numpy
    views of tensors in shared memory; :meth:`tensors` swaps each view for its tensor."""

    def __init__(self) -> None:
        self._made: dict[int, torch.Tensor] = {}

    def __call__(self, shape: tuple[int, ...], dtype: np.dtype[Any], fill: float) -> np.ndarray:
        like = torch.from_numpy(np.empty(0, dtype))
        # as default_collate does: a new storage in shared memory (zero-filled), no copy
        # (torch leaves these storage calls unannotated)
        storage = cast(Any, like)._typed_storage()._new_shared(math.prod(shape))
        tensor = like.new(storage).view(shape)
        array = tensor.numpy()
        if fill != 0:
            array.fill(fill)
        self._made[_address(array)] = tensor
        return array

    def tensors(self, value: Any) -> Any:
        """``value`` (a batch) with the arrays made here as their shared tensors and any
        other array as a tensor (:func:`~recordkit.read._torch.to_tensors`)."""
        if isinstance(value, np.ndarray):
            made = self._made.get(_address(value))
            if made is not None and tuple(made.shape) == value.shape:
                return made
            return to_tensors(value)
        if isinstance(value, dict):
            return {key: self.tensors(item) for key, item in value.items()}
        return to_tensors(value)


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def batch_tensors(records: Sequence[Record], layout: BatchLayout) -> dict[str, Any]:
    """``records`` as one batch of tensors laid out by ``layout``: built in shared memory
    in a DataLoader worker, in ordinary memory anywhere else."""
    if torch.utils.data.get_worker_info() is None:
        batch: dict[str, Any] = to_tensors(assemble_batch(records, layout))
        return batch
    arrays = SharedArrays()
    shared: dict[str, Any] = arrays.tensors(assemble_batch(records, layout, arrays))
    return shared
