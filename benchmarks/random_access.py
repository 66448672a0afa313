"""Random access and the PyTorch loader against sequential reading, on the mixed workload.

    python benchmarks/random_access.py --records 2000 --out benchmarks/out/random_access.json

Measured, every field decoded (JPEG of varying size, 1 s WAV, caption, boxes, label):

* ``iter_records``: the split read in order (the sequential baseline), records/s;
* ``RandomAccess``: one record at a random index at a time, and batches of 64 random
  indices (``ds[list]``), records/s;
* a PyTorch ``DataLoader`` with 2 workers over ``recordkit.torch.MapDataset``
  (shuffled sampler) and over ``recordkit.torch.IterableDataset`` (shuffled shards and
  window), batches of 64 with ``collate``, records/s;
* the batch-first PyTorch paths: ``DataLoader(batch_size=None)`` with 2 workers over
  ``rk.open(...).torch_batches(64)`` (shuffled, whole batches made in the workers), the
  same batches from ``recordkit.torch.ThreadLoader`` (threads of the main process), and
  ``torch_batch_map()`` under a random sampler (``__getitems__``), records/s;
* ``RandomAccess.read_batch`` on the same batches of 64 random indices, in one thread
  and decoded on a pool of ``--workers`` threads, records/s;
* ``load_dataset`` with batches of 64 on the same dataset (tf.data), records/s.

Each figure is ``--repeats`` runs over the same data (after one warm-up read, so the
page cache holds the shards for every contender alike): every run's seconds, the median
and the best records/s. Timing on a busy
machine is noise: the figures for docs/performance.md come from a quiet one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import recordkit as rk
from benchmarks._data import mixed_records
from benchmarks._provenance import stamped
from benchmarks._random_reads import RandomReads
from benchmarks._recordkit import mixed_record, mixed_schema
from benchmarks._timing import repeated

BATCH = 64


def run(records: int, repeats: int, workers: int, root: Path, *, tensorflow: bool = True) -> dict[str, Any]:
    data = root / "mixed"
    rk.write_dataset(
        (mixed_record(r) for r in mixed_records(records)),
        data,
        mixed_schema(),
        shard_bytes=4 << 20,
        progress=False,
    )
    ds = rk.RandomAccess(data)
    n = len(ds)
    reads = RandomReads.draw(ds, 500, 2000, BATCH)
    results: dict[str, Any] = {"records": n, "shards": len(ds.shards.shards)}

    def sequential() -> int:
        return sum(1 for _ in rk.iter_records(data))

    sequential()  # warm the page cache
    results["iter_records"] = repeated(sequential, repeats)
    results["random_access_1"] = repeated(reads.one_at_a_time, repeats)
    results["random_access_64"] = repeated(reads.in_batches, repeats)
    results["read_batch_64"] = repeated(reads.in_sorted_batches, repeats)
    with ThreadPoolExecutor(workers) as pool:
        results["read_batch_64_threads"] = repeated(lambda: reads.in_sorted_batches(pool), repeats)

    if importlib.util.find_spec("torch") is not None:
        from torch.utils.data import DataLoader, RandomSampler

        from recordkit.torch import IterableDataset, MapDataset

        mapped = MapDataset(data)
        streamed = IterableDataset(data, shuffle=True, seed=0, window=256)

        def torch_map() -> int:
            loader = DataLoader(
                mapped,
                batch_size=BATCH,
                sampler=RandomSampler(mapped),
                num_workers=workers,
                collate_fn=mapped.collate_fn,
            )
            return sum(len(batch["caption"]) for batch in loader)

        def torch_iterable() -> int:
            loader = DataLoader(
                streamed, batch_size=BATCH, num_workers=workers, collate_fn=streamed.collate_fn
            )
            return sum(len(batch["caption"]) for batch in loader)

        results["torch_map_dataset"] = repeated(torch_map, repeats)
        results["torch_iterable_dataset"] = repeated(torch_iterable, repeats)
        results.update(batch_first(data, repeats, workers))
    else:
        results["torch"] = "skipped: torch is not installed (pip install 'recordkit[torch]')"

    if tensorflow and importlib.util.find_spec("tensorflow") is not None:

        def tf_data() -> int:
            dataset = rk.load_dataset(data, batch_size=BATCH, shuffle_files=True, shuffle_buffer=256, seed=0)
            return sum(int(batch["label"].shape[0]) for batch in dataset)

        results["load_dataset"] = repeated(tf_data, repeats)
    return results


def batch_first(data: Path, repeats: int, workers: int) -> dict[str, Any]:
    """The batch-first PyTorch paths (see the module docstring)."""
    from torch.utils.data import DataLoader, RandomSampler

    from recordkit.torch import ThreadLoader

    handle = rk.open(data, "train")
    stream = handle.torch_batches(BATCH, shuffle=True, seed=0, window=256)
    batched = handle.torch_batch_map()

    def from_workers() -> int:
        loader = DataLoader(stream, batch_size=None, num_workers=workers)
        return sum(len(batch["caption"]) for batch in loader)

    def from_threads() -> int:
        loader = ThreadLoader(stream, num_workers=workers, threads=workers, prefetch=4)
        return sum(len(batch["caption"]) for batch in loader)

    def map_batches() -> int:
        loader = DataLoader(
            batched,
            batch_size=BATCH,
            sampler=RandomSampler(batched),
            num_workers=workers,
            collate_fn=batched.collate_fn,
        )
        return sum(len(batch["caption"]) for batch in loader)

    return {
        "torch_batches_workers": repeated(from_workers, repeats),
        "torch_batches_threads": repeated(from_threads, repeats),
        "torch_batch_map_workers": repeated(map_batches, repeats),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=2000, help="records in the dataset (default 2000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers (default 2)")
    parser.add_argument("--no-tensorflow", action="store_true", help="leave load_dataset out")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rk-random-access-") as tmp:
        results = run(args.records, args.repeats, args.workers, Path(tmp), tensorflow=not args.no_tensorflow)
    for name, row in results.items():
        if isinstance(row, dict):
            runs = " ".join(f"{rate:,.0f}" for rate in row["records_per_s_each"])
            print(
                f"{name:24s} median {row['records_per_s']:8,.0f}  best {row['records_per_s_best']:8,.0f}"
                f" records/s  ({row['records']} records; runs {runs})"
            )
        else:
            print(f"{name:24s} {row}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(stamped(results), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
