"""Reading a codec's input when it is encoded bytes or a path to a file of them."""

from __future__ import annotations

import os
from typing import Any

import recordkit as rk

__all__ = ["read_input_bytes"]


def read_input_bytes(value: Any, what: str) -> bytes | None:
    """Encoded bytes from ``value`` when it is bytes or a path; None for other values.

    A path that cannot be read is an InvalidValueError naming the path and the reason.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise rk.errors.InvalidValueError(f"cannot read {what} file {path!r}: {reason}") from None
    return None
