"""``add_fields`` that SIGKILLs itself at a chosen moment (run as a subprocess by the suite).

Usage: python _killed_add_fields.py ROOT KIND K

KIND is ``record`` (the K-th record added to a group shard), ``shard-rename`` (before the
K-th group shard's rename), ``manifest-rename`` (before the K-th save of dataset.json) or
``fsync`` (before the K-th fsync). The group's values are ``DOUBLED``: each record's id
times two, given as an iterable.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _fault_support import SCORES, doubled

import recordkit as rk
from recordkit.write import _shard_file  # private: patched so that the run is killed at an exact point

root, kind, k = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
seen = {"count": 0}


def _tick() -> None:
    if seen["count"] == k:
        os.kill(os.getpid(), signal.SIGKILL)
    seen["count"] += 1


real_replace, real_fsync, real_add = os.replace, os.fsync, _shard_file.ShardFile.add


def replace(src: Any, dst: Any) -> None:
    manifest = os.path.basename(str(src)).startswith(".dataset.")
    if (kind == "manifest-rename" and manifest) or (kind == "shard-rename" and not manifest):
        _tick()
    real_replace(src, dst)


def fsync(fd: int) -> None:
    if kind == "fsync":
        _tick()
    real_fsync(fd)


def add(self: Any, framed: bytes) -> None:
    if kind == "record":
        _tick()
    real_add(self, framed)


os.replace, os.fsync = replace, fsync  # type: ignore[assignment]
_shard_file.ShardFile.add = add  # type: ignore[method-assign]
rk.add_fields(root, "train", SCORES, doubled(root))
