"""SIGKILL at generated moments of a write, a resume and an append, including the
manifest's saves (the very first one too) and the multi-worker writer; then the write is
resumed. Every record is in the dataset exactly once, ``recordkit verify`` passes, and
no temporary file is left.

The moments are chosen by a seeded generator among: the k-th record added to a shard,
before the k-th shard rename, before the k-th manifest rename, right after the k-th
rename, before the k-th fsync. The writer kills itself (``_killed_writer.py``), so the
moment is exact and a failure reproduces.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _fault_support import SCHEMA, ids, records, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main

HERE = Path(__file__).parent
SEED = 1204
KINDS = ("record", "shard-rename", "manifest-rename", "after-rename", "fsync")
N = 40
OLD = 20  # records of the finished dataset an append starts from


def _kill(root: Path, mode: str, kind: str, k: int, workers: int, start: int) -> int:
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "_killed_writer.py"),
            str(root),
            mode,
            kind,
            str(k),
            str(N),
            str(start),
            str(workers),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr[-3000:]
    return done.returncode


def _cases(count: int, seed: int) -> list[tuple[str, str, int]]:
    rng = random.Random(seed)
    out = [("write", "manifest-rename", 0)]  # the first manifest save
    while len(out) < count:
        mode = rng.choice(("write", "append", "resume"))
        kind = rng.choice(KINDS)
        limit = {"record": N, "shard-rename": 6, "manifest-rename": 8, "after-rename": 12, "fsync": 14}[kind]
        out.append((mode, kind, rng.randrange(limit)))
    return out


def _run_case(tmp_path: Path, mode: str, kind: str, k: int, workers: int = 0) -> None:
    root = tmp_path / "dataset"
    expected = list(range(N))
    if mode == "append":
        write(root, OLD, start=1000, shard_records=7)
        expected = list(range(1000, 1000 + OLD)) + expected
    elif mode == "resume":  # a first write killed early, then a resume killed in turn
        _kill(root, "write", "record", 9, 0, 0)
    _kill(root, mode, kind, k, workers, 0)
    # Whatever state the kill left, resuming with the same input completes the write.
    if (root / "dataset.json").exists():
        resume = rk.Manifest.load(root).splits.get("train")
        unfinished = resume is not None and resume.unfinished is not None
    else:
        unfinished = True
    if unfinished:
        rk.write_dataset(records(N), SCHEMA, root, "train", shard_records=7, resume=True, progress=False)
    assert sorted(ids(root)) == sorted(expected), (mode, kind, k)
    assert ids(root) == expected, "in input order"
    result = CliRunner().invoke(main, ["verify", str(root)])
    assert result.exit_code == 0, result.output
    leftovers = [p.name for p in root.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == [], (mode, kind, k)


@pytest.mark.parametrize(("mode", "kind", "k"), _cases(4, SEED))
def test_killed_then_resumed(tmp_path: Path, mode: str, kind: str, k: int, fault_cases: Any) -> None:
    fault_cases.tried(f"SIGKILL during {mode}")
    _run_case(tmp_path, mode, kind, k)


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "kind", "k"), _cases(7, SEED + 1)[1:])
def test_killed_then_resumed_more_moments(
    tmp_path: Path, mode: str, kind: str, k: int, fault_cases: Any
) -> None:
    fault_cases.tried(f"SIGKILL during {mode}")
    _run_case(tmp_path, mode, kind, k)


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "k"), [("record", 17)])
def test_a_killed_multi_worker_writer_resumes(tmp_path: Path, kind: str, k: int, fault_cases: Any) -> None:
    fault_cases.tried("SIGKILL during write (2 workers)")
    _run_case(tmp_path, "write", kind, k, workers=2)
