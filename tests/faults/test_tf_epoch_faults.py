"""Damaged records read through the canonical epochs in tf.data (``Dataset.tf_epochs``):
each bit flip in a record's data stops the read with TensorFlow's error, whose message
begins with recordkit's, naming the shard, offset and record; nothing decodes wrong."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from _fault_support import flip_bit, record_offsets, shard_paths, write

import recordkit as rk

tf = pytest.importorskip("tensorflow")

SEED = 3407
FLIPS = 4


def test_a_flipped_bit_in_a_record_stops_the_tf_epoch_read_naming_the_record(
    tmp_path: Path, fault_cases: Any
) -> None:
    pristine = tmp_path / "pristine"
    write(pristine, 30)
    rng = random.Random(SEED)
    for case in range(FLIPS):
        root = tmp_path / f"flip{case}"
        shutil.copytree(pristine, root)
        path = rng.choice(shard_paths(root))
        offsets = record_offsets(path)
        record = rng.randrange(len(offsets))
        flip_bit(path, (offsets[record] + 12 + 2) * 8 + rng.randrange(8))  # in the record's data
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
        root = tmp_path / f"flip{case}"
        shutil.copytree(pristine, root)
        path = rng.choice(shard_paths(root))
        offsets = record_offsets(path)
        record = rng.randrange(len(offsets))
        flip_bit(path, (offsets[record] + 12 + 2) * 8 + rng.randrange(8))  # in the record's data
        epochs = rk.open(root, "train").tf_epochs(4, shuffle=True, seed=case, window=8)
        with pytest.raises(rk.errors.CorruptRecordError) as info:
            list(epochs)
        message = str(info.value)
        assert message.startswith(f"shard {path.name}, offset {offsets[record]}, record ")
        assert message.endswith("data CRC mismatch (corrupt record)")
        assert "Traceback" not in message
        assert info.value.__suppress_context__
        fault_cases.tried("tf_epochs bit flips, iterated")
