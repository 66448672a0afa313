"""``did you mean`` hints for misspelt names (codecs, options, keys, fields).

A close match is found with :mod:`difflib`; error messages append the hint so that a
typo in a schema file or a record is fixed from the message alone.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """``"did you mean 'x'? "`` for the closest of ``choices`` to ``name``, or ``""``
    when none is close (or ``name`` is not a string); messages put it before the list
    of valid names: ``unknown key 'nme' (did you mean 'name'? allowed: ...)``."""
    if not isinstance(name, str):
        return ""
    options = sorted(set(choices))
    matches = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    if not matches:  # case differences alone ("Image") count as close
        matches = [c for c in options if c.lower() == name.lower()][:1]
    return f"did you mean {matches[0]!r}? " if matches else ""
