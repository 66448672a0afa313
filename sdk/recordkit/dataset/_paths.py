"""Paths named by a dataset: they never leave the dataset's folder.

A dataset is untrusted input (downloaded, shared, written by another program), and its
``dataset.json`` names files: each shard's ``file`` and each split's ``rejects_file``.
Before recordkit opens, hashes, deletes or writes one, the name must be a plain
relative path inside the dataset folder:

* :func:`check_member_name` (applied when the manifest is loaded, so on every read,
  verify, write, resume and append): a relative path whose parts are plain names of
  printable ASCII (letters, digits, ``_ . -``, not starting with a dot), separated by
  ``/``. That refuses ``..``, absolute paths, drive letters, backslashes, NUL and
  control characters, hidden files (recordkit's temporary files) and odd encodings
  (percent escapes, look-alike Unicode dots and slashes, which some file systems
  normalise into the real ones).
* :func:`resolve_member` (applied when the file is used): the name joined to the
  folder, with every symlink resolved, must still lie inside the (resolved) folder, so
  a shard that is a symlink to ``/etc/passwd`` is refused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from recordkit.errors import ManifestError
from recordkit.storage import Location, location

__all__ = ["check_member_name", "member", "resolve_member"]

_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
#: Deepest folder nesting of a listed file (recordkit itself writes none).
_MAX_PARTS = 8
_MAX_LENGTH = 1024


def check_member_name(name: object, *, what: str = "file") -> str:
    """``name`` if it is a safe relative path (see the module docs); else ValueError
    saying what is wrong (pydantic turns it into a ManifestError naming the entry)."""
    if not isinstance(name, str):
        raise ValueError(f"{what} must be a string, not {type(name).__name__}")
    if not name:
        raise ValueError(f"{what} is empty")
    if len(name) > _MAX_LENGTH:
        raise ValueError(f"{what} is longer than {_MAX_LENGTH} characters")
    shown = ascii(name)
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise ValueError(f"{what} {shown} is an absolute path; it must be relative to the dataset folder")
    parts = name.split("/")
    if len(parts) > _MAX_PARTS:
        raise ValueError(f"{what} {shown} is nested more than {_MAX_PARTS} folders deep")
    for part in parts:
        if part in ("", ".", ".."):
            raise ValueError(
                f"{what} {shown} has a {part or 'empty'!r} part; it must stay inside the dataset folder"
            )
        if not _PART.fullmatch(part):
            raise ValueError(
                f"{what} {shown} is not a plain file name (letters, digits, '_', '.', '-', "
                "separated by '/', not starting with '.')"
            )
    return name


def resolve_member(root: Path, name: str, *, shard: str | None = None) -> Path:
    """``root / name``, checked to stay inside ``root`` once symlinks are resolved.

    Raises ManifestError naming the entry when it does not (a file that does not exist
    is not an error here: the callers report a missing shard their own way).
    """
    try:
        check_member_name(name)
    except ValueError as exc:
        raise ManifestError(str(exc), shard=shard if shard is not None else ascii(name)) from None
    path = root / name
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root or real == real_root:
        raise ManifestError(
            f"resolves to {real}, outside the dataset folder {real_root} (a symlink?); refused",
            shard=shard if shard is not None else name,
        )
    return path


def member(root: Location, name: str, *, shard: str | None = None) -> Location:
    """A file the manifest lists: in a local dataset :func:`resolve_member`; in a remote
    one the object ``root/name`` (the name is checked; an object store has no symlinks)."""
    folder = root.local_path
    if folder is not None:
        return location(resolve_member(folder, name, shard=shard))
    try:
        check_member_name(name)
    except ValueError as exc:
        raise ManifestError(str(exc), shard=shard if shard is not None else ascii(name)) from None
    return root.join(name)
