"""Bit flips at random offsets and truncations at random sizes of shards, plain and
compressed (seeded): every one is caught by ``recordkit verify`` and by both readers,
with an error naming the shard; nothing decodes silently wrong."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from _fault_support import flip_bit, shard_paths, truncate, write
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
