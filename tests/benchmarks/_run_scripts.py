"""Run several of ``benchmarks/``'s scripts from their command lines, one after the other,
in this one process: ``python _run_scripts.py RUNS.json``.

Each script runs as ``python benchmarks/<script> ARGS...`` would run it (as ``__main__``,
with ``sys.argv`` set to its command line), its output going to files of its own (at the
file-descriptor level, so what TensorFlow's C++ logs is kept apart too). TensorFlow and
PyTorch are imported once for all of them, not once a script: that import was most of
the CPU time of a smoke test run at its tiny size. RUNS.json is a list of
``{"script": ..., "args": [...], "stdout": ..., "stderr": ..., "returncode": ...}``, the
last three paths this writes; a script that fails has its traceback in its stderr file
and does not stop the scripts after it. The environment, the working directory and
``sys.argv`` are put back after each script (remote.py sets its servers' addresses in
the environment); a script that runs for more than 10 minutes fails with a TimeoutError.

What is still alive after a script (the modules it imported, TensorFlow's and PyTorch's
among them: half a million objects and more) is collected once, then frozen
(``gc.freeze``), as the test processes freeze theirs (conftest.py): the later scripts'
full collections no longer walk it each time (busy machine, the smoke runs 3 times each,
alternating: their 18 full collections took 3.9 4.1 5.6 s; frozen, 1.3 1.2 2.2 s).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import runpy
import signal
import sys
import time
import traceback
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
#: Seconds one script may run (what the smoke tests gave each script's own process).
SCRIPT_TIMEOUT = 600


def _timed_out(signum: int, frame: object) -> None:
    raise TimeoutError(f"the script ran for more than {SCRIPT_TIMEOUT} s")


def run_one(script: str, args: list[str], stdout: Path, stderr: Path) -> int:
    """Run ``benchmarks/<script>`` as ``__main__`` with ``args``; its exit status."""
    environ, cwd, argv = dict(os.environ), os.getcwd(), sys.argv[:]
    saved = os.dup(1), os.dup(2)
    with stdout.open("wb") as out, stderr.open("wb") as err:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        code = 0
        try:
            sys.argv = [str(BENCHMARKS / script), *args]
            signal.signal(signal.SIGALRM, _timed_out)
            signal.alarm(SCRIPT_TIMEOUT)
            runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except Exception:  # reported in its stderr; the next script runs
            traceback.print_exc()
            code = 1
        finally:
            signal.alarm(0)
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sys.argv = argv
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(environ)
    return code


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    for run in json.loads(Path(sys.argv[1]).read_text()):
        wall, cpu = time.perf_counter(), _cpu_seconds()
        code = run_one(run["script"], run["args"], Path(run["stdout"]), Path(run["stderr"]))
        Path(run["returncode"]).write_text(str(code))
        # What each script cost, for whoever makes the smoke tests cheaper (the first one
        # run pays for the imports the others share).
        cost = {"wall_seconds": time.perf_counter() - wall, "cpu_seconds": _cpu_seconds() - cpu}
        Path(run["returncode"]).with_name("cost.json").write_text(json.dumps(cost))
        gc.collect()  # what the script left unreachable, before the rest is frozen
        gc.freeze()


if __name__ == "__main__":
    main()
