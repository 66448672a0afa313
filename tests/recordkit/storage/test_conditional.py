"""Conditional writes of one remote object, against moto's S3 server, the GCS emulator
and fsspec's in-memory filesystem: what a writer's commit relies on."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from _object_stores import Bucket

from recordkit.storage import Location, VersionConflictError, location, read_versioned, write_if_version


def _exercise(where: Location) -> None:
    assert read_versioned(where) is None
    first = write_if_version(where, b"one", None)
    assert read_versioned(where) == (b"one", first)
    with pytest.raises(VersionConflictError, match="exists"):
        write_if_version(where, b"two", None)
    second = write_if_version(where, b"two", first)
    assert second != first
    assert read_versioned(where) == (b"two", second)
    with pytest.raises(VersionConflictError, match="was replaced"):
        write_if_version(where, b"three", first)  # a writer that read version one
    assert read_versioned(where) == (b"two", second)  # nothing written
    where.remove()
    with pytest.raises(VersionConflictError, match="was deleted"):
        write_if_version(where, b"four", second)
    assert read_versioned(where) is None


def test_an_object_is_replaced_only_at_the_version_the_writer_read_on_object_stores(bucket: Bucket) -> None:
    _exercise(location(bucket.join("ds", "dataset.json"), bucket.storage_options))


def test_an_object_is_replaced_only_at_the_version_the_writer_read_in_memory() -> None:
    _exercise(location(f"memory://rk-{uuid.uuid4().hex[:12]}/ds/dataset.json"))


def test_local_paths_are_refused_their_writers_hold_the_folder_lock(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="folder's lock"):
        read_versioned(location(str(tmp_path)))
