"""PyTorch datasets over recordkit splits, without TensorFlow (``pip install 'recordkit[torch]'``).

``BatchStream`` and ``ThreadLoader`` (the fastest: whole batches of a few large tensors,
from DataLoader workers or from threads), ``BatchMapDataset`` (the same batches, random
access), ``MapDataset`` (random access, any sampler), ``IterableDataset`` (streaming, split
between ranks and workers, seeded shuffles, elastic exact resume), ``MixtureStream`` (a weighted mixture of
datasets, ``rk.mix(...).torch_iterable()``) and ``collate`` (pads what
varies in size); see :mod:`recordkit.read._torch` and the how-to "PyTorch".
"""

from __future__ import annotations

from recordkit.errors import MissingExtraError

try:
    import torch  # noqa: F401  (the extra: checked here, used by the module below)
except ImportError as exc:
    raise MissingExtraError("torch", "torch", purpose="recordkit.torch") from exc

from recordkit.read._batch_loader import BatchMapDataset, BatchStream, ThreadLoader
from recordkit.read._mixture_torch import MixtureStream
from recordkit.read._stream_order import StreamOrder
from recordkit.read._torch import IterableDataset, MapDataset, collate, pad_values, to_tensors

__all__ = [
    "BatchMapDataset",
    "BatchStream",
    "IterableDataset",
    "MapDataset",
    "MixtureStream",
    "StreamOrder",
    "ThreadLoader",
    "collate",
    "pad_values",
    "to_tensors",
]
