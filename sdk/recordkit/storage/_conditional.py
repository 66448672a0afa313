"""Conditional writes of one remote object: read it with its version, replace it only if
no other writer replaced it meanwhile.

Writers on an object store commit by replacing one object (a dataset's
``dataset.json``). Two writers that both read version 1 and both replace it would each
report success while the second silently drops what the first committed. Here each
write names the version it expects, and fails with :class:`VersionConflictError` when the
object is no longer at that version, using what each store offers:

* **S3** (s3fs): a conditional PUT, enforced by the server in one request: ``If-Match``
  on the ETag read, or ``If-None-Match: *`` when the object must not exist yet. The read
  is s3fs's own consistent one (a HEAD, then a GET with ``If-Match`` on its ETag).
* **GCS** (gcsfs): the object's *generation*, read consistently (the generation, the
  bytes, the generation again, equal). An object that must not exist yet is created
  with gcsfs's ``mode="create"`` (``ifGenerationMatch=0``, enforced by GCS). gcsfs has
  no way to send ``ifGenerationMatch`` with another generation, so a replacement checks
  the generation (one metadata request) just before its PUT: a writer whose PUT lands
  in that gap (the time of one request) is not detected.
* **Any other fsspec store**: the version is the sha256 of the bytes, compared by
  reading the object again just before the PUT (the same gap).
"""

from __future__ import annotations

import hashlib
from typing import Any

from recordkit.storage._location import Location

__all__ = ["VersionConflictError", "Versioned", "read_versioned", "write_if_version"]

#: An object's bytes and its version as its store names it (S3: the ETag; GCS: the
#: generation; else the sha256 of the bytes).
Versioned = tuple[bytes, str]

_S3 = frozenset({"s3", "s3a"})
_GCS = frozenset({"gs", "gcs"})
#: S3's codes for a failed condition: 412, and 409 when two conditional writes race.
_S3_CONFLICT_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict"})
_READ_ATTEMPTS = 5


class VersionConflictError(Exception):
    """The object is not at the version a conditional write expected."""

    def __init__(self, where: Location, found: str) -> None:
        super().__init__(f"{where} {found}")
        self.location = where
        #: What was found instead, in words ("was replaced", "exists", "was deleted").
        self.found = found


def read_versioned(where: Location) -> Versioned | None:
    """The whole remote object and its version, read consistently (None when absent)."""
    if where.is_local:
        raise ValueError(f"{where} is a local path: local writers hold the folder's lock instead")
    fs = where.fs
    key = where._key
    for _ in range(_READ_ATTEMPTS):
        fs.invalidate_cache(key)
        try:
            if where.protocol in _S3:
                return _read_s3(fs, key)
            if where.protocol in _GCS:
                got = _read_gcs(fs, key)
                if got is None:
                    continue  # replaced while it was read: read it again
                return got
            data = bytes(fs.cat_file(key))
            return data, _digest(data)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if not _is_conflict(exc):  # s3fs: replaced between the HEAD and the GET
                raise
    raise VersionConflictError(where, f"kept changing while it was read ({_READ_ATTEMPTS} attempts)")


def write_if_version(where: Location, data: bytes, version: str | None) -> str:
    """Replace the remote object with ``data`` if it is still at ``version`` (None: only
    if it does not exist); its new version. :class:`VersionConflictError` otherwise, with
    nothing written."""
    fs = where.fs
    key = where._key
    if where.protocol in _S3:
        condition: dict[str, Any] = {"mode": "create"} if version is None else {"IfMatch": version}
        try:
            answer = fs.pipe_file(key, data, **condition)
        except FileNotFoundError:  # If-Match on an object deleted meanwhile
            raise VersionConflictError(where, "was deleted") from None
        except OSError as exc:
            if isinstance(exc, FileExistsError) or _is_conflict(exc):
                raise VersionConflictError(where, "was replaced" if version else "exists") from None
            raise
        etag = answer.get("ETag") if isinstance(answer, dict) else None
        return str(etag) if etag else str(fs.info(key, refresh=True)["ETag"])
    if where.protocol in _GCS:
        # The generation checked first, which also catches a creation on servers that
        # do not enforce ifGenerationMatch=0 (the emulator the tests use).
        _check_gcs_generation(where, fs, key, version)
        if version is None:
            try:
                answer = fs.pipe_file(key, data, mode="create")
            except FileExistsError:
                raise VersionConflictError(where, "exists") from None
        else:
            answer = fs.pipe_file(key, data)
        generation = answer.get("generation") if isinstance(answer, dict) else None
        return str(generation) if generation else str(_gcs_generation(fs, key))
    current = read_versioned(where)
    if (current[1] if current else None) != version:
        raise VersionConflictError(where, _found(current is not None, version))
    fs.pipe_file(key, data)
    return _digest(data)


def _read_s3(fs: Any, key: str) -> Versioned:
    # s3fs's file: a HEAD, then GETs with If-Match on the HEAD's ETag, so the bytes are
    # that ETag's (a replacement meanwhile fails the GET instead).
    with fs.open(key, "rb") as file:
        return file.read(), str(file.details["ETag"])


def _read_gcs(fs: Any, key: str) -> Versioned | None:
    before = _gcs_generation(fs, key)
    data = bytes(fs.cat_file(key))
    # Generations never repeat: the same one after the GET means nothing replaced it.
    return (data, before) if _gcs_generation(fs, key) == before else None


def _gcs_generation(fs: Any, key: str) -> str:
    fs.invalidate_cache(key)
    return str(fs.info(key)["generation"])


def _check_gcs_generation(where: Location, fs: Any, key: str, version: str | None) -> None:
    try:
        current: str | None = _gcs_generation(fs, key)
    except FileNotFoundError:
        current = None
    if current != version:
        raise VersionConflictError(where, _found(current is not None, version))


def _found(exists: bool, expected: str | None) -> str:
    if not exists:
        return "was deleted"
    return "was replaced" if expected is not None else "exists"


def _is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` (or the error it came from) is a store's failed-condition answer."""
    seen: BaseException | None = exc
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict) and response.get("Error", {}).get("Code") in _S3_CONFLICT_CODES:
            return True
        if "pre-conditions" in str(seen) or "precondition" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
