"""Shared by the benchmark smoke tests: one of ``benchmarks/``'s scripts run as a user
runs it (from the repository, in a process of its own), required to succeed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_benchmark(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``benchmarks/<script>`` with ``args``; its completed process, after checking
    that it exited 0 (else the end of its stderr is the failure's message)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def assert_measured_commit(results: dict[str, Any]) -> None:
    """``results`` (a benchmark's JSON) name the commit they measured: this checkout's."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert results["git"]["commit"] == head.stdout.strip()
    assert isinstance(results["git"]["dirty"], bool)
