"""``ds.records()`` reads a shard a chunk at a time (sdk/recordkit/read/_shard_chunks.py):
the records, their order and every error are those of the record-by-record read whatever
the chunk's size (records straddling a chunk's edge, records larger than a chunk, a
field group's files joined), a damaged record right after an edge or a file cut short in
a later chunk is named as before after the records before it, and the memory a reader
holds is about one chunk and one record, not the shard."""

from __future__ import annotations

import itertools
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import assert_same

import recordkit as rk
from recordkit.errors import CorruptRecordError
from recordkit.format._tfrecord import (  # private: to read, damage and forge records by hand
    CRC_FIELD,
    FRAMING_BYTES,
    HEADER_BYTES,
    LENGTH_FIELD,
    iter_tfrecords,
    masked_crc,
)
from recordkit.read import _shard_chunks  # private: the chunk's size, and the buffers a read holds
from recordkit.read._shard_chunks import ChunkedRecords  # private: the chunked reader itself
from recordkit.storage import location
from recordkit.storage._ranges import read_into  # private: the read the chunked reader makes

SCHEMA = rk.Schema(
    name="captions",
    fields={
        "caption": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 50}),
    },
)
GROUP = rk.Schema(
    name="scores",
    fields={"vector": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [6]})},
)
RECORDS = 600
#: Chunk sizes: every record larger than a chunk (16), most of them (64), a few records a
#: chunk (500), many (4 KiB), the whole shard (1 MiB).
CHUNKS = [16, 64, 500, 4096, 1 << 20]


def _captions(count: int, seed: int) -> list[dict[str, Any]]:
    """Records of varied sizes (captions of 0 to 300 characters, a few of one length:
    parsed together), small on average: read a chunk at a time."""
    rng = np.random.default_rng(seed)
    return [
        {"caption": "x" * (7 if i % 3 == 0 else int(rng.integers(0, 300))), "label": int(rng.integers(0, 50))}
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def captions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chunks") / "data"
    rk.write_dataset(_captions(RECORDS, 5), path, SCHEMA, shard_records=400, progress=False)
    return path


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The captions with a field group's file joined to each shard (records of one size)."""
    path = tmp_path_factory.mktemp("grouped") / "data"
    rk.write_dataset(_captions(RECORDS, 6), path, SCHEMA, shard_records=400, progress=False)
    rng = np.random.default_rng(7)
    added = [{"vector": rng.normal(size=6).astype(np.float32)} for _ in range(RECORDS)]
    rk.add_fields(path, "train", GROUP, added, name="scores")
    return path


def _shard_file(path: Path) -> Path:
    first = rk.Manifest.load(path).split("train").shards[0]
    return path / first.file


def _chunked(monkeypatch: pytest.MonkeyPatch, chunk: int) -> list[int]:
    """Read with chunks of ``chunk`` bytes; the records taken through the chunked reader."""
    monkeypatch.setattr(_shard_chunks, "CHUNK_BYTES", chunk)
    taken: list[int] = []
    take = ChunkedRecords.take

    def counted(self: ChunkedRecords, count: int) -> np.ndarray:
        taken.append(count)
        return take(self, count)

    monkeypatch.setattr(ChunkedRecords, "take", counted)
    return taken


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("which", ["captions", "grouped"])
def test_records_read_a_chunk_at_a_time_are_those_of_the_record_by_record_read(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, which: str, chunk: int
) -> None:
    path: Path = request.getfixturevalue(which)
    expected = list(rk.open(path).records(on_corrupt="skip"))  # record by record, decoded one by one
    taken = _chunked(monkeypatch, chunk)
    ds = rk.open(path)
    assert_same(expected, list(ds.records()), f"chunks of {chunk} bytes")
    files = 2 if which == "grouped" else 1
    assert sum(taken) == RECORDS * files  # every record through the chunked read, none by the fallback
    assert_same(expected[250:], list(ds.records(start=250)), "resumed")


@pytest.mark.parametrize("chunk", [16, 100, 333, 4096])
def test_the_chunked_reader_gives_every_record_of_a_file_straddling_or_larger_than_its_chunks(
    captions: Path, chunk: int
) -> None:
    shard = _shard_file(captions)
    records = list(iter_tfrecords(location(shard)))
    frames = [len(data) + FRAMING_BYTES for _, data in records]
    edges = set(range(chunk, shard.stat().st_size, chunk))
    assert any(o < e < o + f for (o, _), f in zip(records, frames, strict=True) for e in edges if e - o < f)
    bounds: list[int] = []
    given: list[bytes] = []
    with open(shard, "rb", buffering=0) as raw:
        reader = ChunkedRecords(raw, shard.stat().st_size, chunk)
        most = 0
        while not reader.finished:
            reader.fill()
            assert reader.sound
            most = max(most, reader.held)
            offsets = reader.take(min(reader.available, 5))
            assert reader.buffer is not None
            bounds.extend((offsets[:-1] + reader.base).tolist())
            given.extend(reader.buffer[s + HEADER_BYTES : e - 4] for s, e in itertools.pairwise(offsets))
        reader.close()
    assert bounds == [offset for offset, _ in records]
    assert given == [data for _, data in records]
    assert most <= chunk + max(frames)  # one chunk, and the record it cut


@pytest.mark.parametrize("damage", ["data after the edge", "length across the edge"])
@pytest.mark.parametrize("chunk", [500, 4096])
def test_a_damaged_record_at_a_chunk_edge_is_named_after_the_records_before_it(
    captions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, damage: str
) -> None:
    import shutil

    path = tmp_path / "data"
    shutil.copytree(captions, path)
    shard = _shard_file(path)
    offsets = [offset for offset, _ in iter_tfrecords(location(shard))]
    if damage == "data after the edge":  # the first record wholly in the second read
        index = next(i for i, offset in enumerate(offsets) if offset >= chunk)
        where = offsets[index] + HEADER_BYTES
    else:  # the length of the record the first chunk's end cuts
        index = next(i for i, offset in enumerate(offsets) if offsets[i + 1] > chunk)
        where = offsets[index]
    data = bytearray(shard.read_bytes())
    data[where] ^= 0x01
    shard.write_bytes(bytes(data))

    def read(chunk_bytes: int) -> tuple[int, str, int | None]:
        monkeypatch.setattr(_shard_chunks, "CHUNK_BYTES", chunk_bytes)
        given, error = _given_then_error(path)
        return given, str(error), error.context.offset

    given, message, offset = read(chunk)
    assert (given, offset) == (index, offsets[index])
    assert shard.name in message
    assert read(1 << 20) == (given, message, offset)  # the file in one chunk: the same error
    report = rk.CorruptionReport()
    kept = list(rk.open(path).records(on_corrupt="skip", report=report))
    assert (len(kept) == RECORDS - 1) if damage == "data after the edge" else (len(kept) < RECORDS)
    assert report.skipped[0].offset == offsets[index]


def test_a_file_cut_short_in_its_second_chunk_gives_the_records_before_the_cut_then_its_error(
    captions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    path = tmp_path / "data"
    shutil.copytree(captions, path)
    shard = _shard_file(path)
    chunk = 2048
    cut = chunk + chunk // 2
    ends = [offset + len(data) + FRAMING_BYTES for offset, data in iter_tfrecords(location(shard))]
    whole = [end for end in ends if end <= cut]
    monkeypatch.setattr(_shard_chunks, "CHUNK_BYTES", chunk)
    reads: list[int] = []

    def read_then_cut(stream: Any, target: memoryview) -> int:
        got = read_into(stream, target)
        reads.append(got)
        if len(reads) == 1:
            os.truncate(shard, cut)
        return got

    monkeypatch.setattr(_shard_chunks, "read_into", read_then_cut)
    given, error = _given_then_error(path)
    assert given == len(whole)
    assert "truncated" in str(error)
    assert error.context.offset == ends[len(whole) - 1]  # the first record the cut took
    assert shard.name in str(error)


def _given_then_error(path: Path) -> tuple[int, CorruptRecordError]:
    """The records ``ds.records()`` gave before it raised, and its error."""
    records = rk.open(path).records()
    given = 0
    while True:
        try:
            next(records)
        except CorruptRecordError as exc:
            return given, exc
        given += 1


def _live_buffers(monkeypatch: pytest.MonkeyPatch) -> list[mmap.mmap]:
    """Every buffer the chunked readers allocate, to measure those still held."""
    made: list[mmap.mmap] = []
    anonymous = _shard_chunks._anonymous

    def spied(size: int) -> mmap.mmap:
        buffer = anonymous(size)
        made.append(buffer)
        return buffer

    monkeypatch.setattr(_shard_chunks, "_anonymous", spied)
    return made


@pytest.mark.parametrize("which", ["captions", "grouped"])
@pytest.mark.parametrize("chunk", [64, 4096])
def test_a_reader_holds_about_one_chunk_and_one_record_a_file_not_the_shard(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, which: str, chunk: int
) -> None:
    path: Path = request.getfixturevalue(which)
    monkeypatch.setattr(_shard_chunks, "CHUNK_BYTES", chunk)
    made = _live_buffers(monkeypatch)
    manifest = rk.Manifest.load(path)
    largest = max(
        len(data) + FRAMING_BYTES
        for s in manifest.split("train").shards
        for _, data in iter_tfrecords(location(path / s.file))
    )
    files = 2 if which == "grouped" else 1
    held = []
    for _ in rk.open(path).records():
        held.append(sum(len(buffer) for buffer in made if not buffer.closed))
    assert len(held) == RECORDS
    bound = files * (chunk + largest)
    assert max(held) <= bound
    assert _shard_file(path).stat().st_size > 10 * chunk  # the shard itself is far larger
    assert all(buffer.closed for buffer in made)  # nothing held once the read ends


@pytest.mark.parametrize("declared", [2**40, "past the file"])
def test_a_hostile_length_in_a_later_chunk_is_named_without_holding_what_it_declares(
    captions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declared: int | str
) -> None:
    """A length with a right CRC that declares more bytes than the file holds, in a record
    the first chunk's end cuts: no buffer of that size is made (the file's size bounds
    it), and the error names the shard and the record, after the records before it."""
    import shutil

    path = tmp_path / "data"
    shutil.copytree(captions, path)
    shard = _shard_file(path)
    chunk = 4096
    offsets = [offset for offset, _ in iter_tfrecords(location(shard))]
    index = next(i for i, offset in enumerate(offsets) if offsets[i + 1] > chunk)
    size = shard.stat().st_size
    length = declared if isinstance(declared, int) else size - offsets[index]  # 16 bytes too many
    header = LENGTH_FIELD.pack(length)
    data = bytearray(shard.read_bytes())
    data[offsets[index] : offsets[index] + HEADER_BYTES] = header + CRC_FIELD.pack(masked_crc(header))
    shard.write_bytes(bytes(data))
    monkeypatch.setattr(_shard_chunks, "CHUNK_BYTES", chunk)
    sizes: list[int] = []
    anonymous = _shard_chunks._anonymous

    def spied(size: int) -> mmap.mmap:
        sizes.append(size)
        return anonymous(size)

    monkeypatch.setattr(_shard_chunks, "_anonymous", spied)
    given, error = _given_then_error(path)
    assert (given, error.context.offset) == (index, offsets[index])
    assert "truncated record" in str(error)
    assert shard.name in str(error)
    assert max(sizes) <= chunk
