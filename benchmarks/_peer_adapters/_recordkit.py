"""recordkit as docs/how-to/pytorch.md advises: ``torch_batches`` under a DataLoader with
``batch_size=None``, ``iter_records(num_threads=2)`` in one process, ``read_batch`` on 2 threads for
random batches (docs/how-to/random-access.md)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import recordkit as rk
from benchmarks._data import MixedRecord
from benchmarks._recordkit import mixed_record, mixed_schema

DOC = "docs/how-to/pytorch.md"


def write(records: list[MixedRecord], folder: Path) -> int:
    rk.write_dataset((mixed_record(r) for r in records), folder / "data", mixed_schema(), progress=False)
    return len(records)


def read(folder: Path) -> int:
    return sum(1 for _ in rk.iter_records(folder / "data", num_threads=2))


def loader(folder: Path, batch: int) -> tuple[Any, dict[str, Any]]:
    stream = rk.open(folder / "data", "train").torch_batches(batch, shuffle=True, seed=0, window=256)
    return stream, {"batch_size": None}


def batch_size(batch: dict[str, Any]) -> int:
    return len(batch["caption"])


def thread_loader(folder: Path, batch: int) -> int:
    """The same batches as ``loader`` with 2 workers, from 2 threads of this process."""
    from recordkit.torch import ThreadLoader

    stream, _ = loader(folder, batch)
    return sum(batch_size(b) for b in ThreadLoader(stream, num_workers=2, threads=2))


def random(folder: Path, indices: list[int], batch: int) -> int:
    """One index at a time, ``ds[i]``; a batch, ``read_batch`` decoding on a pool of 2
    threads (docs/how-to/random-access.md)."""
    ds = rk.RandomAccess(folder / "data")
    if batch == 1:
        return sum(1 for i in indices if ds[i] is not None)
    with ThreadPoolExecutor(2) as pool:
        return sum(
            len(ds.read_batch(indices[i : i + batch], pool=pool)) for i in range(0, len(indices), batch)
        )
