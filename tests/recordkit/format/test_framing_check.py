"""A whole TFRecord file checked against its record offsets at once
(sdk/recordkit/format/_framing_check.py), as ``recordkit verify`` checks a shard: files
TensorFlow and recordkit write match; any byte changed, a record dropped or a file cut
short does not. A run of records read at once (as the random-access and epoch readers
read them) is checked at once, and refused exactly when a record checked alone is."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from recordkit.errors import CorruptRecordError
from recordkit.format import _framing_check
from recordkit.format._framing_check import framing_matches, unframe_run
from recordkit.format._index import build_index
from recordkit.format._tfrecord import HEADER_BYTES, frame_record, unframe_record
from recordkit.storage import location


def tensorflow_file(path: Path, payloads: list[bytes]) -> tuple[bytes, np.ndarray]:
    """A file TensorFlow's own writer wrote, and the offsets of its records."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for payload in payloads:
            writer.write(payload)
    return path.read_bytes(), build_index(location(path)).offsets


@pytest.mark.parametrize("few", [64, 0])  # record by record in Python, or the table in numpy
def test_every_single_byte_changed_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, few: int
) -> None:
    monkeypatch.setattr(_framing_check, "_FEW", few)
    data, offsets = tensorflow_file(tmp_path / "a.tfrecord", [b"", b"x", bytes(range(40)), b"tail" * 9])
    assert framing_matches(data, offsets)
    for at in range(len(data)):
        damaged = bytearray(data)
        damaged[at] ^= 0x01
        assert not framing_matches(bytes(damaged), offsets), at


@pytest.mark.parametrize("batch", [1 << 16, 2])  # one batch, or batches of two records
@pytest.mark.parametrize("length", [0, 1, 23])
def test_every_single_byte_changed_in_records_of_one_length_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, length: int, batch: int
) -> None:
    """Records of one length, evenly spaced (a field group's), have their data CRCs
    computed on rows of one view of the file: every byte of every record still counts."""
    monkeypatch.setattr(_framing_check, "_FEW", 0)
    monkeypatch.setattr(_framing_check, "_BATCH", batch)
    payloads = [bytes((i * 7 + j) % 256 for j in range(length)) for i in range(5)]
    data, offsets = tensorflow_file(tmp_path / "a.tfrecord", payloads)
    assert framing_matches(data, offsets)
    for at in range(len(data)):
        damaged = bytearray(data)
        damaged[at] ^= 0x80
        assert not framing_matches(bytes(damaged), offsets), at
    swapped = (
        data[: offsets[1]]
        + data[offsets[2] : offsets[3]]
        + data[offsets[1] : offsets[2]]
        + data[offsets[3] :]
    )
    assert framing_matches(swapped, offsets)  # whole records moved keep their own CRCs


def test_a_file_cut_short_or_offsets_that_skip_a_record_do_not_match(tmp_path: Path) -> None:
    data, offsets = tensorflow_file(tmp_path / "a.tfrecord", [b"one", b"two", b"three"])
    assert not framing_matches(data[:-1], offsets)
    assert not framing_matches(data, np.delete(offsets, 1))
    assert not framing_matches(data + b"\0", offsets)
    assert framing_matches(b"", np.zeros(1, dtype=np.int64))


def test_records_past_a_batch_are_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_framing_check, "_BATCH", 3)
    monkeypatch.setattr(_framing_check, "_FEW", 0)  # the numpy path, which batches
    payloads = [f"record {i}".encode() for i in range(10)]
    data, offsets = tensorflow_file(tmp_path / "a.tfrecord", payloads)
    assert framing_matches(data, offsets)
    last = data.rindex(b"record 9")
    damaged = data[:last] + b"R" + data[last + 1 :]
    assert not framing_matches(damaged, offsets)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=100))
def test_any_file_tensorflow_writes_matches_its_offsets(payloads: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        data, offsets = tensorflow_file(Path(folder) / "a.tfrecord", payloads)
    assert framing_matches(data, offsets)


#: unframe_run's two ways: record by record (runs of a few records) and in numpy steps.
PATHS = pytest.mark.parametrize("path", ["each", "numpy"])


@contextlib.contextmanager
def unframed(path: str) -> Iterator[None]:
    """unframe_run taking ``path`` for runs of any length, for the block."""
    saved = _framing_check._FEW_IN_RUN
    _framing_check._FEW_IN_RUN = 1 << 62 if path == "each" else 0
    try:
        yield
    finally:
        _framing_check._FEW_IN_RUN = saved


def framed_run(payloads: list[bytes]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The bytes of ``payloads`` framed one after another, each one's start and size."""
    framed = [frame_record(payload) for payload in payloads]
    sizes = np.asarray([len(f) for f in framed], dtype=np.int64)
    return b"".join(framed), np.cumsum(sizes) - sizes, sizes


def one_by_one(
    buffer: bytes, starts: np.ndarray, sizes: np.ndarray, verify: bool = True
) -> list[bytes] | None:
    """What ``unframe_record`` gives for each record, or None when it refuses any."""
    try:
        return [
            unframe_record(buffer[start : start + size], shard="s", offset=start, verify=verify)
            for start, size in zip(starts.tolist(), sizes.tolist(), strict=True)
        ]
    except CorruptRecordError:
        return None


@PATHS
def test_a_run_checked_at_once_gives_each_record_s_data_in_the_order_asked(path: str) -> None:
    with unframed(path):
        payloads = [b"", b"x", bytes(range(40)), b"tail" * 9]
        buffer, starts, sizes = framed_run(payloads)
        assert unframe_run(buffer, starts, sizes) == payloads
        order = np.asarray([3, 0, 2, 2, 1])  # out of order, one asked twice
        assert unframe_run(buffer, starts[order], sizes[order]) == [payloads[i] for i in order.tolist()]
        assert unframe_run(buffer, starts[:0], sizes[:0]) == []


@PATHS
def test_every_single_byte_changed_in_a_run_fails_the_run_exactly_when_a_record_alone_fails(
    path: str,
) -> None:
    with unframed(path):
        buffer, starts, sizes = framed_run([b"", b"x", bytes(range(40)), b"tail" * 9])
        for verify in (True, False):
            for at in range(len(buffer)):
                damaged = bytearray(buffer)
                damaged[at] ^= 0x01
                alone = one_by_one(bytes(damaged), starts, sizes, verify)
                assert unframe_run(bytes(damaged), starts, sizes, verify=verify) == alone, (at, verify)
                # every byte is some record's header or CRC, or its data, whose CRC catches it
                assert alone is None or not verify


@PATHS
def test_a_run_cut_short_or_sizes_that_disagree_with_the_headers_fail(path: str) -> None:
    with unframed(path):
        buffer, starts, sizes = framed_run([b"one", b"two", b"three"])
        assert unframe_run(buffer[:-1], starts, sizes) is None
        assert unframe_run(buffer, starts, sizes + 1) is None
        assert unframe_run(buffer, starts + 1, sizes) is None
        assert unframe_run(buffer, starts, np.minimum(sizes, 15)) is None


@PATHS
@settings(max_examples=25, deadline=None)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=20), st.data())
def test_any_run_checked_at_once_gives_what_each_record_alone_gives(
    path: str, payloads: list[bytes], data: st.DataObject
) -> None:
    with unframed(path):
        buffer, starts, sizes = framed_run(payloads)
        picked = data.draw(st.lists(st.integers(0, len(payloads) - 1), max_size=30))
        at = np.asarray(picked, dtype=np.int64)
        assert unframe_run(buffer, starts[at], sizes[at]) == [payloads[i] for i in picked]


@PATHS
def test_a_run_holding_a_record_longer_than_the_length_crc_table_is_checked_the_same(path: str) -> None:
    with unframed(path):
        payloads = [b"small", bytes(range(256)) * 300, b"after"]  # 76,800 bytes: past the table
        buffer, starts, sizes = framed_run(payloads)
        assert unframe_run(buffer, starts, sizes) == payloads
        for at in [
            int(starts[1]) + 1,
            int(starts[1]) + 9,
            int(starts[1]) + 12,
            int(starts[1] + sizes[1]) - 1,
        ]:
            damaged = bytearray(buffer)
            damaged[at] ^= 0x04  # its length, the length's CRC, its data, the data's CRC
            assert unframe_run(bytes(damaged), starts, sizes) is None, at
            assert one_by_one(bytes(damaged), starts, sizes) is None, at
        assert unframe_run(buffer, starts[1:2] - 1, sizes[1:2]) is None


def test_records_in_any_order_cut_out_alike_with_or_without_their_order_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Records are unpacked in the buffer's order by one struct format (and put back in
    the order asked), or sliced when one is too long for the format's counts: the same
    data either way."""
    unpacked: list[int] = []
    unpack = _framing_check._unpacked

    def counted(buffer: bytes, firsts: np.ndarray, ends: np.ndarray) -> list[bytes] | None:
        got = unpack(buffer, firsts, ends)
        unpacked.append(got is not None)
        return got

    monkeypatch.setattr(_framing_check, "_unpacked", counted)
    monkeypatch.setattr(_framing_check, "_FEW_IN_RUN", 0)
    payloads = [bytes([i]) * (i * 7) for i in range(12)] + [b"long" * 25_000, b"after"]  # 100,000 bytes
    buffer, starts, sizes = framed_run(payloads)
    rng = np.random.default_rng(3)
    every = list(range(12))
    cases = {  # the records asked for, and whether the format unpacks them
        "in order": (every, True),
        "shuffled": (rng.permutation(12).tolist(), True),
        "asked twice": ([11, 0, 3, 3, 7, 0, 1, *every], True),
        "one": ([5], True),
        "empty ones": ([0, 0], True),
        "every third": ([9, 0, 3, 6], True),
        "far apart": ([0, 11], True),
        "a long one": ([12, 2], False),
        "after a long gap": ([13, 0], False),
    }
    for name, (picked, unpacks) in cases.items():
        at = np.asarray(picked, dtype=np.int64)
        want = [payloads[i] for i in picked]
        order = np.argsort(starts[at], kind="stable")
        for given_order in (None, order):
            for verify in (True, False):
                unpacked.clear()
                got = unframe_run(buffer, starts[at], sizes[at], order=given_order, verify=verify)
                assert got == want, name
                assert unpacked == [unpacks], name
    assert _framing_check._unpacked(b"x" * 200_000, np.asarray([100_000]), np.asarray([100_001])) is None
    monkeypatch.setattr(_framing_check, "_FEW_IN_RUN", 3)  # runs of fewer: sliced, headers framed each
    unpacked.clear()
    assert unframe_run(buffer, starts[[4, 1]], sizes[[4, 1]]) == [payloads[4], payloads[1]]
    assert unframe_run(buffer, starts[[4, 1, 2]], sizes[[4, 1, 2]]) == [payloads[4], payloads[1], payloads[2]]
    assert unpacked == [True]


@PATHS
def test_a_record_framed_inside_another_s_data_is_cut_out_as_alone(path: str) -> None:
    """Records that overlap (a hostile index may list one inside another's data, and its
    framing checks out): each still gets its own bytes."""
    with unframed(path):
        inner = frame_record(b"inner record")
        buffer, starts, sizes = framed_run([b"first", inner, b"last"])
        starts = np.append(starts, starts[1] + HEADER_BYTES)  # the record framed in the second's data
        sizes = np.append(sizes, len(inner))
        want = [b"first", inner, b"last", b"inner record"]
        assert unframe_run(buffer, starts, sizes) == want
        assert one_by_one(buffer, starts, sizes) == want
        order = np.argsort(starts)
        assert unframe_run(buffer, starts[::-1], sizes[::-1], order=np.argsort(starts[::-1])) == want[::-1]
        assert unframe_run(buffer, starts[order], sizes[order]) == [want[i] for i in order.tolist()]
