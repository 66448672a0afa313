"""Functions of recordkit's ``tf.data`` pipelines, traced as written.

``tf.data`` converts every function it traces with AutoGraph (Python ``if`` and ``for``
on tensors rewritten into graph ops) unless told not to. recordkit's pipeline functions
and codecs' batched decodes branch in the graph explicitly (``tf.cond``) and loop over
Python values only, so the conversion changes nothing in them but costs a few
milliseconds of CPU at every build of a read: a large share of starting a small one
(the read of a field group's embeddings, say).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["traced_as_written"]

_Function = TypeVar("_Function", bound=Callable[..., Any])


def traced_as_written(function: _Function) -> _Function:
    """``function``, for a ``tf.data`` transformation to trace without AutoGraph."""
    import tensorflow as tf

    converted: _Function = tf.autograph.experimental.do_not_convert(function)
    return converted
