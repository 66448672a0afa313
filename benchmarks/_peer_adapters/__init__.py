"""Each contender of the peer benchmark as its own docs advise (the page in ``DOC``).

An adapter module defines ``DOC`` (the page its use follows), ``write(records, folder)``
(the records written; returns their count), ``read(folder)`` (every record decoded in
this process; returns the count), ``loader(folder, batch)`` (a dataset and the
``DataLoader`` options its docs give; or ``own_loader(folder, batch, workers)`` where
the library has its own loader), ``batch_size(batch)`` (records in one batch the
loader yields) and ``random(folder, indices, batch)`` (the records at ``indices``
decoded, ``batch`` at a time; returns the count, 0 when the library has no random access).
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["CONTENDERS", "adapter"]

#: The contenders and their adapter modules.
CONTENDERS = ("recordkit", "webdataset", "grain", "streaming", "litdata", "huggingface")


def adapter(name: str) -> ModuleType:
    """The adapter module of contender ``name``."""
    if name not in CONTENDERS:
        raise SystemExit(f"unknown contender {name!r}; the contenders are {', '.join(CONTENDERS)}")
    return importlib.import_module(f"benchmarks._peer_adapters._{name}")
