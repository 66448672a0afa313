"""The checked shard read under load_dataset (sdk/recordkit/read/_shard_stream.py): a
dataset of one shard, read with no function per shard and its checks' constants
inlined, finds and names a loss as a dataset of several does; chunks come whole, with
no shard markers left in them, pass after pass."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf
from _object_stores import REMOTE_SCHEMA, Bucket, remote_records
from _reader_support import SCHEMA, make_records, record_offsets, write

import recordkit as rk
from recordkit.read._open import open_dataset
from recordkit.read._shard_stream import read_shards
from recordkit.storage import location

N = 9


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N)


@pytest.fixture(scope="module")
def one_shard(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("one") / "data"
    write(path, records, shard_records=N)
    return path


def the_shard(path: Path) -> Path:
    (shard,) = sorted(path.glob("train-*.tfrecord"))
    return shard


def ids(ds: Any) -> list[int]:
    """The records read, by their position in ``records`` (their captions differ)."""
    captions = [r["caption"] for r in make_records(N)]
    return [captions.index(c.decode()) for batch in ds for c in tf.reshape(batch["caption"], [-1]).numpy()]


def broken_copy(one_shard: Path, tmp_path: Path) -> tuple[Path, Path, list[int]]:
    """A copy of the one-shard dataset with a bit of its fourth record's data flipped."""
    broken = tmp_path / "broken"
    shutil.copytree(one_shard, broken)
    shard = the_shard(broken)
    offsets = record_offsets(shard)
    data = bytearray(shard.read_bytes())
    data[offsets[3] + 30] ^= 0x08
    shard.write_bytes(bytes(data))
    return broken, shard, offsets


@pytest.mark.parametrize("batch_size", [None, 2])
def test_one_shard_with_a_flipped_bit_names_shard_and_offset(
    one_shard: Path, tmp_path: Path, batch_size: int | None
) -> None:
    broken, shard, offsets = broken_copy(one_shard, tmp_path)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"CorruptRecordError: shard {shard.name}, offset {offsets[3]}: .*; 3 of {N} records",
    ):
        list(rk.load_dataset(broken, fields=["caption"], batch_size=batch_size))
    report = rk.CorruptionReport()
    got = ids(
        rk.load_dataset(broken, fields=["caption"], batch_size=batch_size, on_corrupt="skip", report=report)
    )
    assert got == [0, 1, 2]
    (skipped,) = report.skipped
    assert (skipped.shard, skipped.offset, skipped.records) == (shard.name, offsets[3], N - 3)


def test_reads_of_one_shard_each_name_their_own_loss(one_shard: Path, tmp_path: Path) -> None:
    """The function of a loss is traced once and reused by later reads (the message's
    pieces come with the shard's path, not through the trace): each read names its own
    shard, offset and records read."""
    losses = []
    for record in (3, 6):
        broken = tmp_path / f"broken{record}"
        shutil.copytree(one_shard, broken)
        shard = the_shard(broken)
        offsets = record_offsets(shard)
        data = bytearray(shard.read_bytes())
        data[offsets[record] + 30] ^= 0x08
        shard.write_bytes(bytes(data))
        losses.append((broken, shard, offsets[record], record))
    for broken, shard, offset, record in (*losses, losses[0]):
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            list(rk.load_dataset(broken, fields=["caption"], batch_size=2))
        assert f"shard {shard.name}, offset {offset}: " in str(raised.value)
        assert f"; {record} of {N} records" in str(raised.value)


def test_one_shard_that_lost_its_last_record_is_reported(one_shard: Path, tmp_path: Path) -> None:
    """A shard cut at a record's boundary: every header is sound, only the count and
    size against the manifest find it (``skip`` does not compare sizes at open)."""
    broken = tmp_path / "short"
    shutil.copytree(one_shard, broken)
    shard = the_shard(broken)
    offsets = record_offsets(shard)
    shard.write_bytes(shard.read_bytes()[: offsets[-1]])
    report = rk.CorruptionReport()
    assert ids(rk.load_dataset(broken, fields=["caption"], on_corrupt="skip", report=report)) == list(
        range(N - 1)
    )
    (skipped,) = report.skipped
    assert (skipped.shard, skipped.offset, skipped.records) == (shard.name, offsets[-1], 1)


def test_one_file_without_a_manifest_is_checked_by_its_headers_or_its_size(
    one_shard: Path, tmp_path: Path
) -> None:
    """No manifest: the records the file's headers frame are counted when the read is
    built, and a bad record's message says how many; where a header is damaged, the
    count is unknown, the bytes read against the file's size still find the bad record,
    and the message says the count is unknown."""
    _, shard, offsets = broken_copy(one_shard, tmp_path)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"CorruptRecordError: shard {shard.name}, offset {offsets[3]}: .*; 3 of {N} records",
    ):
        list(rk.load_dataset(str(shard), fields=["caption"], schema=SCHEMA))
    data = bytearray(the_shard(one_shard).read_bytes())
    data[offsets[3] + 2] ^= 0x01  # the fourth record's length: its header's CRC fails
    shard.write_bytes(bytes(data))
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"CorruptRecordError: shard {shard.name}, offset {offsets[3]}: .*; 3 of \? records",
    ):
        list(rk.load_dataset(str(shard), fields=["caption"], schema=SCHEMA))
    assert ids(rk.load_dataset(str(the_shard(one_shard)), fields=["caption"], schema=SCHEMA)) == list(
        range(N)
    )


@pytest.mark.parametrize(("split", "want"), [("train[2:7]", [2, 3, 4, 5, 6]), ("train[-40%:]", [5, 6, 7, 8])])
def test_a_slice_of_one_shard(one_shard: Path, split: str, want: list[int]) -> None:
    assert ids(rk.load_dataset(one_shard, split=split, fields=["caption"], batch_size=2)) == want
    assert ids(rk.load_dataset(one_shard, split=split, fields=["caption"])) == want


@pytest.mark.parametrize("shard_records", [N, 4])
def test_chunks_are_whole_and_each_pass_counts_afresh(
    tmp_path: Path, records: list[dict[str, Any]], shard_records: int
) -> None:
    """Shard markers are dropped and chunks of several shards are joined: every chunk
    holds ``block_length`` records but the last; a second pass does not add to the
    first's counts (it would report a loss)."""
    write(tmp_path / "data", records, shard_records=shard_records)
    source = open_dataset(tmp_path / "data")
    chunks = read_shards(
        source,
        list(source.shards),
        block_length=4,
        on_corrupt="raise",
        report=None,
        shuffle_files=False,
        seed=None,
        cycle_length=None,
        deterministic=True,
    )
    for _ in range(2):
        assert [int(tf.size(chunk)) for chunk in chunks] == [4, 4, 1]
    assert [int(tf.size(chunk)) for chunk in chunks.repeat(2)] == [4, 4, 1, 4, 4, 1]


@pytest.mark.parametrize("shard_records", [N, 4, 2])
@pytest.mark.parametrize("on_corrupt", ["raise", "skip"])
def test_records_one_by_one_come_in_the_order_of_the_chunks(
    tmp_path: Path, records: list[dict[str, Any]], shard_records: int, on_corrupt: Any
) -> None:
    """``one_by_one`` gives the chunks' records in their order, whether the shards are
    read whole by TensorFlow (``"raise"``: their headers walked) or checked in the graph
    (``"skip"``), from one shard or several interleaved."""
    write(tmp_path / "data", records, shard_records=shard_records)
    source = open_dataset(tmp_path / "data")
    options: dict[str, Any] = {
        "block_length": 3,
        "on_corrupt": on_corrupt,
        "report": rk.CorruptionReport(),
        "shuffle_files": False,
        "seed": None,
        "cycle_length": 2,
        "deterministic": True,
    }
    chunked = read_shards(source, list(source.shards), **options)
    single = read_shards(source, list(source.shards), **options, one_by_one=True)
    want = [bytes(r) for chunk in chunked for r in chunk.numpy()]
    assert [bytes(r.numpy()) for r in single] == want
    assert len(set(want)) == len(want) == N


def test_one_remote_shard_streamed_through_fsspec_is_checked(s3_bucket: Bucket) -> None:
    url = s3_bucket.join("one")
    options = s3_bucket.storage_options
    manifest = rk.write_dataset(
        remote_records(6), REMOTE_SCHEMA, url, shard_records=6, storage_options=options
    )
    (entry,) = manifest.split("train").shards
    assert len(list(rk.load_dataset(url, batch_size=4, storage_options=options, remote_io="fsspec"))) == 2
    shard = location(url, options).join(entry.file)
    data = bytearray(shard.read_bytes())
    data[-6] ^= 0xFF  # the last record's data, same size: only its CRC finds it
    shard.write_bytes(bytes(data))
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=rf"CorruptRecordError: shard {entry.file}, offset"
    ):
        list(rk.load_dataset(url, batch_size=4, storage_options=options, remote_io="fsspec"))
