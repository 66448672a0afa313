"""Damaged records read through the canonical epochs in tf.data (``Dataset.tf_epochs``):
each bit flip in a record's data stops the read with TensorFlow's error, whose message
begins with recordkit's, naming the shard, offset and record; nothing decodes wrong. An
epoch read in order (its records streamed by ``TFRecordDataset``) stops with the error
the index-driven generator gives, on a bit flip, a shard cut short and a header declaring
more bytes than the file holds (never handed to TensorFlow, which would allocate them)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from _fault_support import flip_bit, record_offsets, set_declared_length, shard_paths, truncate, write

import recordkit as rk

tf = pytest.importorskip("tensorflow")

SEED = 3407
FLIPS = 4


def flipped_copy(
    pristine: Path, root: Path, rng: random.Random, *, spread: int = 1
) -> tuple[Path, list[int], int]:
    """``pristine`` copied to ``root`` with one bit flipped in one record's data (in its
    ``spread`` bytes from the third on): the shard, its record offsets and the record."""
    shutil.copytree(pristine, root)
    path = rng.choice(shard_paths(root))
    offsets = record_offsets(path)
    record = rng.randrange(len(offsets))
    flip_bit(path, (offsets[record] + 12 + 2 + rng.randrange(spread)) * 8 + rng.randrange(8))
    return path, offsets, record


def iterated_flip_error(
    pristine: Path, root: Path, rng: random.Random, case: int, *, spread: int = 1
) -> rk.errors.CorruptRecordError:
    """The error iterating a shuffled ``tf_epochs`` read of a copy of ``pristine`` with one
    bit flipped (:func:`flipped_copy`) stops with, checked to name the damaged record."""
    path, offsets, record = flipped_copy(pristine, root, rng, spread=spread)
    epochs = rk.open(root, "train").tf_epochs(4, shuffle=True, seed=case, window=8)
    with pytest.raises(rk.errors.CorruptRecordError) as info:
        list(epochs)
    message = str(info.value)
    assert message.startswith(f"shard {path.name}, offset {offsets[record]}, record ")
    assert message.endswith("data CRC mismatch (corrupt record)")
    return info.value


def test_a_flipped_bit_in_a_record_stops_the_tf_epoch_read_naming_the_record(
    tmp_path: Path, fault_cases: Any
) -> None:
    pristine = tmp_path / "pristine"
    write(pristine, 30)
    rng = random.Random(SEED)
    for case in range(FLIPS):
        root = tmp_path / f"flip{case}"
        path, offsets, record = flipped_copy(pristine, root, rng)
        dataset = rk.open(root, "train").tf_epochs(4, shuffle=True, seed=case, window=8).dataset()
        with pytest.raises(tf.errors.OpError) as info:
            list(dataset)
        first = info.value.message.split("}} ", 1)[-1].splitlines()[0]
        assert first.startswith(f"CorruptRecordError: shard {path.name}, offset {offsets[record]}, record ")
        assert first.endswith("data CRC mismatch (corrupt record)")
        fault_cases.tried("tf_epochs bit flips")


def test_iterating_the_tf_epochs_raises_recordkit_s_own_error_without_a_traceback(
    tmp_path: Path, fault_cases: Any
) -> None:
    pristine = tmp_path / "pristine"
    write(pristine, 30)
    rng = random.Random(SEED + 1)
    for case in range(FLIPS):
        error = iterated_flip_error(pristine, tmp_path / f"flip{case}", rng, case)
        assert "Traceback" not in str(error)
        assert error.__suppress_context__
        fault_cases.tried("tf_epochs bit flips, iterated")


@pytest.mark.parametrize("streamed", [True, False])
def test_a_flipped_bit_stops_the_in_order_read_as_the_generator_s_read(
    tmp_path: Path, fault_cases: Any, streamed: bool
) -> None:
    write(tmp_path / "pristine", 30)
    rng = random.Random(SEED + 2)
    for case in range(FLIPS):
        root = tmp_path / f"flip{case}"
        shutil.copytree(tmp_path / "pristine", root)
        paths = shard_paths(root)
        shard = rng.randrange(len(paths))
        path = paths[shard]
        offsets = record_offsets(path)
        record = rng.randrange(len(offsets))
        flip_bit(path, (offsets[record] + 12 + 2) * 8 + rng.randrange(8))  # in the record's data
        handle = rk.open(root, "train")
        index = sum(len(record_offsets(p)) for p in paths[:shard]) + record
        world = 1 + case % 2
        epochs = handle.tf_epochs(2, rank=index // 2 % world, world_size=world)  # the rank that reads it
        epochs._streams = streamed
        with pytest.raises(tf.errors.OpError) as info:
            list(epochs.dataset())
        # TensorFlow's message holds recordkit's (after a word of its own where the error
        # comes from a function of the pipeline's, as the streamed read's does).
        message = (
            f"shard {path.name}, offset {offsets[record]}, record {index}: data CRC mismatch (corrupt record)"
        )
        assert f"CorruptRecordError: {message}\n" in info.value.message
        with pytest.raises(rk.errors.CorruptRecordError) as raised:
            list(epochs)
        assert str(raised.value) == message
        assert raised.value.__suppress_context__
        fault_cases.tried("tf_epochs in order, bit flips")


def test_a_shard_cut_short_stops_the_in_order_read_as_the_generator_s_read(
    tmp_path: Path, fault_cases: Any
) -> None:
    write(tmp_path / "cut", 30)
    path = shard_paths(tmp_path / "cut")[1]
    offsets = record_offsets(path)
    truncate(path, offsets[4] + 20)  # the shard's fifth record cut short
    handle = rk.open(tmp_path / "cut", "train")
    messages = []
    for streamed in (True, False):
        epochs = handle.tf_epochs(4)
        epochs._streams = streamed
        with pytest.raises(rk.errors.CorruptRecordError) as raised:
            list(epochs)
        messages.append(str(raised.value))
    assert messages[0].startswith(f"shard {path.name}")
    assert messages[0] == messages[1]
    fault_cases.tried("tf_epochs in order, truncations")


@pytest.mark.parametrize("streamed", [True, False])
def test_a_hostile_length_stops_the_in_order_read_naming_the_record(
    tmp_path: Path, fault_cases: Any, streamed: bool
) -> None:
    # A header declaring 2**40 bytes with a valid CRC: TensorFlow would allocate them.
    write(tmp_path / "hostile", 30)
    path = shard_paths(tmp_path / "hostile")[1]
    offsets = record_offsets(path)
    set_declared_length(path, offsets[6], 1 << 40)
    epochs = rk.open(tmp_path / "hostile", "train").tf_epochs(4)
    epochs._streams = streamed
    with pytest.raises(rk.errors.CorruptRecordError) as raised:
        list(epochs)
    assert str(raised.value).startswith(f"shard {path.name}, offset {offsets[6]}, record 16")
    fault_cases.tried("tf_epochs in order, hostile lengths")


def test_a_flipped_bit_in_a_large_record_stops_the_shuffled_read_naming_the_record(
    tmp_path: Path, fault_cases: Any
) -> None:
    # Records of 20 KB and more: a shuffled batch is read a record a read, each checked as
    # it is read (recordkit/read/_batched_access.py); a damaged one is named all the same.
    schema = rk.Schema(name="texts", fields={"text": rk.FieldSpec(codec="text")})
    records = [{"text": f"{i:05d}" + "x" * (20_000 + 300 * i)} for i in range(24)]
    pristine = tmp_path / "pristine"
    rk.write_dataset(records, pristine, schema, shard_records=8, progress=False, durable=False)
    rng = random.Random(SEED + 5)
    for case in range(FLIPS):
        iterated_flip_error(pristine, tmp_path / f"flip{case}", rng, case, spread=15_000)
        fault_cases.tried("tf_epochs bit flips, large records")
