"""Concurrent writers and appenders on one dataset folder, and readers while a writer
appends.

Writers hold the folder's lock (``recordkit.write._lock``): of two started together,
one writes and the other fails at once with one line naming the folder and the
holder's pid; with ``wait=`` they take turns and every record of both is in the
dataset once. A reader running while a writer appends sees the dataset as it was or as
it is after the append, never a part of it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _fault_support import SCHEMA, ids, records, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main

HERE = Path(__file__).parent


def _start(root: Path, mode: str, start: int, n: int, wait: str, go: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            str(HERE / "_concurrent_writer.py"),
            str(root),
            mode,
            str(start),
            str(n),
            wait,
            str(go),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _results(processes: list[subprocess.Popen[str]]) -> list[str]:
    out = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr[-3000:]
        out.append(stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("mode", ["write", "append"])
def test_a_second_writer_fails_at_once_naming_the_holder(tmp_path: Path, mode: str, fault_cases: Any) -> None:
    fault_cases.tried("concurrent writers and appenders")
    root = tmp_path / "dataset"
    if mode == "append":
        write(root, 10, start=1000, shard_records=5)
    go = tmp_path / "go"
    processes = [_start(root, mode, 100 * i, 40, "no", go) for i in range(2)]
    go.touch()
    results = _results(processes)
    assert sorted(r == "ok" for r in results) == [False, True], results
    (refused,) = [r for r in results if r != "ok"]
    assert refused.startswith("DatasetLockedError: file ")
    assert str(root) in refused
    assert "\n" not in refused
    pids = {str(p.pid) for p in processes}
    assert any(f"pid {pid}" in refused for pid in pids), refused
    (winner,) = [i for i, r in enumerate(results) if r == "ok"]
    expected = list(range(1000, 1010)) if mode == "append" else []
    assert sorted(ids(root)) == sorted(expected + list(range(100 * winner, 100 * winner + 40)))
    assert CliRunner().invoke(main, ["verify", str(root)]).exit_code == 0


def test_writers_that_wait_take_turns(tmp_path: Path, fault_cases: Any) -> None:
    fault_cases.tried("concurrent writers and appenders", 3)
    root = tmp_path / "dataset"
    write(root, 10, start=1000, shard_records=5)
    go = tmp_path / "go"
    processes = [_start(root, "append", 100 * i, 20, "120", go) for i in range(3)]
    go.touch()
    assert _results(processes) == ["ok", "ok", "ok"]
    expected = list(range(1000, 1010)) + [100 * i + j for i in range(3) for j in range(20)]
    assert sorted(ids(root)) == sorted(expected)
    result = CliRunner().invoke(main, ["verify", str(root)])
    assert result.exit_code == 0, result.output


def test_a_reader_sees_the_old_or_the_new_dataset_never_a_mix(tmp_path: Path, fault_cases: Any) -> None:
    root = tmp_path / "dataset"
    write(root, 10, start=1000, shard_records=5)
    old = list(range(1000, 1010))
    new = old + list(range(0, 60))
    go = tmp_path / "go"
    appender = _start(root, "append", 0, 60, "no", go)
    go.touch()
    seen: set[int] = set()
    reads = 0
    while appender.poll() is None or reads < 3:
        got = sorted(ids(root))
        assert got in (sorted(old), sorted(new)), f"a mix of {len(got)} records"
        seen.add(len(got))
        reads += 1
        if appender.poll() is not None and reads >= 3:
            break
    assert _results([appender]) == ["ok"]
    assert sorted(ids(root)) == sorted(new)
    fault_cases.tried("readers while a writer appends", reads)


def test_the_lock_is_released_when_its_holder_is_killed(tmp_path: Path, fault_cases: Any) -> None:
    fault_cases.tried("concurrent writers and appenders")
    root = tmp_path / "dataset"
    go = tmp_path / "go"
    holder = _start(root, "write", 0, 200, "no", go)
    go.touch()
    deadline = time.monotonic() + 120
    while not (root / "dataset.json").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(rk.errors.DatasetLockedError, match=f"pid {holder.pid}"):
        rk.write_dataset(records(3), SCHEMA, root, "other", append=True, progress=False)
    holder.kill()
    holder.communicate(timeout=60)  # reaps it and closes its pipes
    # The OS dropped the lock with the process: the next writer goes ahead, and resumes.
    rk.write_dataset(records(200), SCHEMA, root, "train", shard_records=5, resume=True, progress=False)
    assert ids(root) == list(range(200))
    assert os.path.exists(root / ".recordkit.lock")
