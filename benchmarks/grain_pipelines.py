"""Grain pipelines over ``recordkit.grain.DataSource``, to find the fastest (issue 31).

    python benchmarks/grain_pipelines.py --records 1500 --repeats 3

The mixed workload (every field decoded), batches of 64 (``--batch``) laid out by
``DataSource.batch_fn`` (Grain's own ``np.stack`` fails on images of several sizes),
read to the end through: the dataset API in this process (``MapDataset...batch``,
indexed), ``to_iter_dataset`` with ``ReadOptions(num_threads=...)`` (Grain's threads
read and decode ahead), and ``mp_prefetch`` with 1 and 2 worker processes. Every run's
records/s and the median are printed; timings on a busy machine are noise.

``mp_prefetch``'s workers hand each batch over in shared memory (``/dev/shm``), which
the batch's arrays unlink when they are freed. Grain's prefetch thread keeps the last
batch in a reference cycle (its frame, held by the traceback of the StopIteration that
ended it), which only the cyclic garbage collector frees: without a collection the
segments stayed until the interpreter's exit, and some after it (the resource tracker's
"leaked shared_memory objects" warning). So every iterator is closed, and after each
pipeline's runs (outside their timing) a collection frees the last batches and the
script waits for Grain's thread that unlinks them; the last line printed counts the
segments this run left in ``/dev/shm`` (0, or the script exits 1).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sized
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grain

import recordkit as rk
from benchmarks._data import mixed_records
from benchmarks._recordkit import mixed_record, mixed_schema
from benchmarks._timing import repeated

BATCH = 64
#: Where POSIX shared memory lives (Linux); elsewhere the check of what is left is skipped.
SHM = Path("/dev/shm")
#: Seconds to wait for Grain's thread to unlink the segments of the batches freed.
SETTLE_SECONDS = 10.0


def pipelines(data: Path, batch: int = BATCH) -> dict[str, Callable[[], int]]:
    source = rk.open(data, "train").grain()
    batched = grain.MapDataset.source(source).shuffle(seed=0).batch(batch, batch_fn=source.batch_fn())

    def count(dataset: Iterable[Mapping[str, Sized]]) -> int:
        iterator = iter(dataset)
        try:
            return sum(len(batch["caption"]) for batch in iterator)
        finally:
            close = getattr(iterator, "close", None)  # Grain's iterators stop their workers
            if close is not None:
                close()

    def threads(n: int) -> Callable[[], int]:
        return lambda: count(
            batched.to_iter_dataset(grain.ReadOptions(num_threads=n, prefetch_buffer_size=4))
        )

    def workers(n: int) -> Callable[[], int]:
        def run() -> int:
            iterable = batched.to_iter_dataset(grain.ReadOptions(num_threads=1, prefetch_buffer_size=2))
            return count(iterable.mp_prefetch(grain.MultiprocessingOptions(num_workers=n)))

        return run

    return {
        "map_dataset_indexed": lambda: count(batched[i] for i in range(len(batched))),
        "iter_threads_1": threads(1),
        "iter_threads_2": threads(2),
        "iter_threads_4": threads(4),
        "mp_prefetch_workers_1": workers(1),
        "mp_prefetch_workers_2": workers(2),
    }


def shared_memory() -> set[str]:
    """The names in ``/dev/shm`` now (empty where there is none)."""
    return set(os.listdir(SHM)) if SHM.is_dir() else set()


def settle(before: set[str], timeout: float = SETTLE_SECONDS) -> set[str]:
    """Free the batches Grain's prefetch keeps in reference cycles (their arrays unlink
    their shared memory when freed, in a thread of Grain's) and wait until ``/dev/shm``
    holds nothing that was not in ``before``, or ``timeout`` seconds: what is left."""
    gc.collect()
    deadline = time.monotonic() + timeout
    while (left := shared_memory() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=BATCH, help="records a batch")
    args = parser.parse_args(argv)
    before = shared_memory()
    with tempfile.TemporaryDirectory(prefix="rk-grain-") as tmp:
        data = Path(tmp) / "mixed"
        records = (mixed_record(r) for r in mixed_records(args.records, sides=(200, 320)))
        rk.write_dataset(records, data, mixed_schema(), shard_bytes=4 << 20, progress=False)
        sum(1 for _ in rk.iter_records(data))  # the page cache holds the shards for every pipeline
        for name, run in pipelines(data, args.batch).items():
            row = repeated(run, args.repeats)
            runs = " ".join(f"{rate:,.0f}" for rate in row["records_per_s_each"])
            print(f"{name:24s} median {row['records_per_s']:8,.0f} records/s  (runs {runs})")
            settle(before)  # outside the timing: the next pipeline starts without them
    left = settle(before)
    print(f"shared memory segments left in {SHM}: {len(left)}")
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
