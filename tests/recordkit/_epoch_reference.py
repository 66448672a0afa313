"""The epoch's division and progress written the plain way, over arrays of the whole
epoch: what recordkit's arithmetic (``Division.places``/``sizes``, ``Progress.after``/
``unread_at``) must equal, and what the tests state their expectations with. These were
recordkit's own methods until states stopped laying out arrays of the epoch (the
seventeenth session); only the tests use them now."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from recordkit.read._epoch_order import Division, Progress  # private: the reference for its arithmetic

__all__ = ["advanced", "owners", "read_after", "remaining", "share"]


def owners(division: Division, count: int) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``count`` items to divide, in order: its reader, and its place in
    that reader's sequence (block ``j`` goes to reader ``j % readers``)."""
    index = np.arange(count, dtype=np.int64)
    blocks = index // division.block
    return blocks % division.readers, (blocks // division.readers) * division.block + index % division.block


def share(division: Division, items: np.ndarray, reader: int) -> np.ndarray:
    """What reader ``reader`` reads of ``items``, in their order."""
    owner, _ = owners(division, len(items))
    picked: np.ndarray = items[owner == reader]
    return picked


def read_after(division: Division, items: np.ndarray, taken: Sequence[int]) -> np.ndarray:
    """The items read once reader ``r`` has read the first ``taken[r]`` of its share."""
    owner, place = owners(division, len(items))
    read: np.ndarray = items[place < np.asarray(taken, dtype=np.int64)[owner]]
    return read


def remaining(progress: Progress) -> np.ndarray:
    """The positions ``progress`` has not read yet, in the canonical order."""
    unread = np.ones(progress.length - progress.done, dtype=bool)
    unread[np.asarray(progress.also, dtype=np.int64) - progress.done] = False
    return np.flatnonzero(unread) + progress.done


def advanced(progress: Progress, positions: np.ndarray) -> Progress:
    """``progress`` with ``positions`` read too."""
    seen = np.zeros(progress.length, dtype=bool)
    seen[: progress.done] = True
    seen[list(progress.also)] = True
    seen[positions] = True
    unread = np.flatnonzero(~seen)
    done = int(unread[0]) if len(unread) else progress.length
    return Progress(progress.length, done, tuple(int(p) for p in np.flatnonzero(seen[done:]) + done))
