"""Smoke test of benchmarks/canonical_wav.py at a tiny size: both ways read every case in
processes of their own and the ratios are printed; never how fast (those figures come
from a quiet machine)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, script_run

RUN = script_run("canonical_wav.py", "--records", "8", "--passes", "1", "--rounds", "1", "--batch", "4")


@pytest.mark.slow
def test_the_canonical_wav_benchmark_runs(benchmark_scripts: Callable[[ScriptRun], ScriptResult]) -> None:
    done = benchmark_scripts(RUN)
    lines = done.stdout.splitlines()[1:]
    rows = [(line[:24].strip(), line[25:34].strip()) for line in lines]
    cases = ("audio, batched", "every field, batched", "every field, unbatched")
    assert rows == [(case, way) for case in cases for way in ("canonical", "general", "ratio")]
    assert all(line.split()[-1].endswith("x") for line in lines if line[25:34].strip() == "ratio")
