"""A batch built straight in shared memory inside a DataLoader worker.

A tensor that a worker puts on the DataLoader's queue is moved into shared memory
first, a copy of every byte, unless its storage is there already (what PyTorch's own
``default_collate`` arranges for the batches it stacks in a worker). A batch-first
worker lays every numeric array of its batch out in one of its reused shared-memory
buffers (:mod:`recordkit.read._shared_ring`), decodes into it through numpy views and
hands the batch over: it crosses to the main process as one shared-memory segment, with
no copy and, once the buffer has been used, no page fault. Outside a worker (no workers,
:class:`~recordkit.torch.ThreadLoader`) the arrays are ordinary ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch.utils.data

from recordkit.read._batch_assemble import BatchLayout, Record, assemble_batch
from recordkit.read._shared_ring import worker_ring
from recordkit.read._torch import to_tensors

__all__ = ["batch_tensors"]


def batch_tensors(records: Sequence[Record], layout: BatchLayout) -> dict[str, Any]:
    """``records`` as one batch of tensors laid out by ``layout``: built in a reused
    shared-memory buffer in a DataLoader worker, in ordinary memory anywhere else."""
    if torch.utils.data.get_worker_info() is None:
        batch: dict[str, Any] = to_tensors(assemble_batch(records, layout))
        return batch
    arrays = worker_ring().arrays(records)
    return arrays.batch(assemble_batch(records, layout, arrays))
