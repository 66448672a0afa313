"""One contender of the peer benchmark, in its own process (and, for a peer, its own venv).

    python -m benchmarks._peer_child --contender webdataset --records 1500 --work DIR

Generates the issue-31 workload (a JPEG of 200 to 320 px, 1 s of 16 kHz WAV, a caption,
0 to 6 boxes, a label: :func:`benchmarks._data.mixed_records`), then times, with the
contender's adapter (:mod:`benchmarks._peer_adapters`): the write; a read in this
process; a PyTorch ``DataLoader`` (batches of 64; a library with its own loader, such as
Grain, its own) with 0, 1 and 2 workers; 2,000 random
indices one at a time and in batches of 64. Prints one JSON object: records/s and CPU µs per record per task,
bytes written, and the peak RSS of the DataLoader's worker processes.

``dataloader_2_steady`` is the second epoch of a DataLoader with 2 workers and
``persistent_workers=True`` (recordkit's PyTorch page advises it): what each epoch of a
training run costs after the first, without the first epoch's fixed costs (forking the
workers, their first batch's fresh memory, their exit), which the 1,500 records of one
epoch spread thin; its CPU counts the live workers' (psutil). A library with its own
loader (Grain) has no such row.

Imports only numpy, Pillow, soundfile, psutil and torch besides the adapter's library,
so that it runs in a peer's venv without recordkit.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import psutil

from benchmarks._data import mixed_records
from benchmarks._peer_adapters import adapter

BATCH = 64
SIDES = (200, 320)
RANDOM_INDICES = 2000


class WorkerMemory:
    """The peak summed RSS of this process's children (DataLoader workers), sampled."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.02):
            total = 0
            for child in me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    continue
            self.peak = max(self.peak, total)

    def __enter__(self) -> WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _cpu_seconds() -> float:
    """CPU time of this process (all its threads) and of its ended children (workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(run: Callable[[], int]) -> dict[str, float]:
    """Records/s of ``run`` (wall clock), and its CPU µs per record: steadier than the wall
    clock on a busy machine (worker processes counted once they have ended)."""
    cpu, start = _cpu_seconds(), time.perf_counter()
    count = run()
    seconds = time.perf_counter() - start
    gc.collect()  # a finished DataLoader's workers are joined when it is collected
    used = _cpu_seconds() - cpu
    return {
        "records": count,
        "seconds": seconds,
        "records_per_s": count / seconds,
        "cpu_us_per_record": used / count * 1e6 if count else 0.0,
    }


def steady_epoch(peer: ModuleType, work: Path, workers: int = 2) -> dict[str, float | str]:
    """The second epoch of a DataLoader with ``workers`` persistent workers, timed as
    :func:`timed` times a task, its CPU counting the workers (alive, so not yet in
    ``RUSAGE_CHILDREN``) as psutil reads them; a peer that cannot run it gets its error
    and no figures."""
    import torch.utils.data

    try:
        dataset, options = peer.loader(work, BATCH)
        loader = torch.utils.data.DataLoader(dataset, num_workers=workers, persistent_workers=True, **options)
        sum(peer.batch_size(batch) for batch in loader)  # the first epoch: the workers start
        before = _cpu_seconds() + _live_children_cpu()
        start = time.perf_counter()
        count = sum(peer.batch_size(batch) for batch in loader)
        seconds = time.perf_counter() - start
        gc.collect()  # as timed() does, so that the CPU figures compare
        used = _cpu_seconds() + _live_children_cpu() - before
        del loader
        gc.collect()
    except Exception as exc:  # a peer whose dataset does not take a second epoch: reported, not fatal
        return {"records": 0, "error": repr(exc)}
    return {
        "records": count,
        "seconds": seconds,
        "records_per_s": count / seconds,
        "cpu_us_per_record": used / count * 1e6 if count else 0.0,
    }


def _live_children_cpu() -> float:
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--contender", required=True)
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--work", type=Path, required=True, help="an empty folder to write into")
    parser.add_argument("--workers", default="0,1,2", help="DataLoader worker counts (default 0,1,2)")
    parser.add_argument(
        "--random-indices",
        type=int,
        default=RANDOM_INDICES,
        help=f"random indices read, one at a time and in batches (default {RANDOM_INDICES})",
    )
    args = parser.parse_args(argv)
    import torch.utils.data

    peer = adapter(args.contender)
    records = mixed_records(args.records, seed=0, sides=SIDES)
    out: dict[str, Any] = {"contender": args.contender, "doc": peer.DOC, "records": args.records}
    args.work.mkdir(parents=True, exist_ok=True)
    out["write"] = timed(lambda: peer.write(records, args.work))
    out["bytes_per_record"] = (
        sum(f.stat().st_size for f in args.work.rglob("*") if f.is_file()) / args.records
    )
    records.clear()  # the decoded workload is not held while reading
    peer.read(args.work)  # warm the page cache, as every contender gets
    out["read"] = timed(lambda: peer.read(args.work))
    for workers in (int(w) for w in args.workers.split(",")):

        def load(workers: int = workers) -> int:
            if hasattr(peer, "own_loader"):  # a library with its own loader (Grain) uses it
                return int(peer.own_loader(args.work, BATCH, workers))
            dataset, options = peer.loader(args.work, BATCH)
            loader = torch.utils.data.DataLoader(dataset, num_workers=workers, **options)
            return sum(peer.batch_size(batch) for batch in loader)

        with WorkerMemory() as memory:
            out[f"dataloader_{workers}"] = timed(load)
        out[f"dataloader_{workers}"]["worker_rss_mb"] = memory.peak / 2**20
    if not hasattr(peer, "own_loader"):
        out["dataloader_2_steady"] = steady_epoch(peer, args.work)
    if hasattr(peer, "thread_loader"):  # a loader of threads in this process, where there is one
        out["thread_loader"] = timed(lambda: peer.thread_loader(args.work, BATCH))
    rng = np.random.default_rng(0)
    indices = rng.integers(0, args.records, size=args.random_indices).tolist()
    out["random_1"] = timed(lambda: peer.random(args.work, indices, 1))
    out["random_64"] = timed(lambda: peer.random(args.work, indices, BATCH))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
