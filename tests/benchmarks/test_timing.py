"""The benchmark harness leaves a pass's untimed part out, and an iterator pass times
its iterator's teardown apart (on a fake clock: no timing thresholds here)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks import _timing
from benchmarks._timing import Case, IteratorPass, Untimed, measure


class FakeClock:
    """``time.perf_counter`` for the harness: it moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(_timing.time, "perf_counter", fake)
    return fake


class SlowToDelete:
    """An iterable whose iterators take ``teardown`` seconds (of the fake clock) to be
    deleted, as a tf.data iterator does with the autotuner on."""

    def __init__(self, clock: FakeClock, items: list[int], *, step: float, teardown: float) -> None:
        self.clock, self.items, self.step, self.teardown = clock, items, step, teardown
        self.deleted = 0

    def __iter__(self) -> Iterator[int]:
        return _SlowIterator(self)


class _SlowIterator:
    def __init__(self, owner: SlowToDelete) -> None:
        self.owner = owner
        self.items = iter(owner.items)

    def __iter__(self) -> _SlowIterator:
        return self

    def __next__(self) -> int:
        item = next(self.items)
        self.owner.clock.now += self.owner.step
        return item

    def __del__(self) -> None:
        self.owner.clock.now += self.owner.teardown
        self.owner.deleted += 1


def test_measure_leaves_out_what_a_pass_returns_as_untimed(clock: FakeClock) -> None:
    def run() -> Untimed:
        clock.now += 2.0  # the work
        clock.now += 3.0  # something after it that must not count
        return Untimed(3.0)

    def plain() -> None:
        clock.now += 4.0

    timings = measure({"untimed": Case(run), "plain": Case(plain)}, repeats=3)
    assert timings["untimed"].seconds == (2.0, 2.0, 2.0)
    assert timings["plain"].seconds == (4.0, 4.0, 4.0)


def test_measure_averages_untimed_passes_over_a_repetition(clock: FakeClock) -> None:
    def run() -> Untimed:
        clock.now += 0.5 + 1.0
        return Untimed(1.0)

    # The warm-up pass takes 1.5 s: a repetition of at least 3 s runs two passes.
    timings = measure({"case": Case(run, min_seconds=3.0)}, repeats=2)
    assert timings["case"].passes == 2
    assert timings["case"].seconds == (0.5, 0.5)


def test_an_iterator_pass_times_the_teardown_apart_and_deletes_the_iterator(clock: FakeClock) -> None:
    data = SlowToDelete(clock, [3, 3, 1], step=0.25, teardown=0.125)
    one_pass = IteratorPass(data, 7, count=lambda batch: int(batch), name="slow")
    start = clock.now
    result = one_pass()
    assert result == Untimed(0.125)
    assert data.deleted == 1
    assert one_pass.teardowns == [0.125]
    assert clock.now - start - result.seconds == 0.75  # the reading alone
    timings = measure({"slow": Case(one_pass)}, repeats=2)
    assert timings["slow"].seconds == (0.75, 0.75)
    assert one_pass.teardowns == [0.125] * 4  # the first pass, the warm-up, two repetitions


def test_an_iterator_pass_checks_the_records_it_saw(clock: FakeClock) -> None:
    one_pass = IteratorPass(SlowToDelete(clock, [3, 3], step=0.1, teardown=0.0), 7, int, "short")
    with pytest.raises(RuntimeError, match="short read 6 records, not 7"):
        one_pass()


def test_an_iterator_pass_reads_a_tf_data_pipeline() -> None:
    tf = pytest.importorskip("tensorflow")
    batches = tf.data.Dataset.range(10).batch(4)
    one_pass = IteratorPass(batches, 10, lambda batch: int(batch.shape[0]), "range")
    assert isinstance(one_pass(), Untimed)
    assert isinstance(one_pass(), Untimed)
    assert len(one_pass.teardowns) == 2
    assert all(seconds >= 0 for seconds in one_pass.teardowns)


def test_a_timed_pass_leaves_its_iterators_teardown_out(clock: FakeClock) -> None:
    slow = SlowToDelete(clock, [1, 2, 3], step=0.25, teardown=5.0)
    wall, cpu = _timing.timed_pass(slow)
    assert wall == pytest.approx(0.75)  # three elements, not the 5 s teardown
    assert cpu >= 0.0
    assert slow.deleted == 1  # the teardown did run, after the pass
