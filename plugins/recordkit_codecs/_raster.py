"""What the raster codecs (``image`` and ``mask``) share about size.

Both have the options ``max_pixels`` (the decompression-bomb limit) and an optional
fixed ``height`` x ``width``, checked the same way when the options are validated and
again for every record. The fields are made here and declared in each options model, so
each model keeps its own field order (what the JSON schema and the docs show).
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic

import recordkit as rk
from recordkit_codecs import _pillow

__all__ = ["check_fixed_size", "check_options", "fixed_size", "max_pixels_field", "side_field"]


def max_pixels_field() -> Any:
    """The ``max_pixels`` option field."""
    return pydantic.Field(
        default=_pillow.DEFAULT_MAX_PIXELS,
        ge=1,
        description="Largest width x height accepted (also bounded by PIL.Image.MAX_IMAGE_PIXELS).",
    )


def side_field(side: Literal["height", "width"], what: str) -> Any:
    """The ``height`` or ``width`` option field: a fixed size every ``what`` must have."""
    return pydantic.Field(default=None, ge=1, description=f"A fixed {side} every {what} must have.")


def check_options(height: int | None, width: int | None, max_pixels: int) -> None:
    """Check the size options together (for a model validator: raises ValueError)."""
    if (height is None) != (width is None):
        raise ValueError("set both height and width (a fixed size), or neither")
    if height is not None and width is not None and height * width > max_pixels:
        raise ValueError(f"the fixed size {height}x{width} is over max_pixels={max_pixels}")


def fixed_size(height: int | None, width: int | None) -> tuple[int, int] | None:
    """``(height, width)`` when the schema declares a fixed size."""
    if height is None or width is None:
        return None
    return (height, width)


def check_fixed_size(what: str, height: int, width: int, fixed: tuple[int, int] | None) -> None:
    """Refuse a ``what`` (image, mask) of ``height`` x ``width`` that is not the fixed size."""
    if fixed is not None and (height, width) != fixed:
        raise rk.errors.InvalidValueError(
            f"{what} is {height}x{width} (height x width), the schema declares a fixed size of "
            f"{fixed[0]}x{fixed[1]}"
        )
