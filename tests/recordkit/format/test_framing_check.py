"""A whole TFRecord file checked against its record offsets at once
(sdk/recordkit/format/_framing_check.py), as ``recordkit verify`` checks a shard: files
TensorFlow and recordkit write match; any byte changed, a record dropped or a file cut
short does not."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from recordkit.format import _framing_check
from recordkit.format._framing_check import framing_matches
from recordkit.format._index import build_index
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
