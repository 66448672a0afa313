"""TFRecord files without TensorFlow (sdk/recordkit/format/_tfrecord.py), against tf.data;
written by the one shard writer (recordkit.write._shard_file.ShardFile)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st

from recordkit.errors import CorruptRecordError
from recordkit.format._tfrecord import (
    FRAMING_BYTES,
    Compression,
    Damage,
    frame_record,
    iter_tfrecords,
    scan_tfrecords,
)
from recordkit.storage import location
from recordkit.write._shard_file import ShardFile  # private: writes a shard exactly as the writer does

PAYLOADS = [b"", b"a", bytes(range(256)) * 40, b"\x00" * 3, "unicode \u00e9".encode()]
ALL_COMPRESSIONS = list(Compression)


def write(path: Path, payloads: list[bytes], compression: Compression = Compression.NONE) -> Path:
    shard = ShardFile(location(path), compression, durable=False)
    for payload in payloads:
        shard.add(frame_record(payload))
    shard.commit()
    return path


@pytest.mark.parametrize("compression", ALL_COMPRESSIONS, ids=lambda c: c.name)
def test_tf_data_reads_what_we_write(tmp_path: Path, compression: Compression) -> None:
    path = write(tmp_path / f"shard.tfrecord{compression.suffix}", PAYLOADS, compression)
    dataset = tf.data.TFRecordDataset(str(path), compression_type=compression.value)
    assert [t.numpy() for t in dataset] == PAYLOADS


@pytest.mark.parametrize("compression", ALL_COMPRESSIONS, ids=lambda c: c.name)
def test_we_read_what_tensorflow_writes(tmp_path: Path, compression: Compression) -> None:
    path = tmp_path / "tf.tfrecord"
    options = tf.io.TFRecordOptions(compression_type=compression.value)
    with tf.io.TFRecordWriter(str(path), options=options) as w:
        for payload in PAYLOADS:
            w.write(payload)
    assert [data for _, data in iter_tfrecords(location(path), compression)] == PAYLOADS


def test_uncompressed_bytes_equal_tensorflows(tmp_path: Path) -> None:
    ours = write(tmp_path / "ours.tfrecord", PAYLOADS)
    theirs = tmp_path / "theirs.tfrecord"
    with tf.io.TFRecordWriter(str(theirs)) as w:
        for payload in PAYLOADS:
            w.write(payload)
    assert ours.read_bytes() == theirs.read_bytes()
    assert ours.read_bytes() == b"".join(frame_record(p) for p in PAYLOADS)


@given(st.lists(st.binary(max_size=300), max_size=8), st.sampled_from(ALL_COMPRESSIONS))
def test_round_trip_with_offsets(payloads: list[bytes], compression: Compression) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp) / "shard", payloads, compression)
        records = list(iter_tfrecords(location(path), compression))
    assert [data for _, data in records] == payloads
    expected_offsets = [sum(len(p) + 16 for p in payloads[:i]) for i in range(len(payloads))]
    assert [offset for offset, _ in records] == expected_offsets


def test_writer_counts_records_and_framed_bytes(tmp_path: Path) -> None:
    shard = ShardFile(location(tmp_path / "shard"), Compression.GZIP)
    for payload in PAYLOADS:
        shard.add(frame_record(payload))
    shard.commit()
    assert shard.records == len(PAYLOADS)
    assert shard.payload_bytes == sum(len(p) + FRAMING_BYTES for p in PAYLOADS)


def test_gzip_output_is_reproducible(tmp_path: Path) -> None:
    first = write(tmp_path / "a.gz", PAYLOADS, Compression.GZIP).read_bytes()
    second = write(tmp_path / "b.gz", PAYLOADS, Compression.GZIP).read_bytes()
    assert first == second


# -- corruption is reported with the shard and the byte offset ---------------------------------


def offsets_of(payloads: list[bytes]) -> list[int]:
    return [sum(len(p) + 16 for p in payloads[:i]) for i in range(len(payloads))]


def test_truncated_record_names_shard_and_offset(tmp_path: Path) -> None:
    path = write(tmp_path / "train-00000.tfrecord", PAYLOADS)
    data = path.read_bytes()
    path.write_bytes(data[:-10])  # cut inside the last record's payload
    records = iter_tfrecords(location(path))
    seen = [next(records)[1] for _ in PAYLOADS[:-1]]
    assert seen == PAYLOADS[:-1]  # everything before the damage is read
    with pytest.raises(CorruptRecordError, match="truncated record") as info:
        next(records)
    assert info.value.shard == "train-00000.tfrecord"
    assert info.value.context.offset == offsets_of(PAYLOADS)[-1]
    assert f"shard train-00000.tfrecord, offset {offsets_of(PAYLOADS)[-1]}" in str(info.value)


def test_truncated_header(tmp_path: Path) -> None:
    path = write(tmp_path / "s.tfrecord", PAYLOADS[:2])
    path.write_bytes(path.read_bytes() + b"\x05\x00\x00")
    with pytest.raises(CorruptRecordError, match="truncated record header") as info:
        list(iter_tfrecords(location(path)))
    assert info.value.context.offset == offsets_of(PAYLOADS[:3])[2]


@pytest.mark.parametrize(
    ("where", "message"),
    [(lambda off: off + 2, "length CRC mismatch"), (lambda off: off + 12 + 5, "data CRC mismatch")],
    ids=["in the length", "in the payload"],
)
def test_a_flipped_bit_is_caught(tmp_path: Path, where: object, message: str) -> None:
    path = write(tmp_path / "s.tfrecord", PAYLOADS)
    damaged = bytearray(path.read_bytes())
    victim = offsets_of(PAYLOADS)[2]  # a 10240-byte record
    damaged[where(victim)] ^= 0x10  # type: ignore[operator]
    path.write_bytes(bytes(damaged))
    with pytest.raises(CorruptRecordError, match=message) as info:
        list(iter_tfrecords(location(path)))
    assert (info.value.shard, info.value.context.offset) == ("s.tfrecord", victim)


def test_verify_false_skips_the_payload_check(tmp_path: Path) -> None:
    path = write(tmp_path / "s.tfrecord", [b"hello"])
    damaged = bytearray(path.read_bytes())
    damaged[12] ^= 0x01  # h -> i
    path.write_bytes(bytes(damaged))
    assert [data for _, data in iter_tfrecords(location(path), verify=False)] == [b"iello"]


@pytest.mark.parametrize("compression", [Compression.GZIP, Compression.ZLIB], ids=lambda c: c.name)
def test_truncated_compressed_shard(tmp_path: Path, compression: Compression) -> None:
    path = write(tmp_path / "s.tfrecord", PAYLOADS, compression)
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(CorruptRecordError) as info:
        list(iter_tfrecords(location(path), compression))
    assert info.value.shard == "s.tfrecord"


def test_a_large_zlib_shard_streams_through_many_chunks(tmp_path: Path) -> None:
    # Zeros compress ~1000:1, so each 64 KB read inflates far past one output chunk;
    # records straddle the decompressor's chunk boundaries.
    payloads = [bytes([i]) * (300_000 + i) for i in range(40)]
    path = write(tmp_path / "big.tfrecord.zz", payloads, Compression.ZLIB)
    assert path.stat().st_size < sum(map(len, payloads)) // 50
    assert [data for _, data in iter_tfrecords(location(path), Compression.ZLIB)] == payloads
    dataset = tf.data.TFRecordDataset(str(path), compression_type="ZLIB")
    assert [t.numpy() for t in dataset] == payloads


@pytest.mark.parametrize("compression", [Compression.GZIP, Compression.ZLIB], ids=lambda c: c.name)
def test_records_before_a_compressed_truncation_are_read(tmp_path: Path, compression: Compression) -> None:
    payloads = [bytes(range(256)) * 400 + bytes([i]) for i in range(30)]  # ~3 MB, compressible
    path = write(tmp_path / "s.tfrecord", payloads, compression)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    read: list[bytes] = []
    with pytest.raises(CorruptRecordError, match=r"cannot decompress|truncated") as info:
        read.extend(data for _, data in iter_tfrecords(location(path), compression))
    assert 0 < len(read) < len(payloads)
    assert read == payloads[: len(read)]
    assert info.value.shard == "s.tfrecord"


def test_a_missing_shard_file_is_named_as_missing(tmp_path: Path) -> None:
    with pytest.raises(CorruptRecordError, match="cannot read the shard file: No such file") as info:
        list(iter_tfrecords(location(tmp_path / "gone.tfrecord")))
    assert info.value.shard == "gone.tfrecord"


def test_not_compressed_as_declared(tmp_path: Path) -> None:
    path = write(tmp_path / "plain.tfrecord", PAYLOADS)
    with pytest.raises(CorruptRecordError, match="cannot decompress") as info:
        list(iter_tfrecords(location(path), Compression.GZIP))
    assert info.value.shard == "plain.tfrecord"


def test_empty_file_has_no_records(tmp_path: Path) -> None:
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    assert list(iter_tfrecords(location(path))) == []


# -- Compression -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [(None, Compression.NONE), ("", Compression.NONE), ("none", Compression.NONE),
     ("gzip", Compression.GZIP), ("ZLIB", Compression.ZLIB), (Compression.GZIP, Compression.GZIP)],
)  # fmt: skip
def test_compression_parse(given: str | Compression | None, expected: Compression) -> None:
    assert Compression.parse(given) is expected


def test_compression_parse_refuses_unknown_names() -> None:
    with pytest.raises(ValueError, match="must be none, GZIP or ZLIB, not 'zip'"):
        Compression.parse("zip")


# -- the resynchronising scan ------------------------------------------------------------------


def scan(path: Path, compression: Compression = Compression.NONE) -> tuple[list[bytes], list[Damage]]:
    damages: list[Damage] = []
    return [data for _, data in scan_tfrecords(location(path), compression, damages.append)], damages


@pytest.mark.parametrize("compression", ALL_COMPRESSIONS, ids=lambda c: c.name)
def test_scan_reads_an_intact_file_like_the_strict_reader(tmp_path: Path, compression: Compression) -> None:
    path = write(tmp_path / "s.tfrecord", PAYLOADS, compression)
    assert scan(path, compression) == (PAYLOADS, [])
    assert list(scan_tfrecords(location(path), compression, pytest.fail)) == list(
        iter_tfrecords(location(path), compression)
    )


def test_scan_goes_past_a_damaged_header_to_the_next_intact_record(tmp_path: Path) -> None:
    path = write(tmp_path / "s.tfrecord", PAYLOADS)
    damaged = bytearray(path.read_bytes())
    victim = offsets_of(PAYLOADS)[2]
    damaged[victim + 1] ^= 0x01  # record 2's length
    path.write_bytes(bytes(damaged))
    records, damages = scan(path)
    assert records == PAYLOADS[:2] + PAYLOADS[3:]
    assert damages == [
        Damage(victim, None, f"corrupt record header; reading resumed at offset {offsets_of(PAYLOADS)[3]}")
    ]


@pytest.mark.parametrize("compression", [Compression.GZIP, Compression.ZLIB], ids=lambda c: c.name)
def test_scan_reads_a_truncated_compressed_file_as_far_as_it_inflates(
    tmp_path: Path, compression: Compression
) -> None:
    payloads = [bytes(range(256)) * 400 + bytes([i]) for i in range(30)]
    path = write(tmp_path / "s.tfrecord", payloads, compression)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    records, damages = scan(path, compression)
    assert 0 < len(records) < len(payloads)
    assert records == payloads[: len(records)]
    assert damages[0].reason == "the compressed stream is truncated"


def test_concatenated_gzip_members_are_read_as_one_stream(tmp_path: Path) -> None:
    first = write(tmp_path / "a.gz", PAYLOADS[:2], Compression.GZIP).read_bytes()
    second = write(tmp_path / "b.gz", PAYLOADS[2:], Compression.GZIP).read_bytes()
    path = tmp_path / "both.gz"
    path.write_bytes(first + second)
    assert [data for _, data in iter_tfrecords(location(path), Compression.GZIP)] == PAYLOADS
    assert scan(path, Compression.GZIP) == (PAYLOADS, [])
    dataset = tf.data.TFRecordDataset(str(path), compression_type="GZIP")
    assert [t.numpy() for t in dataset] == PAYLOADS
