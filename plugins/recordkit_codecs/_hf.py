"""Shared pieces of the built-in codecs' Hugging Face features (:class:`recordkit.HfDescribed`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["encoded_bytes", "plain_value", "value_entry"]


def value_entry(dtype: str) -> dict[str, Any]:
    """A ``datasets.Value`` of numpy dtype ``dtype`` (``str`` is Value's ``string``)."""
    return {"dtype": "string" if dtype == "str" else dtype, "_type": "Value"}


def plain_value(decode: Callable[[Mapping[str, Any]], Any]) -> Callable[[Mapping[str, Any]], Any]:
    """The column value of a codec whose decoded value is small: ``decode``'s result as
    plain Python (numpy arrays as nested lists, numpy numbers as numbers)."""

    def value(wire: Mapping[str, Any]) -> Any:
        decoded = decode(wire)
        return decoded.tolist() if isinstance(decoded, (np.ndarray, np.generic)) else decoded

    return value


def encoded_bytes(wire: Mapping[str, Any]) -> dict[str, Any]:
    """An Image or Audio column's value: the stored encoded bytes as they are, no path."""
    return {"bytes": bytes(wire[""]), "path": None}
