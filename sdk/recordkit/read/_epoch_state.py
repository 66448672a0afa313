"""The state of a training read: where an epoch is, as a small JSON-compatible dict.

A state holds the epoch, its progress (:class:`~recordkit.read._epoch_order.Progress`:
a count of the canonical order's first items read, and the few read beyond them) and
what fixes the order: the seed, the shuffle options and the fingerprint of the dataset
(or of the mixture: its sources and weights). It holds nothing of the ranks, workers or
batch size that read it, so any division resumes from it. A state whose order differs
from the reader's is refused with :class:`~recordkit.errors.ResumeStateError` naming each
difference, rather than read as a silently different epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recordkit.errors import ResumeStateError
from recordkit.read._epoch_order import Progress
from recordkit.read._position import plain, record_count

__all__ = ["EPOCH_STATE_FORMAT", "epoch_state", "resumed_progress"]

#: Tags a state dict (and its version).
EPOCH_STATE_FORMAT = "recordkit.epoch/1"
#: The entries of a state that say where it is; every other entry fixes the order.
_PLACE = frozenset({"format", "reader", "epoch", "position", "done", "also"})


def epoch_state(reader: str, epoch: int, progress: Progress, order: Mapping[str, Any]) -> dict[str, Any]:
    """The state of ``reader`` at ``progress`` through epoch ``epoch``; ``order`` is what
    fixes the epoch's order (seed, shuffle, dataset fingerprint ...), checked on resume.
    ``position`` is the number of items of the epoch read."""
    return {
        "format": EPOCH_STATE_FORMAT,
        "reader": reader,
        "epoch": epoch,
        "position": progress.read,
        "done": progress.done,
        "also": list(progress.also),
        **order,
    }


def resumed_progress(
    state: Any, reader: str, order: Mapping[str, Any], length: int
) -> tuple[int | None, Progress]:
    """The epoch (None: the reader's own) and progress to resume from ``state``: a state
    dict from :func:`epoch_state`, or an int (the first items of the epoch's order read).

    A state of another reader, or whose ``order`` entries differ, is a ResumeStateError
    naming them."""
    if isinstance(state, Mapping):
        if state.get("format") != EPOCH_STATE_FORMAT:
            raise ResumeStateError(
                f"start= must be a record count or a state dict saved by {reader}'s state_dict() "
                f"(format {EPOCH_STATE_FORMAT!r}); got format {state.get('format')!r}"
            )
        if state.get("reader") != reader:
            raise ResumeStateError(
                f"start= holds the state of {state.get('reader')!r}; this reader is {reader!r}"
            )
        differ = [
            f"{key}={state.get(key)!r} saved, {value!r} now"
            for key, value in order.items()
            if plain(state.get(key)) != plain(value)
        ]
        # What fixed the saved order but this reader has not (a mixture's state for a split).
        differ += [
            f"{key}={state[key]!r} saved, None now" for key in state if key not in _PLACE and key not in order
        ]
        if differ:
            raise ResumeStateError(
                "start= was saved with other options, so the order of records would differ: "
                + "; ".join(differ)
            )
        try:
            epoch = record_count(state["epoch"], "epoch", "an epoch number")
            progress = Progress(
                length,
                record_count(state["done"], "done"),
                tuple(record_count(p, "also") for p in state["also"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ResumeStateError(f"start= is not a well-formed {reader} state: {exc}") from None
        return epoch, progress
    count = record_count(state, "start")
    if count > length:
        raise ResumeStateError(f"start={count} is past the end of the epoch ({length} records)")
    return None, Progress(length, count)
