"""What a reader of a canonical epoch pays before its first record: the epoch's order, its
share of it and each record's ``(shard, record)`` (``worker_pairs``), in CPU time.

    python benchmarks/epoch_setup.py --records 200000 --rounds 40
    python benchmarks/epoch_setup.py --base /path/to/other/checkout   # A/B, interleaved

Every reader works out the whole epoch's order (its windows' shuffles draw from one
generator in turn), so this cost is per reader, not per record read: a reader of a
quarter of the epoch pays it over a quarter of the records. The shapes measured, on small
records (1,000 a shard, the ``elastic_mix.py`` split): one reader of the whole shuffled
epoch; rank 0 of 2 resuming the 4 x 2 state of ``elastic_mix.py`` (half the epoch read);
worker 0 of 2 on rank 0 of 4 (batches of 8); and rank 0 of 2 resuming a state with
positions read beyond its prefix (``also``).

``--passes N`` adds N rounds of whole passes (every record decoded) of
``elastic_mix.py``'s PyTorch-side readers: ``plain`` and ``plain_shuffled`` (no epoch
order: once), ``canonical``, ``elastic`` (both ranks resumed from the 4 x 2 state) and
``mixture`` (A and B each), with their CPU a record, every pass kept.

With ``--base``, the other checkout's ``sdk/recordkit/read/_epoch_order.py`` (loaded by
path) stands in for this one's order functions on alternate passes (A: base, B: this
checkout), and both must give the same pairs. Streams ask an order for a reader's pairs
(``pairs_at``, since the seventeenth session); for a base without it, A runs the way its
streams worked them out (the order as global indices, then looked up) with the base's
functions (see ``_functions``). Each shape's passes are interleaved and
every pass is kept; printed as the best and the median.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import recordkit as rk
from benchmarks._provenance import stamped
from benchmarks._timing import timed_pass
from benchmarks.elastic_mix import SMALL
from recordkit.read import _epoch_order, _mixture_order

#: This checkout's ``pairs_at`` of a split's and a mixture's order, kept before any swap.
_OWN_PAIRS_AT = (_epoch_order.SplitOrder.pairs_at, _mixture_order.MixtureOrder.pairs_at)


def _functions(module: ModuleType) -> dict[str, Any]:
    """The order functions of an ``_epoch_order`` module that a ``--base`` stands in for,
    and what a stream asks of a split's and a mixture's order for a reader's pairs
    (``pairs_at``). A checkout without ``pairs_at`` (before the seventeenth session) gets
    the way its streams located their pairs: the order laid out as global indices, then
    looked up, with that module's functions (a mixture's sources drawn with this
    checkout's, a negligible part); one with it runs its own on this checkout's orders."""
    split_pairs_at, mixture_pairs_at = _OWN_PAIRS_AT
    if module is not _epoch_order:
        if hasattr(module.SplitOrder, "pairs_at"):
            split_pairs_at = module.SplitOrder.pairs_at
        else:
            split_pairs_at, mixture_pairs_at = _located_pairs_at(module), _mixture_located_pairs_at(module)
    return {
        "epoch_order": module.epoch_order,
        "located_pairs": module.located_pairs,
        "split_pairs_at": split_pairs_at,
        "mixture_pairs_at": mixture_pairs_at,
    }


def _located_pairs_at(module: ModuleType) -> Callable[..., np.ndarray]:
    """A split's ``pairs_at`` as streams worked it out before it existed: the order from the
    first place on (``module.epoch_order_from``), cut to the places, then looked up."""

    def pairs_at(self: Any, places: Any, **options: Any) -> np.ndarray:
        length = len(self)
        if isinstance(places, slice):
            begin = min(places.start, length)
            items = module.epoch_order_from(self.counts, begin, **options)
            return np.asarray(
                module.located_pairs(
                    self.starts, items[places.start - begin : places.stop - begin : places.step]
                )
            )
        begin = int(places[0]) if len(places) else length
        return np.asarray(
            module.located_pairs(
                self.starts, module.epoch_order_from(self.counts, begin, **options)[places - begin]
            )
        )

    return pairs_at


def _mixture_located_pairs_at(module: ModuleType) -> Callable[..., np.ndarray]:
    """A mixture's ``pairs_at`` as streams worked it out before it existed: every source's
    epochs laid out whole (``module.epoch_order``), the samples numbered across the
    sources, then looked up."""

    def pairs_at(self: Any, places: Any, *, seed: Any, epoch: int, shuffle: bool, window: int) -> np.ndarray:
        seeds = [seed] if isinstance(seed, int) else list(seed)
        length, positions = self._positions(seeds, epoch, shuffle)
        out = np.empty(length, dtype=np.int64)
        for i, (source, where) in enumerate(zip(self.sources, positions, strict=True)):
            taken, size = epoch * self.counts[i], self.sizes[i]
            done = 0
            while done < len(where):
                source_epoch, position = divmod(taken + done, size)
                step = min(len(where) - done, size - position)
                order = module.epoch_order(
                    source.counts, seed=[*seeds, i], epoch=source_epoch, shuffle=shuffle, window=window
                )
                out[where[done : done + step]] = order[position : position + step] + self.item_starts[i]
                done += step
        return np.asarray(module.located_pairs(self.all_starts, out[places]))

    return pairs_at


def _load_base(checkout: Path) -> dict[str, Any]:
    """The order functions of another checkout's ``_epoch_order``, loaded by path."""
    path = checkout / "sdk" / "recordkit" / "read" / "_epoch_order.py"
    spec = importlib.util.spec_from_file_location("base_epoch_order", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return _functions(module)


def _using(functions: dict[str, Any]) -> None:
    """Read epochs with ``functions`` (the mixture's lookup too, imported there by name)."""
    _epoch_order.epoch_order = functions["epoch_order"]
    _epoch_order.located_pairs = functions["located_pairs"]
    vars(_mixture_order)["located_pairs"] = functions["located_pairs"]
    _epoch_order.SplitOrder.pairs_at = functions["split_pairs_at"]  # type: ignore[method-assign]  # swapped per pass
    _mixture_order.MixtureOrder.pairs_at = functions["mixture_pairs_at"]  # type: ignore[method-assign]  # likewise


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--passes", type=int, default=0, help="rounds of whole passes too")
    parser.add_argument("--base", type=Path, default=None, help="another checkout to compare with (A)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="epoch-setup-"))
    try:
        records = [{"caption": f"record {i} of the benchmark", "label": i % 10} for i in range(args.records)]
        half = len(records) // 2
        for name, part in (("whole", records), ("a", records[:half]), ("b", records[half:])):
            rk.write_dataset(part, root / name, SMALL, shard_records=1000, progress=False)
        whole = rk.open(root / "whole", "train")
        results = _measure(whole, args)
        if args.passes:
            sources = {rk.open(root / "a", "train"): 0.7, rk.open(root / "b", "train"): 0.3}
            mixture = rk.mix(sources, samples_per_epoch=len(records))
            results["passes"] = _passes(whole, mixture, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(stamped(results), indent=2))
    return results


def _measure(whole: rk.Dataset, args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {"shuffle": True, "seed": 0, "window": 1024, "tensors": False}
    count = args.records
    state = whole.torch_iterable(**options, world_size=4, batch_size=8).loader_state(
        max(1, count // 2 // 32), batch_size=8, num_workers=2
    )
    done = int(state["done"])
    beyond = dict(state, done=done - 1000, also=list(range(done - 999, done, 2)))
    shapes: dict[str, Callable[[], np.ndarray]] = {
        "one reader, whole epoch": lambda: whole.torch_iterable(**options).worker_pairs(0, 1),
        "rank 0 of 2, resumed": lambda: whole.torch_iterable(
            **options, rank=0, world_size=2, start=state
        ).worker_pairs(0, 1),
        "worker 0 of 2, rank 0 of 4": lambda: whole.torch_iterable(
            **options, world_size=4, batch_size=8
        ).worker_pairs(0, 2),
        "rank 0 of 2, resumed with also": lambda: whole.torch_iterable(
            **options, rank=0, world_size=2, start=beyond
        ).worker_pairs(0, 1),
    }
    sides = _sides(args)
    own = sides["B"]
    made: dict[str, dict[str, np.ndarray]] = {}
    for side, module in sides.items():
        _using(module)
        made[side] = {name: make() for name, make in shapes.items()}  # warm-up, and the pairs
    if "A" in made:
        for name in shapes:
            if not np.array_equal(made["A"][name], made["B"][name]):
                raise SystemExit(f"{name}: A and B give different pairs")
    cpu: dict[str, dict[str, list[float]]] = {side: {name: [] for name in shapes} for side in sides}
    for round_ in range(args.rounds):
        for side in sorted(sides, reverse=bool(round_ % 2)):
            _using(sides[side])
            for name, make in shapes.items():
                begin = time.process_time()
                make()
                cpu[side][name].append(time.process_time() - begin)
    _using(own)
    results: dict[str, Any] = {"records": count, "rounds": args.rounds, "base": str(args.base)}
    print(
        f"{count} small records, {args.rounds} interleaved rounds; CPU ms a reader's set-up (best / median)"
    )
    for name in shapes:
        row: dict[str, Any] = {"pairs": len(made["B"][name])}
        shown = f"{name:<32} {row['pairs']:>7} pairs"
        for side in sorted(sides):
            each = cpu[side][name]
            row[side] = {"cpu_seconds": each, "best": min(each), "median": statistics.median(each)}
            shown += f"   {side} {1e3 * min(each):6.2f} / {1e3 * statistics.median(each):6.2f}"
        if "A" in sides:
            row["median_ratio"] = row["B"]["median"] / row["A"]["median"]
            shown += f"   B/A {row['median_ratio']:.2f}"
        results[name] = row
        print(shown)
    return results


def _sides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The order functions of each side: B this checkout's, A ``--base``'s (when given)."""
    own = _functions(_epoch_order)
    return {"B": own} if args.base is None else {"A": _load_base(args.base), "B": own}


def _passes(whole: rk.Dataset, mixture: rk.Mixture, args: argparse.Namespace) -> dict[str, Any]:
    """Whole passes of the PyTorch-side readers, A and B interleaved (see the module)."""
    sides = _sides(args)
    own = sides["B"]
    options: dict[str, Any] = {"shuffle": True, "seed": 0, "window": 1024, "tensors": False}
    access = whole._random_access()
    in_order = whole.epoch_stream().worker_pairs(0, 1)
    shuffled = whole.epoch_stream(shuffle=True, seed=0, window=1024).worker_pairs(0, 1)
    state = whole.torch_iterable(**options, world_size=4, batch_size=8).loader_state(
        max(1, len(whole) // 2 // 32), batch_size=8, num_workers=2
    )

    def elastic() -> Iterator[Any]:
        for rank in range(2):
            yield from whole.torch_iterable(**options, rank=rank, world_size=2, start=state)

    readers: dict[str, Callable[[], Iterable[Any]]] = {
        "plain": lambda: access.stream(in_order, prefetch=64),
        "plain_shuffled": lambda: access.stream(shuffled, prefetch=64),
        "canonical": lambda: whole.torch_iterable(**options),
        "elastic": elastic,
        "mixture": lambda: mixture.torch_iterable(**options),
    }
    runs = [(name, side) for name in readers for side in sorted(sides) if side == "B" or "plain" not in name]
    counts: dict[str, int] = {}
    for name, side in runs:  # warm-up, and the records
        _using(sides[side])
        counts[name] = sum(1 for _ in readers[name]())
    cpu: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    for round_ in range(args.passes):
        shift = (3 * round_) % len(runs)
        turn = runs[shift:] + runs[:shift]
        for name, side in turn[::-1] if round_ % 2 else turn:
            _using(sides[side])
            cpu[(name, side)].append(timed_pass(readers[name]())[1])
    _using(own)
    plain = statistics.median(cpu[("plain", "B")]) / counts["plain"]
    print(f"whole passes, {args.passes} rounds; CPU us a record, each pass | best, median, median vs plain")
    out: dict[str, Any] = {}
    for name, side in runs:
        each = [1e6 * c / counts[name] for c in cpu[(name, side)]]
        ratio = statistics.median(cpu[(name, side)]) / counts[name] / plain
        out[f"{name} {side}"] = {"records": counts[name], "cpu_us_each": each, "cpu_ratio_to_plain": ratio}
        shown = " ".join(f"{x:.2f}" for x in each)
        label = name if "plain" in name else f"{name} {side}"
        best, median = min(each), statistics.median(each)
        print(f"{label:<16} {counts[name]:>7} {shown} | {best:.2f} {median:.2f} {ratio:.2f}x")
    return out


if __name__ == "__main__":
    main()
