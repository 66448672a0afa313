"""Hooks that SIGKILL the running process at a chosen moment of a write (used by the ``_killed_*`` scripts).

``install(kind, k)`` patches ``os.replace``, ``os.fsync`` and ``ShardFile.add`` so that the
K-th occurrence of KIND kills the process: ``record`` (the K-th record added to a shard),
``shard-rename`` (before the K-th shard rename), ``manifest-rename`` (before the K-th save
of dataset.json), ``after-rename`` (right after the K-th rename of any kind) or ``fsync``
(before the K-th fsync). One copy, so that every killed script dies at the same points.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from recordkit.write import _shard_file  # private: patched so that the run is killed at an exact point


def install(kind: str, k: int) -> None:
    """Patch the write path so that the K-th occurrence of KIND SIGKILLs this process."""
    seen = {"count": 0}

    def tick() -> None:
        if seen["count"] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        seen["count"] += 1

    real_replace, real_fsync, real_add = os.replace, os.fsync, _shard_file.ShardFile.add

    def replace(src: Any, dst: Any) -> None:
        manifest = os.path.basename(str(src)).startswith(".dataset.")
        if (kind == "manifest-rename" and manifest) or (kind == "shard-rename" and not manifest):
            tick()
        real_replace(src, dst)
        if kind == "after-rename":
            tick()

    def fsync(fd: int) -> None:
        if kind == "fsync":
            tick()
        real_fsync(fd)

    def add(self: Any, framed: bytes) -> None:
        if kind == "record":
            tick()
        real_add(self, framed)

    os.replace, os.fsync = replace, fsync  # type: ignore[assignment]
    _shard_file.ShardFile.add = add  # type: ignore[method-assign]
