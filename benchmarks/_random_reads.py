"""Random reads of a ``RandomAccess``, as the random-access benchmarks time them."""

from __future__ import annotations

import dataclasses
from concurrent.futures import Executor
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import recordkit as rk

__all__ = ["RandomReads"]


@dataclasses.dataclass
class RandomReads:
    """Seeded random indices into ``ds`` (a :class:`recordkit.RandomAccess`) and the two
    reads timed over them: one record at a time, and batches. Seed 0, so every run and
    every benchmark reads the same records."""

    ds: rk.RandomAccess
    singles: list[int]
    batches: list[list[int]]

    @classmethod
    def draw(cls, ds: rk.RandomAccess, singles: int, batched: int, batch: int) -> RandomReads:
        """``singles`` indices (at most one per record) and about ``batched`` more in
        batches of ``batch`` (at least one batch)."""
        n = len(ds)
        rng = np.random.default_rng(0)
        ones = rng.integers(0, n, size=min(n, singles)).tolist()
        batches = [rng.integers(0, n, size=batch).tolist() for _ in range(max(1, min(n, batched) // batch))]
        return cls(ds, ones, batches)

    def one_at_a_time(self) -> int:
        """Read the single indices one by one; the records read."""
        for i in self.singles:
            self.ds[i]
        return len(self.singles)

    def in_batches(self) -> int:
        """Read the batches, each in one call; the records read."""
        return sum(len(self.ds[batch]) for batch in self.batches)

    def in_sorted_batches(self, pool: Executor | None = None) -> int:
        """Read the batches with ``RandomAccess.read_batch`` (one read per contiguous run,
        decoded on ``pool``'s threads when given); the records read."""
        return sum(len(self.ds.read_batch(batch, pool)) for batch in self.batches)
