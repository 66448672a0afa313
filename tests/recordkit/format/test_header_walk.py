"""The walk of a shard's record headers (sdk/recordkit/format/_tfrecord.py,
``walk_headers``): a file whose records all share one size is walked at once, and gives
what the header-by-header walk gives, damaged or not."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from recordkit.format import _tfrecord
from recordkit.format._tfrecord import FRAMING_BYTES, HeaderWalk, OversizedRecord, frame_record, walk_headers

RECORDS = 40
SIZE = 100  # each record's data
FRAME = SIZE + FRAMING_BYTES


def _records() -> list[bytes]:
    return [bytes([index]) * SIZE for index in range(RECORDS)]


def _file(path: Path, records: list[bytes]) -> Path:
    path.write_bytes(b"".join(frame_record(record) for record in records))
    return path


def _one_by_one(path: Path, monkeypatch: pytest.MonkeyPatch) -> HeaderWalk:
    """The header-by-header walk of ``path`` (no walk at once)."""
    with monkeypatch.context() as patched:
        patched.setattr(_tfrecord, "_UNIFORM_FROM", 2**62)
        return _tfrecord._walk_plain(str(path), path.stat().st_size)


def test_a_file_of_records_of_one_size_is_walked_whole_at_once(tmp_path: Path) -> None:
    path = _file(tmp_path / "shard.tfrecord", _records())
    whole = HeaderWalk(RECORDS, RECORDS * FRAME, True)
    assert _tfrecord._walk_uniform(str(path), path.stat().st_size) == whole
    assert walk_headers(path) == whole


def _flip_length_crc(data: bytearray) -> None:
    data[7 * FRAME + 9] ^= 0x01


def _declare_huge(data: bytearray) -> None:
    length = struct.pack("<Q", 2**40)
    data[7 * FRAME : 7 * FRAME + 12] = length + struct.pack("<I", _tfrecord.masked_crc(length))


def _one_longer_one_shorter(data: bytearray) -> None:
    records = _records()
    records[5] += b"x"
    records[9] = records[9][:-1]
    data[:] = b"".join(frame_record(record) for record in records)


def _cut_a_frame_short(data: bytearray) -> None:
    del data[-FRAME:]
    data[-3] ^= 0xFF  # the last record's data changed: its header still sound


def _flip_a_data_byte(data: bytearray) -> None:
    data[3 * FRAME + 50] ^= 0x01  # the data's CRC is TensorFlow's to check, not the walk's


@pytest.mark.parametrize(
    "damage",
    [_flip_length_crc, _declare_huge, _one_longer_one_shorter, _cut_a_frame_short, _flip_a_data_byte],
    ids=lambda damage: damage.__name__.strip("_"),
)
def test_a_damaged_file_of_one_record_size_walks_as_header_by_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[bytearray], None]
) -> None:
    path = _file(tmp_path / "shard.tfrecord", _records())
    data = bytearray(path.read_bytes())
    damage(data)
    path.write_bytes(bytes(data))
    walked = walk_headers(path)
    assert walked == _one_by_one(path, monkeypatch)
    if damage is _declare_huge:
        available = (RECORDS - 7) * FRAME - 12
        assert walked.oversized == OversizedRecord(7 * FRAME, 2**40, available, RECORDS * FRAME)
    if damage in (_flip_length_crc, _declare_huge):
        assert (walked.records, walked.complete) == (7, False)


@pytest.mark.parametrize("size", [SIZE, 9000], ids=["blocks", "header-by-pread"])
def test_the_walk_at_once_reads_the_file_in_blocks_or_header_by_header_and_finds_a_late_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """The walk at once reads the file (never maps it: a file cut short while mapped kills
    the process): small frames a block of records at a time, large ones a header at a
    time; a header that differs in a later block, or a file shorter than the size asked
    for (cut since), gives None."""
    monkeypatch.setattr(_tfrecord, "_UNIFORM_BLOCK", 3 * (size + FRAMING_BYTES))
    records = [bytes([index]) * size for index in range(RECORDS)]
    path = _file(tmp_path / "shard.tfrecord", records)
    total = path.stat().st_size
    assert _tfrecord._walk_uniform(str(path), total) == HeaderWalk(RECORDS, total, True)
    assert _tfrecord._walk_uniform(str(path), total + size + FRAMING_BYTES) is None  # cut short since
    records[RECORDS - 2] += b"x"
    records[RECORDS - 1] = records[RECORDS - 1][:-1]
    _file(path, records)
    assert _tfrecord._walk_uniform(str(path), total) is None
