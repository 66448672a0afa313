"""Reads by position (sdk/recordkit/storage/_ranges.py, Location.read_range, read_files):
local files, fsspec's in-memory filesystem and the local S3 server, and a client made
per process after a fork."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
import uuid
from pathlib import Path

import pytest
from _object_stores import Bucket

from recordkit.storage import Location, RangeReader, _location, location, read_files, read_ranges

DATA = bytes(range(256)) * 8


def _where(kind: str, tmp_path: Path) -> Path | Location:
    if kind == "path":
        (tmp_path / "blob").write_bytes(DATA)
        return tmp_path / "blob"
    if kind == "local location":
        (tmp_path / "blob").write_bytes(DATA)
        return location(tmp_path / "blob")
    where = location(f"memory://rk-ranges-{uuid.uuid4().hex}/blob")
    where.write_bytes(DATA)
    return where


@pytest.mark.parametrize("kind", ["path", "local location", "memory"])
def test_a_range_reader_reads_the_bytes_asked_for_and_fewer_at_the_end(kind: str, tmp_path: Path) -> None:
    where = _where(kind, tmp_path)
    reader = RangeReader(max_open_files=1)
    assert reader.read(where, 10, 20) == DATA[10:30]
    assert reader.read(where, len(DATA) - 5, 20) == DATA[-5:]
    assert reader.read(where, len(DATA), 8) == b""
    # Only local files are held open (a remote read holds nothing).
    assert len(reader) == (0 if kind == "memory" else 1)
    reader.close()
    assert len(reader) == 0
    if isinstance(where, Location):
        assert where.read_range(3, 4) == DATA[3:7]


def test_read_files_returns_each_files_bytes_or_its_error(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"local a")
    root = location(f"memory://rk-ranges-{uuid.uuid4().hex}")
    root.join("b").write_bytes(b"remote b")
    root.join("c").write_bytes(b"remote c")
    got = read_files(
        [
            location(tmp_path / "a"),
            root.join("c"),
            root.join("gone"),
            root.join("b"),
            location(tmp_path / "gone"),
        ]
    )
    assert got[:2] == [b"local a", b"remote c"]
    assert isinstance(got[2], FileNotFoundError)
    assert got[3] == b"remote b"
    assert isinstance(got[4], FileNotFoundError)
    assert read_files([]) == []


def test_read_files_fetches_objects_from_the_s3_server(s3_bucket: Bucket) -> None:
    root = location(s3_bucket.join("objects"), s3_bucket.storage_options)
    for i in range(5):
        root.join(f"{i}.bin").write_bytes(bytes([i]) * (i + 1))
    got = read_files([root.join(f"{i}.bin") for i in (4, 0, 2)] + [root.join("missing.bin")])
    assert got[:3] == [b"\x04" * 5, b"\x00", b"\x02" * 3]
    assert isinstance(got[3], FileNotFoundError)


#: What the forked child reads: inherited through the fork, not pickled.
_FORKED: list[Location] = []


def _client_in_child() -> tuple[bool, bool, bytes]:
    where = _FORKED[0]
    inherited = where._fs
    assert inherited is not None
    fresh = where.fs
    return fresh is not inherited, inherited in _location._INHERITED, where.read_range(0, 4)


@pytest.mark.slow
def test_a_forked_child_makes_its_own_client(s3_bucket: Bucket) -> None:
    where = location(s3_bucket.join("blob"), s3_bucket.storage_options)
    where.write_bytes(DATA)
    assert where.read_range(0, 4) == DATA[:4]  # the parent's client exists and has connected
    parent_client = where.fs
    _FORKED[:] = [where]
    with multiprocessing.get_context("fork").Pool(1) as pool:
        fresh, kept, data = pool.apply(_client_in_child)
    assert (fresh, kept, data) == (True, True, DATA[:4])
    assert where.fs is parent_client  # the parent keeps its own
    assert where.read_range(4, 4) == DATA[4:8]


def test_a_location_pickles_without_its_client() -> None:
    where = location(f"memory://rk-ranges-{uuid.uuid4().hex}/blob")
    where.write_bytes(DATA)
    assert where._fs is not None
    clone = pickle.loads(pickle.dumps(where))
    assert (clone.url, clone._fs) == (where.url, None)
    assert clone.read_range(0, 2) == DATA[:2]


def test_read_many_mixes_local_and_remote_ranges_in_order(tmp_path: Path) -> None:
    (tmp_path / "blob").write_bytes(DATA)
    remote = location(f"memory://rk-ranges-{uuid.uuid4().hex}/blob")
    remote.write_bytes(DATA[::-1])
    reader = RangeReader()
    got = reader.read_many(
        [
            (tmp_path / "blob", 0, 3),
            (remote, 0, 3),
            (remote.parent.join("gone"), 0, 3),
            (tmp_path / "blob", 9, 2),
        ]
    )
    assert got[:2] == [DATA[:3], DATA[::-1][:3]]
    assert isinstance(got[2], FileNotFoundError)
    assert got[3] == DATA[9:11]


def test_read_ranges_fetches_from_the_s3_server(s3_bucket: Bucket) -> None:
    where = location(s3_bucket.join("blob"), s3_bucket.storage_options)
    where.write_bytes(DATA)
    got = read_ranges([(where, 100, 5), (where, 0, 2), (where, len(DATA) - 1, 9)])
    assert got == [DATA[100:105], DATA[:2], DATA[-1:]]


def test_local_reads_read_each_range_of_local_files_holding_each_open_once(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(DATA)
    (tmp_path / "b").write_bytes(DATA[::-1])
    reader = RangeReader(max_open_files=2)
    files: list[Path | Location] = [tmp_path / "a", location(tmp_path / "b")]
    with reader.local_reads(files, [1, 0, 1, 0], [0, 5, len(DATA) - 2, len(DATA)], [3, 4, 8, 1]) as reads:
        assert reads is not None
        assert list(reads) == [DATA[::-1][:3], DATA[5:9], DATA[::-1][-2:], b""]
    assert len(reader) == 2
    assert all(handle.users == 0 for handle in reader.files._open.values())  # let go after the block
    reader.close()
    assert len(reader) == 0


def test_local_reads_give_none_for_remote_files_or_more_files_than_kept_open(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(DATA)
    remote = location(f"memory://rk-ranges-{uuid.uuid4().hex}/blob")
    remote.write_bytes(DATA)
    reader = RangeReader(max_open_files=1)
    with reader.local_reads([tmp_path / "a", remote], [0, 1], [0, 0], [1, 1]) as reads:
        assert reads is None
    (tmp_path / "b").write_bytes(DATA)
    with reader.local_reads([tmp_path / "a", tmp_path / "b"], [0, 1], [0, 0], [1, 1]) as reads:
        assert reads is None
    assert len(reader) == 0


def test_a_local_read_that_fails_raises_and_lets_its_files_go(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(DATA)
    reader = RangeReader()
    with reader.local_reads([tmp_path / "a"], [0, 0], [0, -1], [1, 1]) as reads:
        assert reads is not None
        with pytest.raises(OSError, match="Invalid argument"):
            list(reads)
    assert all(handle.users == 0 for handle in reader.files._open.values())
    with pytest.raises(FileNotFoundError), reader.local_reads([tmp_path / "gone"], [0], [0], [1]):
        pass


def _open_files_under(folder: Path) -> list[str]:
    """The files under ``folder`` this process holds descriptors of (Linux's /proc)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(folder)):
                found.append(target)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists descriptors through Linux's /proc")
def test_a_reader_dropped_closes_the_files_it_kept_open(tmp_path: Path) -> None:
    # A process that makes readers again and again (a dataset opened each epoch, in a
    # notebook, a sweep) ran out of descriptors: each dropped reader left its files open.
    files = []
    for i in range(3):
        path = tmp_path / f"f{i}"
        path.write_bytes(bytes(range(10)))
        files.append(path)
    for _ in range(5):
        reader = RangeReader(max_open_files=8)
        assert [reader.read(path, 2, 3) for path in files] == [bytes([2, 3, 4])] * 3
        assert sorted(_open_files_under(tmp_path)) == sorted(map(str, files))  # kept open
        del reader
        gc.collect()
        assert _open_files_under(tmp_path) == []
