"""Where a streaming read is: a position to save, and a ``start=`` to resume from.

Every streaming reader (:func:`recordkit.iter_records`, :func:`recordkit.load_dataset`,
:class:`recordkit.torch.IterableDataset`) yields its records in an order fixed by its
options (split, seed, shuffles, worker share). Its position is the number of records it
has yielded in that order; reading again with the same options and ``start=`` that
position yields exactly the records that were left, in the same order.

A position travels as a plain int or as a *state dict*: a JSON-compatible dict holding
the position and the options that fix the order, so that resuming with other options
(another seed, another split) is an error naming them rather than a silently different
epoch.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

__all__ = [
    "STATE_FORMAT",
    "Start",
    "plain",
    "position_state",
    "record_count",
    "resolve_start",
    "tf_data_start",
]

#: Tags a state dict (and its version).
STATE_FORMAT = "recordkit.position/1"
#: What ``start=`` takes: a record count, a state dict, or None (from the beginning).
Start = int | Mapping[str, Any] | None


def position_state(reader: str, position: int, **options: Any) -> dict[str, Any]:
    """The state dict of ``reader`` at ``position`` with the options that fix its order."""
    return {"format": STATE_FORMAT, "reader": reader, "position": position, **options}


def resolve_start(start: Start, reader: str, **options: Any) -> int:
    """The record count to start from, given ``start``.

    An int is taken as is; a state dict must come from the same kind of reader with the
    same ``options`` (those it records), else ValueError naming the differences.
    """
    if start is None:
        return 0
    if isinstance(start, Mapping):
        if start.get("format") != STATE_FORMAT or "position" not in start:
            raise ValueError(
                f"start= must be a record count or a state dict saved by a recordkit reader "
                f"(format {STATE_FORMAT!r}); got keys {sorted(start)}"
            )
        if start.get("reader") != reader:
            raise ValueError(f"start= holds the state of {start.get('reader')!r}; this reader is {reader!r}")
        differ = [
            f"{key}={start[key]!r} saved, {value!r} now"
            for key, value in options.items()
            if key in start and plain(start[key]) != plain(value)
        ]
        if differ:
            raise ValueError(
                "start= was saved with other options, so the order of records would differ: "
                + "; ".join(differ)
            )
        position = start["position"]
    else:
        position = start
    return record_count(position, "start")


def record_count(value: Any, name: str, what: str = "a record count") -> int:
    """``value`` as a count of records (or ``what`` else it counts): an int 0 or more (a
    bool is refused).

    TypeError or ValueError naming ``name`` and the value otherwise; the one check every
    ``start=`` and every count in a saved state goes through."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be {what} (an int), not {value!r}")
    try:
        count = operator.index(value)
    except TypeError:
        or_state = " or a state dict" if name == "start" else ""
        raise TypeError(f"{name} must be {what} (an int){or_state}, not {value!r}") from None
    if count < 0:
        raise ValueError(f"{name} must be 0 or more, not {count}")
    return count


def tf_data_start(start: Start, *, shuffled: bool, seed: int | None, deterministic: bool) -> int:
    """The records :func:`recordkit.load_dataset` skips for ``start=`` (an int: the
    records an earlier read with the same options yielded, batches times batch size).

    Resuming needs the same order again: a shuffled read without a seed, or one allowed
    to be non-deterministic, cannot resume exactly and is refused.
    """
    if isinstance(start, Mapping) and str(start.get("format", "")).startswith("recordkit.epoch/"):
        raise TypeError(
            "start= holds a state of a canonical epoch (saved by state_after, loader_state or "
            "state_dict of an epoch reader); resume it with Dataset.tf_epochs(start=...), which "
            "reads the epoch's order with any number of ranks"
        )
    if start is not None and not isinstance(start, int):
        raise TypeError(
            f"load_dataset's start= is a record count (batches read times batch_size), not {start!r}"
        )
    skip = resolve_start(start, "load_dataset")
    if skip and shuffled and seed is None:
        raise ValueError("start= with shuffle_files or shuffle_buffer needs seed=, or the order differs")
    if skip and not deterministic:
        raise ValueError("start= needs deterministic=True, or the order of records may differ")
    return skip


def plain(value: Any) -> Any:
    """Tuples and lists compare alike, and mapping keys as strings (a state dict may have
    gone through JSON)."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    return value
