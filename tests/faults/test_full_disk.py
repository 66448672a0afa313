"""A full disk: the write fails, the dataset keeps its earlier state (every shard the
manifest lists complete and verified), and once there is room the write resumes and
completes. Runs on a small tmpfs, which needs root; skipped, saying so, otherwise."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _fault_support import SCHEMA
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main

N = 120


def _records() -> Iterator[dict[str, Any]]:
    for i in range(N):
        yield {"id": i, "payload": f"{i:04d}" * 1000}  # 4 KB each: ~480 KB in all


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; the full-disk case runs in CI as root")
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make a small tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(disk)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_keeps_the_earlier_state_and_resumes(small_disk: Path, fault_cases: Any) -> None:
    fault_cases.tried("full disk")
    root = small_disk / "dataset"
    with pytest.raises((OSError, rk.errors.RecordkitError)) as info:
        rk.write_dataset(_records(), SCHEMA, root, shard_records=8, progress=False)
    if isinstance(info.value, OSError):
        assert info.value.errno == errno.ENOSPC
    manifest = rk.Manifest.load(root)
    split = manifest.split("train")
    assert split.unfinished is not None
    assert split.num_records < N
    # What the manifest lists is complete and intact (verify: every shard ok, status 3
    # only because the write is unfinished).
    result = CliRunner().invoke(main, ["verify", str(root)])
    assert result.exit_code == 3, result.output
    assert "FAIL" not in result.output
    assert [int(r["id"]) for r in rk.iter_records(root)] == list(range(split.num_records))
    # Room again: the write resumes and completes.
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_disk)], check=True)
    rk.write_dataset(_records(), SCHEMA, root, shard_records=8, resume=True, progress=False)
    assert [int(r["id"]) for r in rk.iter_records(root)] == list(range(N))
    assert CliRunner().invoke(main, ["verify", str(root)]).exit_code == 0
    assert [p.name for p in root.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize(("shard_records", "durable"), [(3, True), (8, True), (8, False), (50, True)])
def test_a_write_stopped_by_a_full_disk_leaves_no_temporary_file(
    small_disk: Path, fault_cases: Any, shard_records: int, durable: bool
) -> None:
    """Whichever write the disk refuses (a chunk, the last chunk at a shard's commit, an
    index, the manifest), the partial shard's temporary file is deleted before the error
    reaches the caller: its space is what the user needs back."""
    fault_cases.tried("full disk")
    root = small_disk / "dataset"
    with pytest.raises((OSError, rk.errors.RecordkitError)):
        rk.write_dataset(
            _records(), SCHEMA, root, shard_records=shard_records, durable=durable, progress=False
        )
    assert sorted(p.name for p in root.iterdir() if p.name.endswith(".tmp")) == []
    split = rk.Manifest.load(root).split("train")
    assert [int(r["id"]) for r in rk.iter_records(root)] == list(range(split.num_records))
