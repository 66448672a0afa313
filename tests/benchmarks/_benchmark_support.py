"""Shared by the benchmark smoke tests: ``benchmarks/``'s scripts run from their command
lines, required to succeed.

A smoke test declares its script's command line once, at import (:func:`script_run`),
and reads what it printed and wrote through the ``benchmark_scripts`` fixture
(tests/benchmarks/conftest.py): every command line declared by the collected test
modules runs in one process (``_run_scripts.py``), which imports TensorFlow once for all
of them. At their tiny sizes that import was most of each test's CPU time.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class ScriptRun:
    """``python benchmarks/<script> <args>``, each ``{out}`` in ``args`` standing for a
    folder of the run's own (where a test has the script write its results)."""

    label: str
    script: str
    args: tuple[str, ...]
    #: Modules the script needs: without one, it does not run and its tests skip.
    needs: tuple[str, ...] = ()

    def missing(self) -> list[str]:
        """The modules it needs that are not installed (found, not imported)."""
        return [module for module in self.needs if not _importable(module)]


@dataclasses.dataclass(frozen=True)
class ScriptResult:
    """What a :class:`ScriptRun` printed, and the folder its ``{out}`` stood for."""

    stdout: str
    out: Path


#: Every declared command line, by label, in the order the test modules declared them.
SCRIPTS: dict[str, ScriptRun] = {}


def script_run(script: str, *args: str, label: str | None = None, needs: tuple[str, ...] = ()) -> ScriptRun:
    """Declare that ``benchmarks/<script>`` runs with ``args`` (labelled ``label``, by
    default the script's name), for the ``benchmark_scripts`` fixture; not run when one
    of the modules it ``needs`` is missing (its tests skip then, without importing them)."""
    run = ScriptRun(label or Path(script).stem, script, args, needs)
    if not run.missing():
        assert SCRIPTS.setdefault(run.label, run) == run, f"two command lines labelled {run.label!r}"
    return run


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def benchmark_environment() -> dict[str, str]:
    """This environment with the repository first on ``PYTHONPATH`` (``benchmarks`` is a
    package of the checkout, not of the installed distribution)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))


def assert_measured_commit(results: dict[str, Any]) -> None:
    """``results`` (a benchmark's JSON) name the commit they measured: this checkout's."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert results["git"]["commit"] == head.stdout.strip()
    assert isinstance(results["git"]["dirty"], bool)
