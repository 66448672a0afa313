"""Smoke test of benchmarks/jpeg_dct.py at a tiny size: both DCTs are timed in TensorFlow
and in the numpy reader's decoder, every pass printed, with the PSNRs; never how fast
(those figures come from a quiet machine)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _benchmark_support import ScriptResult, ScriptRun, script_run

RUN = script_run("jpeg_dct.py", "--images", "4", "--passes", "2")


@pytest.mark.slow
def test_the_jpeg_dct_benchmark_times_both_dcts_and_gives_their_psnr(
    benchmark_scripts: Callable[[ScriptRun], ScriptResult],
) -> None:
    done = benchmark_scripts(RUN)
    timings, quality = done.stdout.split("\n\n")
    rows = [line.split(" | ")[0].lstrip("| ") for line in timings.splitlines()[3:]]
    assert rows == [
        "tensorflow, accurate",
        "simplejpeg, accurate",
        "tensorflow, fast",
        "simplejpeg, fast",
        "tensorflow: accurate / fast (medians)",
        "simplejpeg: accurate / fast (medians)",
    ]
    assert all(len(line.split(" | ")[3].split(", ")) == 2 for line in timings.splitlines()[3:7])
    psnr = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ")[1].rstrip(" |")
        for line in quality.splitlines()[2:]
    }
    assert set(psnr) == {
        "accurate vs source",
        "fast vs source",
        "fast vs accurate",
        "largest difference, fast vs accurate (levels)",
    }
    assert 20 < float(psnr["accurate vs source"]) < 60
