"""Where each shard's records start in a split, found without a pass that builds per-shard state.

Random access maps a global record number to its shard. A cumulative sum of every
shard's record count does it in one ``searchsorted``, but at a million shards it
allocates and fills arrays of a million entries on the first read, several times the
cost of the read itself. :class:`RecordStarts` sums the counts in blocks instead: one
sum per block of :data:`BLOCK` shards (a read-only pass over the counts, a thousand
totals at a million shards), and the cumulative sum of one block only when a record of
that block is first asked for, kept for the next. A split of any size thus costs one
sum over its counts, and each block read costs ``BLOCK`` additions once.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["BLOCK", "RecordStarts"]

#: Shards per block: the cumulative sum of a block is made when a record of it is first read.
BLOCK = 4096


class RecordStarts:
    """The global number of each shard's first record, from each shard's record count."""

    def __init__(self, counts: np.ndarray) -> None:
        self.counts = np.asarray(counts, dtype=np.int64)
        shards = len(self.counts)
        totals = (
            np.add.reduceat(self.counts, np.arange(0, shards, BLOCK)) if shards else np.zeros(0, np.int64)
        )
        #: ``block_starts[b]``: the number of block ``b``'s first record; the last entry is the total.
        self.block_starts = np.concatenate([[0], np.cumsum(totals)]).astype(np.int64)
        self._blocks: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        """The records of every shard."""
        return int(self.block_starts[-1])

    def __getitem__(self, shard: int) -> int:
        """The global number of shard ``shard``'s first record (``shard == len(counts)``:
        the total)."""
        if shard == len(self.counts):
            return self.total
        block, within = divmod(shard, BLOCK)
        return int(self.block_starts[block]) + int(self._block(block)[within])

    def locate(self, index: int) -> tuple[int, int]:
        """``(shard, record)`` of global record ``index`` (0 <= index < total): the last
        shard starting at or before it, so shards without records are passed over."""
        block = int(np.searchsorted(self.block_starts, index, side="right")) - 1
        offset = index - int(self.block_starts[block])
        starts = self._block(block)
        within = int(np.searchsorted(starts, offset, side="right")) - 1
        return block * BLOCK + within, offset - int(starts[within])

    def _block(self, block: int) -> np.ndarray:
        """The record number of each shard of ``block`` from the block's first record."""
        found = self._blocks.get(block)
        if found is None:
            counts = self.counts[block * BLOCK : (block + 1) * BLOCK]
            found = np.zeros(len(counts), dtype=np.int64)
            np.cumsum(counts[:-1], out=found[1:])
            with self._lock:
                found = self._blocks.setdefault(block, found)
        return found
