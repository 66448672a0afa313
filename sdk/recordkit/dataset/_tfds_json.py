"""TFDS's JSON files (``dataset_info.json``, ``features.json``) read as untrusted input.

A TFDS folder may come from anywhere (downloaded, shared, edited by hand), so its JSON
is checked as recordkit checks a manifest: UTF-8 text, valid JSON, nested no deeper
than :data:`~recordkit._limits.MAX_NESTING`, a JSON object at the top. Every value read
from it goes through :class:`TfdsJson`, which checks its type where it is read and
raises a :class:`~recordkit.errors.DatasetError` naming the file and the key (``splits[0].
shardLengths[2]``) and saying what was wrong, never a ``KeyError`` or ``TypeError``.

Counts follow TFDS's own encoding: protobuf's JSON writes 64-bit integers as strings of
digits (``"shardLengths": ["5", "5"]``), so a count is a non-negative int or such a
string, and nothing else (no float, no ``"1e8"``, no ``true``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recordkit._limits import MAX_NESTING, nesting_depth
from recordkit.errors import DatasetError

__all__ = ["TfdsJson"]

_DIGITS = re.compile(r"^[0-9]{1,19}$")
#: Longest text shown from a bad value in an error.
_SHOWN = 60


class TfdsJson:
    """One of a TFDS folder's JSON files, parsed and checked (see the module docs):
    ``data`` is its top-level object; the methods read values with their types checked."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: Mapping[str, Any] = self._load()

    def error(self, where: str, problem: str) -> DatasetError:
        """A DatasetError naming this file and the key ``where``."""
        return DatasetError(f"{where}: {problem}" if where else problem, file=str(self.path))

    def _load(self) -> Mapping[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raise DatasetError(
                f"{self.path.parent} is not a TFDS dataset folder (no {self.path.name})"
            ) from None
        except OSError as exc:
            raise self.error("", f"cannot be read: {exc.strerror or exc}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error("", f"is not UTF-8 text (byte {exc.start})") from None
        too_deep = self.error("", f"is nested more than {MAX_NESTING} levels deep")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self.error("", f"not valid JSON ({exc.msg}, line {exc.lineno})") from None
        except RecursionError:
            raise too_deep from None
        except ValueError as exc:  # a number of more than 4300 digits
            raise self.error("", f"not valid JSON ({exc})") from None
        if nesting_depth(data) > MAX_NESTING:
            raise too_deep
        if not isinstance(data, dict):
            raise self.error("", f"must hold a JSON object, not {_kind(data)}")
        return data

    def obj(self, value: Any, where: str, *, default: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
        """``value`` as a JSON object; ``default`` when it is missing (None), else an error."""
        if value is None and default is not None:
            return default
        if not isinstance(value, dict):
            raise self.error(where, f"must be a JSON object, not {_kind(value)}")
        return value

    def items(self, value: Any, where: str) -> list[Any]:
        """``value`` as a JSON list."""
        if not isinstance(value, list):
            raise self.error(where, f"must be a list, not {_kind(value)}")
        return value

    def text(self, value: Any, where: str, default: str = "") -> str:
        """``value`` as a string (missing: ``default``)."""
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(where, f"must be a string, not {_kind(value)}")
        return value

    def count(self, value: Any, where: str) -> int:
        """``value`` as a count: a non-negative int, or a string of digits."""
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
            return value
        if isinstance(value, str) and _DIGITS.match(value) and int(value) < 2**63:
            return int(value)
        raise self.error(where, f"must be a whole number of at least 0, not {_kind(value)}")

    def dimension(self, value: Any, where: str) -> int:
        """``value`` as a tensor dimension: a count, or -1 for a size that varies."""
        if value in (-1, "-1") and not isinstance(value, bool):
            return -1
        return self.count(value, where)


def _kind(value: Any) -> str:
    """``value`` as an error shows it: its JSON type, and short values themselves."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dict, list)):
        return "a JSON object" if isinstance(value, dict) else "a list"
    shown = json.dumps(value)
    return shown if len(shown) <= _SHOWN else f"{shown[:_SHOWN]}... ({len(shown)} characters)"
