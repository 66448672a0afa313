"""A writer that SIGKILLs itself at a chosen moment (run as a subprocess by the suite).

Usage: python _killed_writer.py ROOT MODE KIND K N START WORKERS

MODE is write, append or resume; KIND the moment: ``record`` (the K-th record added to
a shard), ``shard-rename`` (before the K-th shard rename), ``manifest-rename`` (before
the K-th manifest rename: K=0 is the very first save, which leaves its temp file),
``after-rename`` (right after the K-th rename of any kind) or ``fsync`` (before the K-th
fsync). With WORKERS > 1 encoding starts in worker processes at once.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _fault_support import SCHEMA, records

import recordkit as rk
from recordkit.write import (  # private: patched so that the writer is killed at an exact point
    _parallel,
    _shard_file,
)

root, mode, kind = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
k, n, start, workers = (int(a) for a in sys.argv[4:8])
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
    if kind == "after-rename":
        _tick()


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
if workers > 1:
    _parallel.START_AFTER_SECONDS = 0  # worker processes from the first batch
rk.write_dataset(
    records(n, start),
    SCHEMA,
    root,
    "train",
    shard_records=7,
    workers=workers,
    append=mode == "append",
    resume=mode == "resume",
    progress=False,
)
