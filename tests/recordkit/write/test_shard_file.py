"""Shard names, limits and the temp-then-rename shard file."""

from __future__ import annotations

import gzip
import hashlib
import os
import random
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from recordkit.format._index import read_index  # private: the record-offset index file itself
from recordkit.format._tfrecord import (  # private: frames records by hand, to build or damage shards
    Compression,
    frame_pieces,
    frame_record,
    iter_tfrecords,
)
from recordkit.storage import location
from recordkit.write._shard_file import (
    _CHUNKS_IN_FLIGHT,
    DEFAULT_SHARD_BYTES,
    ChunkPool,
    ShardFile,
    ShardLimits,
    check_split_name,
    new_chunk,
    shard_name,
    shard_pattern,
    temp_pattern,
)


def test_names_sort_in_shard_order_and_carry_split_and_compression() -> None:
    names = [shard_name("train", i, Compression.NONE) for i in (0, 1, 10, 99999)]
    assert names == [
        "train-00000.tfrecord",
        "train-00001.tfrecord",
        "train-00010.tfrecord",
        "train-99999.tfrecord",
    ]
    assert sorted(names) == names
    assert shard_name("test", 3, Compression.GZIP) == "test-00003.tfrecord.gz"
    assert shard_name("test", 3, Compression.ZLIB) == "test-00003.tfrecord.zz"


def test_patterns_do_not_confuse_splits_that_share_a_prefix() -> None:
    pattern = shard_pattern("train")
    assert pattern.match("train-00012.tfrecord.gz")
    assert not pattern.match("train-extra-00012.tfrecord")
    assert not pattern.match(".train-00012.tfrecord.tmp")
    assert temp_pattern("train").match(".train-00012.tfrecord.tmp")
    assert not temp_pattern("train").match(".train-extra-00012.tfrecord.tmp")


@pytest.mark.parametrize("name", ["", "../up", "a/b", ".hidden", "with space"])
def test_bad_split_names(name: str) -> None:
    with pytest.raises(ValueError, match="invalid split name"):
        check_split_name(name)


def test_limits() -> None:
    with pytest.raises(ValueError, match="shard_records"):
        ShardLimits(max_records=0)
    assert ShardLimits(None, None).max_bytes is None


@pytest.mark.parametrize("compression", list(Compression))
def test_a_shard_appears_under_its_final_name_only_when_committed(
    tmp_path: Path, compression: Compression
) -> None:
    shard = ShardFile(location(tmp_path / shard_name("train", 7, compression)), compression)
    records = [bytes([i]) * (i * 1000) for i in range(40)]
    for record in records:
        shard.add(frame_record(record))
    (temp,) = [p.name for p in tmp_path.iterdir()]
    assert temp_pattern("train").match(temp)
    assert temp.startswith(f".train-00007.tfrecord{compression.suffix}.")
    info = shard.commit()
    data = (tmp_path / info.file).read_bytes()
    assert info.index is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == [info.file, info.index.file]
    assert (info.records, info.bytes, info.sha256) == (40, len(data), hashlib.sha256(data).hexdigest())
    read = list(iter_tfrecords(location(tmp_path / info.file), compression))
    assert [d for _, d in read] == records
    # The index: each record's offset in the uncompressed stream, then the stream's end.
    index = read_index(tmp_path / info.index.file)
    assert index.offsets.tolist() == [o for o, _ in read] + [sum(len(frame_record(r)) for r in records)]
    if compression is Compression.GZIP:
        assert gzip.decompress(data) == b"".join(frame_record(r) for r in records)
    elif compression is Compression.ZLIB:
        assert zlib.decompress(data) == b"".join(frame_record(r) for r in records)


def test_a_discarded_shard_leaves_nothing(tmp_path: Path) -> None:
    shard = ShardFile(location(tmp_path / shard_name("train", 0, Compression.NONE)), Compression.NONE)
    shard.add(frame_record(b"x"))
    shard.discard()
    assert list(tmp_path.iterdir()) == []


def test_fits_counts_framed_bytes_and_records(tmp_path: Path) -> None:
    shard = ShardFile(location(tmp_path / shard_name("train", 0, Compression.NONE)), Compression.NONE)
    limits = ShardLimits(max_bytes=100, max_records=3)
    assert shard.fits(1000, limits)  # an empty shard takes any record
    shard.add(b"x" * 60)
    assert shard.fits(40, limits)
    assert not shard.fits(41, limits)
    shard.add(b"x" * 20)
    shard.add(b"x" * 10)
    assert not shard.fits(1, limits)  # three records already
    shard.discard()


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_many_chunks_written_in_the_background_keep_their_order(
    tmp_path: Path, compression: Compression, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ~7 MB in 256 KB chunks: many go through the background thread, more than it holds at once.
    monkeypatch.setattr("recordkit.write._shard_file._CHUNK_BYTES", 256 << 10)
    records = [bytes([i % 251]) * 70_000 + i.to_bytes(4, "little") for i in range(100)]
    shard = ShardFile(location(tmp_path / shard_name("train", 0, compression)), compression)
    for record in records:
        shard.add(frame_record(record))
    info = shard.commit()
    data = (tmp_path / info.file).read_bytes()
    assert (info.bytes, info.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert [d for _, d in iter_tfrecords(location(tmp_path / info.file), compression)] == records


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.ZLIB])
def test_records_framed_into_the_chunk_write_the_bytes_of_framed_records(
    tmp_path: Path, compression: Compression, monkeypatch: pytest.MonkeyPatch
) -> None:
    """add_pieces (the one-process writer's path: each record framed straight into the
    chunk) writes the very bytes that adding framed records writes, through chunk
    hand-offs, reused buffers, and records bigger than a chunk."""
    monkeypatch.setattr("recordkit.write._shard_file._CHUNK_BYTES", 256 << 10)
    rng = random.Random(19)
    records = [
        [rng.randbytes(rng.choice([0, 1, 30, 5_000, 70_000, 300_000])) for _ in range(rng.randint(0, 5))]
        for _ in range(60)
    ]
    by_pieces = ShardFile(location(tmp_path / shard_name("pieces", 0, compression)), compression)
    framed = ShardFile(location(tmp_path / shard_name("framed", 0, compression)), compression)
    for pieces in records:
        size = sum(map(len, pieces))
        by_pieces.add_pieces(pieces, size)
        framed.add(frame_pieces(pieces, size))
    ours, theirs = by_pieces.commit(), framed.commit()
    assert (ours.bytes, ours.sha256, ours.records) == (theirs.bytes, theirs.sha256, theirs.records)
    assert (tmp_path / ours.file).read_bytes() == (tmp_path / theirs.file).read_bytes()
    ours_index = read_index(tmp_path / ours.index.file)
    assert ours_index.offsets.tolist() == read_index(tmp_path / theirs.index.file).offsets.tolist()
    read = [d for _, d in iter_tfrecords(location(tmp_path / ours.file), compression)]
    assert read == [b"".join(pieces) for pieces in records]


def test_chunk_buffers_are_reused_and_made_only_when_a_record_needs_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard makes at most a chunk being filled plus those in flight, whatever its
    size (its memory is bounded, and fresh pages are faulted in only for the first
    chunks); a shard without records makes none."""
    made: list[int] = []

    def counting_chunk(size: int) -> Any:
        made.append(size)
        return new_chunk(size)

    pool = ChunkPool(keep=_CHUNKS_IN_FLIGHT + 1)
    monkeypatch.setattr("recordkit.write._shard_file._CHUNK_BYTES", 256 << 10)
    monkeypatch.setattr("recordkit.write._shard_file.new_chunk", counting_chunk)
    monkeypatch.setattr("recordkit.write._shard_file.CHUNK_POOL", pool)
    empty = ShardFile(location(tmp_path / shard_name("empty", 0, Compression.NONE)), Compression.NONE)
    assert empty.commit().records == 0
    assert made == []
    records = [random.Random(i).randbytes(50_000) for i in range(120)]  # ~6 MB: 24 chunks

    def write(number: int) -> None:
        shard = ShardFile(
            location(tmp_path / shard_name("train", number, Compression.NONE)), Compression.NONE
        )
        for record in records:
            shard.add_pieces([record[:10], record[10:]], len(record))
        info = shard.commit()
        assert [d for _, d in iter_tfrecords(location(tmp_path / info.file))] == records

    write(0)
    assert 1 <= len(made) <= _CHUNKS_IN_FLIGHT + 1
    assert set(made) == {256 << 10}
    first = len(made)
    write(1)  # the next shard takes the buffers the first gave back to the pool
    assert len(made) == first


def test_a_failed_background_write_surfaces_and_leaves_no_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(self: ShardFile, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    def fill_and_commit(shard: ShardFile) -> None:
        for _ in range(200):  # ~14 MB: the error reaches the writer while it adds
            shard.add(frame_record(b"x" * 70_000))
        shard.commit()

    monkeypatch.setattr("recordkit.write._shard_file._CHUNK_BYTES", 256 << 10)
    shard = ShardFile(location(tmp_path / shard_name("train", 0, Compression.NONE)), Compression.NONE)
    monkeypatch.setattr(ShardFile, "_write", disk_full)
    with pytest.raises(OSError, match="No space left"):
        fill_and_commit(shard)
    shard.discard()
    assert list(tmp_path.iterdir()) == []


def test_the_default_shard_size_suits_tfrecord_readers(tmp_path: Path) -> None:
    """Tens to hundreds of MB (see docs/how-to/write-datasets.md, Sharding), and the
    default of the write options."""
    import recordkit as rk

    assert 10 * 2**20 <= DEFAULT_SHARD_BYTES <= 512 * 2**20
    schema = rk.Schema(name="s", fields={"id": rk.FieldSpec(codec="scalar")})
    with rk.DatasetWriter(tmp_path / "d", schema, progress=False) as writer:
        assert writer._limits == ShardLimits(DEFAULT_SHARD_BYTES, None)
    assert "Default: :data:`DEFAULT_SHARD_BYTES` (128 MiB)" in (rk.WriteOptions.__doc__ or "")


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
@pytest.mark.parametrize("durable", [True, False])
def test_a_durable_shard_starts_writeback_of_every_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool, compression: Compression
) -> None:
    # Uncompressed: the encoding thread writes each chunk, the background thread hashes it
    # and starts its writeback; compressed: the background thread does all three.
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr("recordkit.write._shard_file._CHUNK_BYTES", 256 << 10)
    monkeypatch.setattr(
        "recordkit.write._shard_file.start_writeback", lambda fd, offset, size: calls.append((offset, size))
    )
    shard = ShardFile(location(tmp_path / shard_name("train", 0, compression)), compression, durable=durable)
    records = [random.Random(i).randbytes(70_000) for i in range(40)]  # ~2.8 MB, incompressible
    for record in records:
        shard.add(frame_record(record))
    info = shard.commit()
    assert [d for _, d in iter_tfrecords(location(tmp_path / info.file), compression)] == records
    assert info.sha256 == hashlib.sha256((tmp_path / info.file).read_bytes()).hexdigest()
    if not durable:
        assert calls == []
        return
    # The chunks as stored (compressed), one after another, covering the whole file.
    assert len(calls) > 2
    assert [offset for offset, _ in calls] == [sum(size for _, size in calls[:i]) for i in range(len(calls))]
    assert sum(size for _, size in calls) == info.bytes


def test_a_chunk_reaches_its_file_in_bounded_writes_that_may_come_up_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writes of at most _WRITE_PIECE_BYTES (the kernel caches bigger ones in folios that
    # a VM's host may have reclaimed); a write the kernel cuts short is resumed where it stopped.
    from recordkit.write import _shard_file as _sharding

    monkeypatch.setattr(_sharding, "_CHUNK_BYTES", 256 << 10)
    monkeypatch.setattr(_sharding, "_WRITE_PIECE_BYTES", 64 << 10)
    sizes: list[int] = []
    real_write = os.write

    def short_write(fd: int, data: memoryview) -> int:
        sizes.append(len(data))
        return real_write(fd, data[: max(1, len(data) // 2)] if len(sizes) % 3 == 0 else data)

    monkeypatch.setattr(os, "write", short_write)
    records = [random.Random(i).randbytes(50_000) for i in range(20)]  # ~1 MB: several chunks
    shard = ShardFile(
        location(tmp_path / shard_name("train", 0, Compression.NONE)), Compression.NONE, durable=False
    )
    for record in records:
        shard.add(frame_record(record))
    info = shard.commit()
    monkeypatch.undo()
    assert max(sizes) == 64 << 10
    assert len(sizes) > 20
    assert [d for _, d in iter_tfrecords(location(tmp_path / info.file), Compression.NONE)] == records
    assert info.sha256 == hashlib.sha256((tmp_path / info.file).read_bytes()).hexdigest()


def test_writeback_is_a_hint_that_may_be_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recordkit.write import _shard_file as _sharding

    assert _sharding._sync_file_range() is not None or not sys.platform.startswith("linux")
    monkeypatch.setattr(_sharding, "_sync_file_range", lambda: None)
    shard = ShardFile(location(tmp_path / shard_name("train", 0, Compression.NONE)), Compression.NONE)
    shard.add(frame_record(b"x" * 100))
    info = shard.commit()
    assert info.records == 1
    _sharding.start_writeback(0, 0, 0)  # nothing to call: no error


def test_the_chunk_pool_keeps_at_most_its_share_and_none_in_a_forked_child() -> None:
    pool = ChunkPool(keep=1)
    kept, extra = new_chunk(4096), new_chunk(4096)
    pool.give_back([kept, extra])
    assert extra.closed  # beyond its share: the memory is released
    assert not kept.closed
    assert pool.take(8192) is not kept  # only a buffer of the size asked for is reused
    assert pool.take(4096) is kept
    pool.give_back([kept])
    pool.after_fork()  # a child does not reuse its parent's pages
    assert pool.take(4096) is not kept
