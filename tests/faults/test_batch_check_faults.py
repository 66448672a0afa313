"""Bit flips anywhere in a record (its length, the length's CRC, its data or the data's
CRC), read through the readers that check a batch's records at once: the epoch stream
(shuffled, and resumed on another rank count), a mixture's and random access in batches.
Each stops at the damaged record with the error that reading that record alone gives,
naming its shard, offset and record; nothing decodes silently wrong."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _fault_support import flip_bit, record_offsets, shard_paths, write

import recordkit as rk
from recordkit.errors import CorruptRecordError
from recordkit.format import _framing_check  # private: runs of any length checked in numpy steps

SEED = 5081
FLIPS = 16


def damaged_copy(pristine: Path, root: Path, rng: random.Random) -> tuple[Path, int]:
    """A copy of ``pristine`` with one bit flipped somewhere in one record, and the
    number of that record in the split."""
    shutil.copytree(pristine, root)
    paths = shard_paths(root)
    shard = rng.randrange(len(paths))
    offsets = [*record_offsets(paths[shard]), paths[shard].stat().st_size]
    record = rng.randrange(len(offsets) - 1)
    flip_bit(paths[shard], offsets[record] * 8 + rng.randrange((offsets[record + 1] - offsets[record]) * 8))
    before = sum(len(record_offsets(path)) for path in paths[:shard])
    return root, before + record


def alone(root: Path, number: int) -> str:
    """The error reading record ``number`` on its own gives."""
    with pytest.raises(CorruptRecordError) as info:
        rk.RandomAccess(root)[number]
    return str(info.value)


def batch_readers(root: Path, other: Path, seed: int, resumed_at: int) -> dict[str, Callable[[], object]]:
    """Reads of every record of ``root`` through each reader that checks batches at once."""
    ds = rk.open(root, "train")
    return {
        "shuffled epoch": lambda: list(ds.epoch_stream(shuffle=True, seed=seed, window=8)),
        "resumed on 2 ranks": lambda: [
            r
            for rank in range(2)
            for r in ds.epoch_stream(
                shuffle=True, seed=seed, window=8, rank=rank, world_size=2, start=resumed_at
            )
        ],
        "mixture": lambda: list(
            rk.mix({ds: 0.6, rk.open(other, "train"): 0.4}, samples_per_epoch=60).epoch_stream(
                shuffle=True, seed=seed
            )
        ),
        "random access batch": lambda: rk.RandomAccess(root).read_batch(list(range(30))[::-1]),
    }


@pytest.mark.parametrize("checks", ["as the run's length decides", "in numpy steps, however short the run"])
def test_a_flipped_bit_read_in_a_batch_raises_the_error_the_record_alone_raises(
    tmp_path: Path, fault_cases: Any, checks: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if checks.startswith("in numpy"):  # the runs of these small datasets are checked record by record
        monkeypatch.setattr(_framing_check, "_FEW_IN_RUN", 0)
    pristine = tmp_path / "pristine"
    write(pristine, 30)
    other = tmp_path / "other"
    write(other, 20)
    rng = random.Random(SEED)
    for case in range(FLIPS):
        root, number = damaged_copy(pristine, tmp_path / f"flip{case}", rng)
        expected = alone(root, number)
        assert f"record {number}" in expected
        order = [
            int(r["id"]) for r in rk.open(pristine, "train").epoch_stream(shuffle=True, seed=case, window=8)
        ]
        resumed_at = 3 if number not in order[:3] else 0  # resumed past it, it would not be read
        readers = batch_readers(root, other, case, resumed_at)
        for name, read in readers.items():
            with pytest.raises(CorruptRecordError) as info:
                read()
            assert str(info.value) == expected, name
        fault_cases.tried("bit flips read in batches", len(readers))
