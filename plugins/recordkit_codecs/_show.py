"""What the built-in codecs share to show and count their values (see
:class:`recordkit.Drawable`, :class:`recordkit.Captioned`, :class:`recordkit.Summarized`):
class ids named by a codec's class names, and counts of them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

__all__ = ["class_counts", "class_names"]


def class_names(names: Sequence[str] | None, ids: Sequence[int]) -> list[str]:
    """Each of ``ids`` by its name in ``names``, or as its number when it has none."""
    known = names or ()
    return [known[i] if 0 <= i < len(known) else str(i) for i in ids]


def class_counts(names: Sequence[str] | None, ids: Sequence[int]) -> dict[str, int]:
    """How many times each class of ``ids`` occurs, by name (most common first)."""
    return dict(Counter(class_names(names, ids)).most_common())
