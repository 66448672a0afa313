"""How every figure is measured: warm up once, then the median of a few repetitions.

The warm-up run also samples the resident memory of the process and its children (a
background thread, every few milliseconds), so the timed repetitions run unobserved.
Times come from :func:`time.perf_counter`; the repetitions of the cases being compared
are interleaved (see :func:`measure`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypedDict, TypeVar

import psutil

__all__ = [
    "Case",
    "IteratorPass",
    "Repeated",
    "RssSampler",
    "Timing",
    "Untimed",
    "measure",
    "repeated",
    "timed_pass",
]

K = TypeVar("K")


class RssSampler:
    """Samples the resident set size of this process plus its children in a thread;
    :attr:`peak_delta` is the highest total seen minus the total at the start."""

    def __init__(self, interval: float = 0.005) -> None:
        self._process = psutil.Process()
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.start_rss = 0
        self.peak_rss = 0

    def _total(self) -> int:
        total: int = self._process.memory_info().rss
        for child in self._process.children(recursive=True):
            with contextlib.suppress(psutil.Error):  # the child ended between listing and reading
                total += child.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.peak_rss = max(self.peak_rss, self._total())

    def __enter__(self) -> RssSampler:
        self.start_rss = self.peak_rss = self._total()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_rss = max(self.peak_rss, self._total())

    @property
    def peak_delta(self) -> int:
        return self.peak_rss - self.start_rss


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds of one pass over the workload: every repetition, and their median."""

    seconds: tuple[float, ...]
    passes: int
    peak_rss_delta: int
    #: This process's CPU seconds of each repetition's pass (worker processes not counted;
    #: steadier than wall time on a loaded machine).
    cpu_seconds: tuple[float, ...] = ()

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


@dataclasses.dataclass(frozen=True)
class Untimed:
    """What a ``run`` returns when part of its pass must not count: those seconds (a
    tf.data iterator's teardown, see :class:`IteratorPass`), left out of its time."""

    seconds: float


@dataclasses.dataclass(frozen=True)
class Case:
    """One thing to time: ``run`` is one pass over a workload (it may return
    :class:`Untimed`: seconds of it left out); ``cleanup`` runs after each timed
    repetition, untimed (e.g. to delete what a write produced)."""

    run: Callable[[], object]
    cleanup: Callable[[], object] | None = None
    #: A repetition runs enough passes to last about this long (0: one pass).
    min_seconds: float = 0.0


def measure(cases: Mapping[K, Case], *, repeats: int) -> dict[K, Timing]:
    """Time every case: a warm-up pass each (memory sampled, not timed), then
    ``repeats`` rounds in which every case runs once.

    Rounds interleave the cases (and rotate their order), so a change in the machine's
    load during the run (the cores are shared) falls on all of them alike and the
    ratios between them stay fair. When a case's warm-up pass is shorter than its
    ``min_seconds``, its repetitions run enough passes to last about that long, and
    the time per pass is reported.
    """
    passes: dict[K, int] = {}
    peaks: dict[K, int] = {}
    for key, case in cases.items():
        with RssSampler() as sampler:
            start = time.perf_counter()
            case.run()
            warm = time.perf_counter() - start
        peaks[key] = sampler.peak_delta
        passes[key] = max(1, math.ceil(case.min_seconds / warm)) if case.min_seconds > 0 and warm > 0 else 1
    seconds: dict[K, list[float]] = {key: [] for key in cases}
    cpu: dict[K, list[float]] = {key: [] for key in cases}
    order = list(cases)
    for round_ in range(repeats):
        shift = round_ % max(len(order), 1)
        for key in order[shift:] + order[:shift]:
            case = cases[key]
            start, cpu_start = time.perf_counter(), time.process_time()
            untimed = 0.0
            for _ in range(passes[key]):
                result = case.run()
                if isinstance(result, Untimed):
                    untimed += result.seconds
            seconds[key].append((time.perf_counter() - start - untimed) / passes[key])
            cpu[key].append((time.process_time() - cpu_start) / passes[key])
            if case.cleanup is not None:
                case.cleanup()
    return {key: Timing(tuple(seconds[key]), passes[key], peaks[key], tuple(cpu[key])) for key in cases}


class Repeated(TypedDict):
    """What :func:`repeated` gives: the records of a run, every repetition's seconds, and
    records/s at the median, at the fastest and at each repetition."""

    records: int
    seconds: list[float]
    records_per_s: float
    records_per_s_best: float
    records_per_s_each: list[float]


def repeated(run: Callable[[], int], repeats: int) -> Repeated:
    """Time ``repeats`` runs of ``run`` (which returns how many records it read): every
    repetition's seconds, the fastest and the median, and records/s at each, so a
    spread between runs stays visible (the scripts outside ``run.py`` report this)."""
    seconds: list[float] = []
    count = 0
    for _ in range(repeats):
        start = time.perf_counter()
        count = run()
        seconds.append(time.perf_counter() - start)
    best, median = min(seconds), statistics.median(seconds)
    return {
        "records": count,
        "seconds": seconds,
        "records_per_s": count / median if median else math.inf,
        "records_per_s_best": count / best if best else math.inf,
        "records_per_s_each": [count / s if s else math.inf for s in seconds],
    }


def timed_pass(dataset: Iterable[Any]) -> tuple[float, float]:
    """One pass over ``dataset``: the wall and CPU seconds (this process's) from its
    iterator's creation to its last element. The iterator's teardown comes after and is
    left out, as :class:`IteratorPass` leaves it out (the scripts outside ``run.py``
    that compare tf.data pipelines by their passes use this)."""
    wall, cpu = time.perf_counter(), time.process_time()
    iterator = iter(dataset)
    for _ in iterator:
        pass
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    del iterator
    return wall, cpu


class IteratorPass:
    """One pass over a tf.data dataset, timed from the iterator's creation to its last
    element; its teardown (the iterator deleted) is timed apart, kept in
    :attr:`teardowns`, and left out of the pass.

    With tf.data's autotuner on, deleting a finished iterator waited 0.1 to 0.6 s in
    about half the passes on the 2-core benchmark machine (with about 1 ms of CPU in the
    whole process: a wait, not work), against 1 to 5 ms with it off. Counted in a pass
    of 1,500 records, that put the passes of the limit pipeline on two levels that had
    nothing to do with reading. ``count`` gives the records of one element; the pass
    checks that it saw ``records``."""

    def __init__(self, dataset: Iterable[Any], records: int, count: Callable[[Any], int], name: str) -> None:
        self._dataset = dataset
        self._records = records
        self._count = count
        self._name = name
        self.teardowns: list[float] = []

    def __call__(self) -> Untimed:
        iterator = iter(self._dataset)
        seen = sum(self._count(element) for element in iterator)
        read = time.perf_counter()
        del iterator
        teardown = time.perf_counter() - read
        self.teardowns.append(teardown)
        if seen != self._records:
            raise RuntimeError(f"{self._name} read {seen} records, not {self._records}")
        return Untimed(teardown)
