"""A ``tf.data`` generator that ends after its first failure, and an exit that frees such
generators' iterators while they can still be freed.

``tf.data.Dataset.from_generator`` followed by a prefetch calls the generator from one of
TensorFlow's threads. An uncaught error raised by the generator keeps, in its traceback,
the ``tf.data`` iterator until the interpreter finalizes; freeing it then, with the GIL
held, waits for the prefetch thread's next call of the generator, which waits for the
GIL: the process hung at exit (seen in 3 of 46 runs of an uncaught ``tf_epochs`` read
error). :class:`FailureEnds` wraps the generator so that the call after a failure ends
at once, and registers :func:`_release_at_exit` when a generator first fails.
"""

from __future__ import annotations

import atexit
import gc
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Iterator
from typing import Any

__all__ = ["FailureEnds"]


class FailureEnds:
    """What ``from_generator`` iterates for one ``tf.data`` iterator: the generator's
    elements, and, once it has failed, nothing more (a call after the failure marks it
    :attr:`drained`).

    A ``tf.data`` iterator whose generator failed may be destroyed while a background
    thread of TensorFlow (the prefetch after ``from_generator``) calls the generator
    once more: the destroying thread holds the GIL and waits for that thread, which
    waits for the GIL. An uncaught error makes this likely at interpreter exit (the
    error's traceback keeps the iterator until the interpreter finalizes, then frees it
    while that call may be pending: the process hung). :func:`_release_at_exit` frees
    such iterators first, once their last call is done."""

    def __init__(self, batches: Iterator[Any]) -> None:
        self._batches = batches
        self.failed = False
        self.drained = False
        _LIVE.add(self)

    def __iter__(self) -> FailureEnds:
        return self

    def __next__(self) -> Any:
        if self.failed:
            self.drained = True
            raise StopIteration
        try:
            return next(self._batches)
        except StopIteration:
            raise
        except BaseException:
            self.failed = True
            _guard_exit()
            raise


#: The generators' iterators alive, to release at exit (:func:`_release_at_exit`).
_LIVE: weakref.WeakSet[FailureEnds] = weakref.WeakSet()
_GUARD = threading.Lock()
_guarded = False
#: How long the exit waits for a failed generator's last call (then frees it anyway).
_EXIT_WAIT = 5.0


def _guard_exit() -> None:
    """Register :func:`_release_at_exit` (once, when a generator first fails)."""
    global _guarded
    with _GUARD:
        if not _guarded:
            atexit.register(_release_at_exit)
            _guarded = True


def _release_at_exit() -> None:
    """At exit, while other threads can still take the GIL: wait (the GIL released) until
    each failed generator has had its last call, then free what an uncaught error's
    traceback keeps (its frames' locals: the ``tf.data`` iterator), so that the iterator
    is destroyed now, with no call of its generator pending, not during finalization."""
    pending = [fetches for fetches in list(_LIVE) if fetches.failed and not fetches.drained]
    deadline = time.monotonic() + _EXIT_WAIT
    while pending and time.monotonic() < deadline:
        time.sleep(0.01)
        pending = [fetches for fetches in pending if not fetches.drained]
    kept = getattr(sys, "last_traceback", None)
    if kept is not None:
        traceback.clear_frames(kept)
    gc.collect()
