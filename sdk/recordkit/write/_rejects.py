"""The rejects file: one JSON line per record skipped with ``on_error="skip"``.

Each line names the record (its index in the write's input and, when the writer was
given a key, its key), every field that was wrong and why::

    {"index": 7, "key": "cat-7.jpg", "errors": [{"field": "image", "reason": "..."}],
     "message": "record key 'cat-7.jpg', field 'image': ..."}

The manifest counts the lines (``SplitInfo.rejected``); the file is synced before each
manifest update, and a resumed write cuts it back to that count, so the two agree.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from recordkit.dataset._paths import resolve_member
from recordkit.errors import ManifestError, RecordError, RecordkitError
from recordkit.storage import Location

__all__ = ["RejectsFile", "error_entries", "rejects_file_name"]


def rejects_file_name(split: str, token: str | None = None) -> str:
    """``rejects-<split>.jsonl``, next to the shards; with a run ``token`` (a write to an
    object store) ``rejects-<split>.5f0c9a1e.jsonl``: there each run writes the whole file
    under a name of its own, so a taken-over run's late upload never replaces the file a
    later run listed."""
    run = "" if token is None else f".{token}"
    return f"rejects-{split}{run}.jsonl"


def error_entries(error: RecordkitError) -> list[dict[str, Any]]:
    """Each wrong field of a record's error as ``{"field": ..., "reason": ...}``."""
    inner = error.errors if isinstance(error, RecordError) and error.errors else [error]
    return [{"field": e.field, "reason": e.reason} for e in inner]


class RejectsFile:
    """Appends rejected records to ``rejects-<split>.jsonl``; created on the first reject."""

    def __init__(
        self,
        where: Location,
        split: str,
        *,
        keep: int,
        durable: bool = True,
        file: str | None = None,
        token: str | None = None,
    ) -> None:
        """Open for appending after the first ``keep`` lines (later lines are dropped:
        they belong to shards that were never completed). ``file`` is the name the
        manifest lists, when it lists one (a remote overwrite puts it in a generation
        folder); default ``rejects-<split>.jsonl``.

        In a remote dataset (an object store cannot append), the lines are kept in
        memory and the whole object is written again (one PUT) by each :meth:`sync`
        that has new lines: a reject file holds few lines. With a run ``token`` those
        lines are read from ``file`` and written under the run's own name
        (:func:`rejects_file_name`), which the manifest lists from the run's next save.
        """
        self.name = file if file is not None else rejects_file_name(split)
        self._lines: list[str] | None = None
        self._remote: Location | None = None
        self._dirty = False
        self._lock = threading.Lock()
        folder = where.local_path
        if folder is None:
            self._lines = _remote_lines(where.join(self.name), keep, where)
            if token is not None:
                self.name = rejects_file_name(split, token)
            self._remote = where.join(self.name)
            self.path = Path(self.name)
            self._durable = durable
            self._file: Any = None
            return
        # Never appended or cut through a symlink planted out of the dataset folder.
        self.path = resolve_member(folder, self.name)
        self._durable = durable
        self._file = None
        if self.path.exists():
            _truncate_lines(self.path, keep)
        elif keep:
            raise ManifestError(
                f"the manifest counts {keep} rejected records but {self.name} is missing", file=str(where)
            )

    def add(self, index: int, key: str | None, error: RecordkitError) -> None:
        entry: dict[str, Any] = {"index": index}
        if key is not None:
            entry["key"] = key
        entry["errors"] = error_entries(error)
        entry["message"] = str(error)
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._lines is not None:
                self._lines.append(line)
                self._dirty = True
                return
            if self._file is None:
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
            self._file.write(line)

    def sync(self) -> None:
        """Flush (to disk, when durable), so that a manifest written next never counts
        lines not there."""
        with self._lock:
            if self._remote is not None and self._lines is not None and self._dirty:
                self._remote.write_bytes("".join(self._lines).encode("utf-8"))
                self._dirty = False
            if self._file is not None:
                self._file.flush()
                if self._durable:
                    os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None

    def cut_to(self, keep: int) -> None:
        """Close, and drop every line after the first ``keep`` (those the manifest
        does not count, after a write stopped)."""
        self.close()
        if self._lines is not None:
            if len(self._lines) > keep:
                del self._lines[keep:]
                self._dirty = True
                self.sync()
            return
        if self.path.exists():
            _truncate_lines(self.path, keep)


def _remote_lines(where: Location, keep: int, root: Location) -> list[str]:
    """The first ``keep`` lines of a remote rejects file ([] when there is none yet)."""
    try:
        text = where.read_bytes().decode("utf-8")
    except FileNotFoundError:
        if keep:
            raise ManifestError(
                f"the manifest counts {keep} rejected records but {where.name} is missing", file=str(root)
            ) from None
        return []
    return text.splitlines(keepends=True)[:keep]


def _truncate_lines(path: Path, keep: int) -> None:
    """Cut ``path`` after its first ``keep`` lines."""
    with open(path, "rb+") as f:
        position = 0
        for _ in range(keep):
            line = f.readline()
            if not line:
                break
            position += len(line)
        f.truncate(position)
