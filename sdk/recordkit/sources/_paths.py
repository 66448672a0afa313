"""Where a source may read: inside the root the user named, and nowhere else.

Annotation files and tables are often downloaded: a COCO ``file_name`` of
``../../.ssh/id_rsa``, a VOC image id with ``../``, or a CSV path column holding
``/etc/passwd`` must not put an outside file into a dataset. Every path a source reads
on behalf of its input goes through :func:`resolve_inside`:

* the name must be text (not a number or a list), not empty, without control
  characters (NUL, line breaks), at most :data:`MAX_PATH_CHARS` characters with no
  part longer than :data:`MAX_PART_BYTES` bytes (a file system's own limits);
* it is refused when it is absolute, when its ``..`` parts climb out of the root, or
  when, once every symlink is resolved, it lands outside the (resolved) root. Only
  metadata is looked at (the link targets), never a byte of the outside file.

``allow_outside_root=True`` (an option of every source) keeps the first checks and
drops the second: absolute names, ``..`` and symlinks are then followed wherever they
lead.

:func:`file_name_like` is the cheap test the table sources use before they ask the file
system whether a value names a file: an arbitrary caption is never tried as a path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

__all__ = ["MAX_PART_BYTES", "MAX_PATH_CHARS", "file_name_like", "resolve_inside"]

#: Longest path name a source follows (Linux's PATH_MAX).
MAX_PATH_CHARS = 4096
#: Longest single part of a path, in bytes of UTF-8 (NAME_MAX of common file systems).
MAX_PART_BYTES = 255

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _name_problem(name: str) -> str | None:
    if not name:
        return "is empty"
    if _CONTROL.search(name):
        return "holds a control character (a NUL byte or a line break)"
    if len(name) > MAX_PATH_CHARS:
        return f"is longer than {MAX_PATH_CHARS} characters"
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_PART_BYTES for part in re.split(r"[/\\]", name)):
        return f"has a part longer than {MAX_PART_BYTES} bytes, more than a file name can be"
    return None


def file_name_like(value: object, suffixes: frozenset[str]) -> bool:
    """Whether ``value`` could name a file with one of ``suffixes`` (lower case, with the
    dot): text within the limits above, ending in such a suffix. Nothing is asked of the
    file system."""
    if not isinstance(value, str) or _name_problem(value) is not None:
        return False
    return PurePosixPath(value.replace("\\", "/")).suffix.lower() in suffixes


def _is_absolute(name: str) -> bool:
    return os.path.isabs(name) or PureWindowsPath(name).is_absolute() or name.startswith("\\")


def resolve_inside(root: Path, name: object, *, allow_outside_root: bool = False) -> Path:
    """``root / name``, checked as the module docs say; ValueError saying why not.

    The path returned is ``root / name`` as the user would write it (not resolved);
    whether it exists is for the caller to ask.
    """
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str):
        raise ValueError(f"must be a file name (text), not {type(name).__name__}")
    problem = _name_problem(name)
    if problem is not None:
        raise ValueError(f"the path {name!r:.300} {problem}")
    path = root / name
    if allow_outside_root:
        return path
    advice = "pass allow_outside_root=True to read files outside it"
    if _is_absolute(name):
        raise ValueError(f"the path {name!r} is absolute; it must be relative to {root} ({advice})")
    if os.path.normpath(name).split(os.sep)[0] == "..":
        raise ValueError(f"the path {name!r} climbs out of {root} through '..' ({advice})")
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real == real_root:
        raise ValueError(f"the path {name!r} names the folder {root} itself, not a file in it")
    if os.path.commonpath([real_root, real]) != real_root:
        raise ValueError(
            f"the path {name!r} resolves to {real}, outside {real_root} (through a symlink) ({advice})"
        )
    return path
