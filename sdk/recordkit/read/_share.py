"""The part of a split that one worker of a multi-worker job reads.

Both streaming readers (``tf.data`` and the numpy iterator) split a split between
workers the same way (:class:`WorkerShare`), so a worker's share is the same records
whichever reads it; :func:`worker_share` turns a reader's worker options into one.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence
from typing import Any, TypeVar

__all__ = ["WorkerShare", "worker_share"]

_Shard = TypeVar("_Shard")


@dataclasses.dataclass(frozen=True)
class WorkerShare:
    """The part of a split that worker ``index`` of ``count`` reads.

    With at least as many shards as workers, a worker reads every ``count``-th shard,
    starting at its ``index`` (each shard is opened by one worker only); with fewer
    shards, every worker reads every shard and keeps every ``count``-th record, starting
    at its ``index`` (still every record exactly once across the workers).
    """

    count: int
    index: int

    def shards(self, shards: Sequence[_Shard]) -> tuple[tuple[_Shard, ...], bool]:
        """This worker's shards, and whether it must also keep only every ``count``-th
        record of them (True when there are fewer shards than workers)."""
        if len(shards) >= self.count:
            return tuple(shards[self.index :: self.count]), False
        return tuple(shards), True


def worker_share(
    input_context: Any = None,
    num_workers: int | None = None,
    worker_index: int | None = None,
    *,
    names: tuple[str, str] = ("num_workers", "worker_index"),
) -> WorkerShare | None:
    """The share of the split a reader's worker options ask for (None: the whole split).

    ``input_context`` is anything with ``num_input_pipelines`` and ``input_pipeline_id``
    (a ``tf.distribute.InputContext``); ``num_workers`` and ``worker_index`` say the same
    in plain numbers. Give one form or the other; a bad value raises ``ValueError`` (or
    ``TypeError``) naming the option, as ``names`` (the caller's names for the two) spell it.
    """
    count_name, index_name = names
    if input_context is not None:
        if num_workers is not None or worker_index is not None:
            raise ValueError(
                f"give input_context or {count_name} and {index_name}, not both (input_context="
                f"{input_context!r}, {count_name}={num_workers!r}, {index_name}={worker_index!r})"
            )
        missing = [a for a in ("num_input_pipelines", "input_pipeline_id") if not hasattr(input_context, a)]
        if missing:
            raise TypeError(
                "input_context must have num_input_pipelines and input_pipeline_id (a "
                f"tf.distribute.InputContext); {type(input_context).__name__} lacks {' and '.join(missing)}"
            )
        count = _whole(input_context.num_input_pipelines, "input_context.num_input_pipelines")
        index = _whole(input_context.input_pipeline_id, "input_context.input_pipeline_id")
        names = ("input_context.num_input_pipelines", "input_context.input_pipeline_id")
    elif num_workers is None and worker_index is None:
        return None
    elif num_workers is None:
        raise ValueError(f"{index_name} needs {count_name} too (how many workers share the split)")
    elif worker_index is None:
        raise ValueError(f"{count_name} needs {index_name} too (this worker's index, 0 to {count_name} - 1)")
    else:
        count = _whole(num_workers, count_name)
        index = _whole(worker_index, index_name)
        names = (count_name, index_name)
    if count < 1:
        raise ValueError(f"{names[0]} must be at least 1, not {count}")
    if not 0 <= index < count:
        raise ValueError(f"{names[1]} must be in 0..{count - 1} ({names[0]} is {count}), not {index}")
    return WorkerShare(count, index) if count > 1 else None


def _whole(value: Any, name: str) -> int:
    """``value`` as an int: Python and numpy integers pass, anything else (bool, float,
    str) is a TypeError naming ``name``."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {value!r}") from None
