"""Sizes for people, in one style everywhere recordkit shows them (the CLI, the writer's
progress bar): binary units, ``"1.2 KiB"``."""

from __future__ import annotations

__all__ = ["human_bytes"]


def human_bytes(size: float) -> str:
    """A byte count for people: ``"512 B"``, ``"1.2 KiB"``, ``"3.4 MiB"``."""
    if size < 1024:
        return f"{size:.0f} B" if float(size).is_integer() else f"{size:.1f} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        size /= 1024
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover
