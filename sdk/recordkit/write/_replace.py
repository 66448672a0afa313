"""Replacing a dataset folder by another as one step: what ``overwrite=True`` uses.

A writer that overwrites writes the new dataset into a sibling staging folder
(``.NAME.rk-new-<id>`` beside ``NAME``); only when it is complete does
:func:`replace_folder` put it in place:

* On Linux, with ``renameat2(RENAME_EXCHANGE)`` (kernel 3.15+, on ext4, xfs, btrfs,
  tmpfs ...), the two folders swap names in one atomic step; the old dataset, now
  under the staging name, is then deleted. At every instant ``NAME`` is the complete
  old dataset or the complete new one, whatever stops the process or the machine.
* Elsewhere (or where the filesystem refuses the exchange): ``NAME`` is renamed to
  ``.NAME.rk-old-<id>``, the staging folder to ``NAME``, and the old one deleted.
  Between the two renames ``NAME`` is briefly absent; a crash exactly then leaves the
  complete old dataset at ``.NAME.rk-old-<id>`` (rename it back).

A crash before the swap leaves ``NAME`` untouched and a staging folder beside it,
which is safe to delete.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import sys
import uuid
from pathlib import Path

from recordkit.write._shard_file import fsync_dir

__all__ = ["replace_folder", "staging_folder"]

_AT_FDCWD = -100
_RENAME_EXCHANGE = 1 << 1


def staging_folder(target: Path) -> Path:
    """A fresh sibling folder name to write the replacement of ``target`` into."""
    return target.parent / f".{target.name}.rk-new-{uuid.uuid4().hex[:12]}"


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names of ``a`` and ``b`` atomically; False when the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(result == 0)


def replace_folder(new: Path, target: Path, *, durable: bool = True) -> None:
    """Put the complete folder ``new`` at ``target``, replacing what is there (see the
    module docs for the guarantee)."""
    if not target.exists():
        os.rename(new, target)
    elif _exchange(new, target):
        shutil.rmtree(new)  # ``new`` now names the old dataset
    else:
        old = target.parent / f".{target.name}.rk-old-{uuid.uuid4().hex[:12]}"
        os.rename(target, old)
        os.rename(new, target)
        shutil.rmtree(old)
    if durable:
        fsync_dir(target.parent)
