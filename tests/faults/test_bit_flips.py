"""Bit flips at random offsets and truncations at random sizes of shards, plain and
compressed (seeded): every one is caught by ``recordkit verify`` and by both readers,
with an error naming the shard; nothing decodes silently wrong."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from _fault_support import flip_bit, record_offsets, shard_paths, truncate, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main

SEED = 1203
FLIPS = 24
CUTS = 12


@pytest.fixture(scope="module", params=[None, "GZIP"])
def pristine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("flips") / "dataset"
    write(root, 30, compression=request.param)
    return root


def _damaged(pristine: Path, tmp_path: Path, damage: Any) -> tuple[Path, str]:
    import shutil

    root = tmp_path / "dataset"
    shutil.copytree(pristine, root)
    path = damage(root)
    return root, path.name


def _check_caught(root: Path, shard: str) -> None:
    with pytest.raises(rk.errors.RecordkitError) as info:
        list(rk.iter_records(root, verify_sha256=True))
    assert info.value.shard == shard, str(info.value)
    result = CliRunner().invoke(main, ["verify", str(root)])
    assert result.exit_code == 1, result.output
    assert any(line.startswith("FAIL") and shard in line for line in result.output.splitlines())
    assert "Traceback" not in result.output


def test_bit_flips_are_caught(
    pristine: Path, tmp_path_factory: pytest.TempPathFactory, fault_cases: Any
) -> None:
    rng = random.Random(SEED)
    for case in range(FLIPS):

        def damage(root: Path) -> Path:
            path = rng.choice(shard_paths(root))
            flip_bit(path, rng.randrange(path.stat().st_size * 8))
            return path

        root, shard = _damaged(pristine, tmp_path_factory.mktemp(f"flip{case}"), damage)
        fault_cases.tried("bit flips")
        _check_caught(root, shard)
        # without the sha256 check, the CRCs alone catch it (or the size, when compressed)
        with pytest.raises(rk.errors.RecordkitError):
            list(rk.iter_records(root))


def test_truncations_are_caught(
    pristine: Path, tmp_path_factory: pytest.TempPathFactory, fault_cases: Any
) -> None:
    rng = random.Random(SEED + 1)
    for case in range(CUTS):

        def damage(root: Path) -> Path:
            path = rng.choice(shard_paths(root))
            truncate(path, rng.randrange(path.stat().st_size))
            return path

        root, shard = _damaged(pristine, tmp_path_factory.mktemp(f"cut{case}"), damage)
        fault_cases.tried("truncations")
        _check_caught(root, shard)


@pytest.mark.slow
def test_load_dataset_catches_flips_and_truncations(
    pristine: Path, tmp_path_factory: pytest.TempPathFactory, fault_cases: Any
) -> None:
    pytest.importorskip("tensorflow")
    rng = random.Random(SEED + 2)
    for case in range(6):

        def damage(root: Path, case: int = case) -> Path:
            path = rng.choice(shard_paths(root))
            if case % 2:
                truncate(path, rng.randrange(path.stat().st_size))
            else:
                flip_bit(path, rng.randrange(path.stat().st_size * 8))
            return path

        root, shard = _damaged(pristine, tmp_path_factory.mktemp(f"tf{case}"), damage)
        fault_cases.tried("bit flips and truncations (tf.data)")
        with pytest.raises(Exception) as info:  # noqa: PT011 - a recordkit error or TF's, checked below
            list(rk.load_dataset(root, verify_sha256=True))
        assert shard in str(info.value)


def _record_at(offsets: list[int], byte: int) -> int:
    """The number of the record whose framed bytes hold ``byte``."""
    return max(k for k, offset in enumerate(offsets) if offset <= byte)


def test_load_dataset_names_the_record_of_every_flip_without_hashing(
    tmp_path_factory: pytest.TempPathFactory, fault_cases: Any
) -> None:
    """Without ``verify_sha256``, a flipped bit anywhere in a plain shard (a record's
    length, its CRCs or its data) stops the tf.data read with the error naming the shard,
    the offset of the record it is in and the records before it, whether the header
    walk made when the read is built saw the damage or only TensorFlow's CRC check finds it."""
    pytest.importorskip("tensorflow")
    import tensorflow as tf

    pristine = tmp_path_factory.mktemp("flips-tf") / "dataset"
    write(pristine, 30)
    rng = random.Random(SEED + 3)
    for case in range(8):
        flipped: list[int] = []

        def damage(root: Path, flipped: list[int] = flipped) -> Path:
            path = rng.choice(shard_paths(root))
            bit = rng.randrange(path.stat().st_size * 8)
            flipped.append(bit // 8)
            flip_bit(path, bit)
            return path

        root, shard = _damaged(pristine, tmp_path_factory.mktemp(f"tf-flip{case}"), damage)
        offsets = record_offsets(pristine / shard)
        record = _record_at(offsets, flipped[0])
        fault_cases.tried("bit flips (tf.data, no sha256)")
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            list(rk.load_dataset(root, batch_size=4))
        named = f"CorruptRecordError: shard {shard}, offset {offsets[record]}: "
        assert named in str(info.value), (flipped, str(info.value))
        assert f"; {record} of {len(offsets)} records could be read" in str(info.value)


@pytest.mark.parametrize("cut", ["at a record's end", "inside a record"])
def test_a_shard_cut_after_the_read_was_built_is_named_when_read(
    tmp_path: Path, fault_cases: Any, cut: str
) -> None:
    """The shards are walked when the read is built; a shard cut after that (where
    TensorFlow alone would end the shard quietly at a record's end) is named when the
    read reaches it, with the records it still holds, pass after pass."""
    pytest.importorskip("tensorflow")
    import tensorflow as tf

    root = tmp_path / "dataset"
    write(root, 30)
    shard = shard_paths(root)[1]
    offsets = record_offsets(shard)
    dataset = rk.load_dataset(root, batch_size=4)
    assert sum(int(batch["id"].shape[0]) for batch in dataset) == 30
    data = shard.read_bytes()
    shard.write_bytes(data[: offsets[6] + (0 if cut == "at a record's end" else 9)])
    fault_cases.tried("truncations (tf.data, after the read was built)")
    for _ in range(2):
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            list(dataset)
        assert f"CorruptRecordError: shard {shard.name}, offset {offsets[6]}: " in str(info.value)
        assert "; 6 of 10 records could be read" in str(info.value)
