"""PyTorch datasets over recordkit splits, without TensorFlow (``pip install 'recordkit[torch]'``).

``MapDataset`` (random access, any sampler), ``IterableDataset`` (streaming, split
between ranks and workers, seeded shuffles, exact resume) and ``collate`` (pads what
varies in size); see :mod:`recordkit.read._torch` and the how-to "PyTorch".
"""

from __future__ import annotations

import importlib.util

from recordkit.errors import MissingExtraError

if importlib.util.find_spec("torch") is None:
    raise MissingExtraError("torch", "torch", purpose="recordkit.torch")

from recordkit.read._torch import IterableDataset, MapDataset, collate, pad_values, to_tensors

__all__ = ["IterableDataset", "MapDataset", "collate", "pad_values", "to_tensors"]
