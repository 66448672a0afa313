"""Limits on untrusted structured input (manifests, schema files): how deep it may nest.

Python's parsers recurse, so JSON or YAML nested a few thousand levels deep ends in a
``RecursionError`` deep inside a library, and data nested a few hundred levels deep can
still exhaust the stack later (validation, dumping). recordkit's own files never nest
more than a dozen levels; :data:`MAX_NESTING` leaves ample room for codec options.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_NESTING", "nesting_depth"]

#: Deepest nesting of lists and mappings accepted in a manifest or a schema file.
MAX_NESTING = 64


def nesting_depth(data: Any, limit: int = MAX_NESTING) -> int:
    """How deeply ``data`` nests lists, tuples and dicts (a scalar is 0), counted without
    recursion; stops counting once ``limit`` is passed (returns ``limit + 1``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        depth += 1
        if depth > limit:
            return limit + 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest
