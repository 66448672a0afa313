"""The ``benchmark_scripts`` fixture: every benchmark command line that the collected
smoke tests declared (``_benchmark_support.script_run``), run once in one process.

Under pytest-xdist the workers share one folder (the parent of their temporary
folders), and a lock in it: the first worker that needs a script runs every declared
one that has not run yet, and the others read what it wrote, so no script runs twice in
a session. The run is long for one test's share (the smoke tests of every benchmark
together), so the tests that use it get a longer timeout than the suite's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _benchmark_support import ROOT, SCRIPTS, ScriptResult, ScriptRun, benchmark_environment

#: Seconds a test that uses the fixture may take: the whole run happens in one test's setup.
TIMEOUT = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "benchmark_scripts" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(TIMEOUT))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(runs: list[ScriptRun], folder: Path) -> None:
    """Run ``runs`` in one process, each writing into ``folder / label``."""
    specs = []
    for run in runs:
        out = folder / run.label
        out.mkdir()
        specs.append(
            {
                "script": run.script,
                "args": [arg.replace("{out}", str(out)) for arg in run.args],
                "stdout": str(out / "stdout.txt"),
                "stderr": str(out / "stderr.txt"),
                "returncode": str(out / "returncode.txt"),
            }
        )
    listing = folder / f"runs-{len(list(folder.glob('runs-*.json')))}.json"
    listing.write_text(json.dumps(specs, indent=1))
    subprocess.run(
        [sys.executable, str(Path(__file__).with_name("_run_scripts.py")), str(listing)],
        cwd=ROOT,
        env=benchmark_environment(),
        timeout=TIMEOUT,
        check=False,
    )


@pytest.fixture(scope="session")
def benchmark_scripts(tmp_path_factory: pytest.TempPathFactory) -> Callable[[ScriptRun], ScriptResult]:
    """What a declared command line printed and wrote, after checking that it exited 0
    (else the end of its stderr is the failure's message); the test skips when the
    script needs a module that is not installed."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent / "benchmark-scripts"
        folder.mkdir(exist_ok=True)
    else:
        folder = tmp_path_factory.mktemp("benchmark-scripts")

    def result(run: ScriptRun) -> ScriptResult:
        if run.missing():
            pytest.skip(f"{run.script} needs {', '.join(run.missing())}")
        out = folder / run.label
        with _locked(folder / "lock"):
            if not out.exists():
                _run([r for r in SCRIPTS.values() if not (folder / r.label).exists()], folder)
        if not (out / "returncode.txt").exists():
            pytest.fail(f"{run.script} did not finish: the process running it ended first")
        code = (out / "returncode.txt").read_text()
        assert code == "0", f"{run.script} exited {code}:\n" + (out / "stderr.txt").read_text()[-3000:]
        return ScriptResult((out / "stdout.txt").read_text(), out)

    return result
