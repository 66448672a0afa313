"""The commit a benchmark measured: every benchmark's JSON records it (``run.py``'s
results and each standalone script's), so that a figure can be traced to the code that
produced it, and a file measured on uncommitted changes says so (``dirty``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

__all__ = ["measured_commit", "stamped"]

#: The repository's root (the benchmarks' parent folder).
ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def measured_commit() -> dict[str, Any]:
    """The checkout's commit (None outside a git checkout) and whether its tracked files
    had changes."""
    # Untracked files (a result file the run is writing) are not changes to the code measured.
    changes = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": _git("rev-parse", "HEAD"), "dirty": bool(changes)}


def stamped(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` with the commit they measured under ``"git"``."""
    return {**results, "git": measured_commit()}
