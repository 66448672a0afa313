"""Issue 34's cost check: reading through the canonical epoch order, an elastic resume and
a weighted mixture, against plain iteration of the same records, in one run.

    python benchmarks/elastic_mix.py --records 200000 --repeats 5 --out benchmarks/out/elastic_mix.json

The split is written twice (as one dataset, and halved into two datasets for the
mixture) with small records by default (a caption and a label: the order's own cost is
the largest share of a pass there; ``--workload mixed`` reads the benchmark's JPEG,
WAV, caption, boxes and label records instead). ``--workload captions`` writes the small
records' schema with captions of 3 to 30 words drawn from a fixed list (seeded: about 175
lengths), as real text is: the default's captions (``record {i} of the benchmark``) take 5
lengths, so their records parse against a few templates, where varied captions need the
walk of :mod:`recordkit.format._walk_parse` (they cost 2.7x to 5.8x the default's a record
before it). ``small`` stays the default: the results in docs/ and their history compare
it from run to run. Each is read in this process, every record decoded, by:

* ``plain``: ``RandomAccess.stream`` over the records in manifest order (the read path
  the PyTorch stream uses, with no epoch order: plain iteration), given as an array of
  ``(shard, record)`` rows as the epoch readers give theirs;
* ``plain_shuffled``: the same over the canonical shuffled order, worked out before the
  pass: what reading records in that order costs by itself (more reads, batches of
  records of more lengths), without the epoch order's machinery;
* ``records``: ``ds.records()``, the numpy reader streaming the shards in order (a
  reader of its own: files read 8 MiB at a time, 2,048 records parsed at a time);
* ``canonical_in_order``: ``ds.torch_iterable(shuffle=False, tensors=False)``: the epoch
  order, its division and the state machinery, reading in manifest order as ``plain``;
* ``canonical``: ``ds.torch_iterable(shuffle=True, seed=0, tensors=False)``, its epoch
  order worked out at the start of the pass (shuffled: each record is its own read,
  where ``plain`` reads runs of neighbours at once);
* ``elastic``: the same resumed half way from a state saved by 4 ranks x 2 workers, read
  as 2 ranks (both in this process, one after the other): half the records;
* ``elastic_rank``: rank 0 of those 2 alone (what one rank of the resumed run reads), and
  ``plain_share``: ``RandomAccess.stream`` over that rank's records in its order, worked
  out before the pass (its baseline: the same records read without the epoch machinery);
  ``plain_quarter``: ``RandomAccess.stream`` over as many records (a quarter of the
  split) in manifest order: plain iteration of as many records, whose start (the first
  read before the first record) is spread over as few of them as the rank's is;
* ``elastic_rank_batched``: the same rank resumed with ``batch_size=64``, as a DataLoader
  run of batches of 64 reads it (the how-to's loop): its share dealt in blocks of a batch,
  where ``elastic_rank`` (no ``batch_size``) is dealt a record at a time, every other
  record; ``plain_share_batched``: ``RandomAccess.stream`` over that share in its order;
* ``mixture_in_order`` and ``mixture``: ``rk.mix({a: 0.7, b: 0.3},
  samples_per_epoch=N).torch_iterable(...)``, unshuffled (sources spread evenly) and
  shuffled.

Then the tf.data readers, in batches of 64, against ``tf_plain`` (``ds.tf(64)``, what a
user writes today): ``tf_shuffled`` (``ds.tf`` with its file shuffle and a buffer of
1024, what a user picks today for a shuffled read), and the canonical epochs
(``ds.tf_epochs(64, ...).dataset()``) in order, shuffled, resumed from the 4 x 2 state
and the mixture (``tf_mixture``); ``--no-tf`` leaves them out, ``--no-torch`` the rows
above them; ``--only`` names the rows to time (with their baseline). The resume is timed
as a rank sees it: ``tf_elastic`` is rank 0 of 2's share of what is left of the epoch (its
pipeline built before the pass, as every other row's),
against ``tf_plain_share``, the plain ``ds.tf(64)`` read of as many records (``.take``):
a read of a quarter of the records pays its pipeline's start over fewer records, so its
baseline is the plain read of a quarter too. ``tf_elastic_two_ranks`` reads both ranks'
shares one after the other in this process (two pipelines built and torn down within the
pass: what one process simulating two ranks pays, not what either rank does).

Rounds interleave the contenders (rotating their order), so a change of load on the
shared machine falls on all alike; every repetition is reported with the best and the
median, wall and CPU seconds (this process's, steadier under load; tf.data's threads
included), and each contender's ratio to its baseline (``plain``, ``tf_plain``) at the
median, of records/s and of CPU per record, and of CPU per record to ``records`` too.
Some readers are also compared with a baseline of as many records read without the
epoch machinery (``*_to_same_count``): ``canonical`` with ``plain_shuffled`` and
``elastic_rank`` with ``plain_share`` (the same records in the same order), ``mixture``
with ``plain_shuffled`` (as many records of the same content, shuffled) and
``tf_elastic`` with ``tf_plain_share`` (as many records, in order). Reading records
shuffled costs more than reading them in order whoever orders them: these ratios are
what the epoch order and the mixture add to it. ``elastic_rank`` is also compared with
``plain_quarter`` (``ratio_to_as_many_in_order``, ``cpu_ratio_to_as_many_in_order``):
plain iteration of as many records, as ``tf_elastic``'s baseline is; beside, never
instead of, its ratio to ``plain``, the issue's baseline.
All of them but ``records`` read through ``RandomAccess`` in one thread, ``prefetch``
64, every field decoded, as numpy (``tensors=False``): the same reader, threads and
decode.

The tf.data rows run in a child process of their own (this script again, given the
datasets written and the 4 x 2 state), ``tf_plain`` with them, so their ratios are still
of one run: what the PyTorch-side rows leave in a process (PyTorch imported, glibc's
thresholds moved by their reads' large buffers before TensorFlow's ``from_generator``
fixes them, a heap grown by them) is not in their figures, whether or not those rows
ran. In one process, the in-order tf.data epoch of mixed records measured 0.94x of
``tf_plain`` after the PyTorch-side rows and 1.01x without them (the twelfth session's
quiet runs; docs/performance-epochs.md); ``--tf-same-process`` times them in this
process after the rows above, as before. Each row also gives the minor page faults of
its passes (``page_faults``, the process's).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import recordkit as rk
from benchmarks._provenance import stamped
from benchmarks._timing import timed_pass

#: The tf.data readers' batch size.
TF_BATCH = 64
#: The batch size of the resumed rank read as a DataLoader run of batches reads it.
RANK_BATCH = 64
SMALL = rk.Schema(
    name="small",
    fields={
        "caption": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 10}),
    },
)


#: The words of the ``captions`` workload's captions.
_CAPTION_WORDS = (
    "a the of dog cat photo of person riding bicycle down street with red hat near tree"
    " and building in city at night"
)
WORDS = tuple(_CAPTION_WORDS.split())


def _workload(kind: str, count: int) -> tuple[rk.Schema, list[dict[str, Any]]]:
    if kind == "small":
        return SMALL, [{"caption": f"record {i} of the benchmark", "label": i % 10} for i in range(count)]
    if kind == "captions":
        return SMALL, _captions(count)
    from benchmarks._data import mixed_records
    from benchmarks._recordkit import mixed_record, mixed_schema

    return mixed_schema(), [mixed_record(r) for r in mixed_records(count)]


def _captions(count: int) -> list[dict[str, Any]]:
    """Small records whose captions are 3 to 30 words of :data:`WORDS` (seeded), and a label."""
    rng = random.Random(0)
    return [
        {"caption": " ".join(rng.choices(WORDS, k=rng.randint(3, 30))), "label": i % 10} for i in range(count)
    ]


def _chain(*parts: Iterable[Any]) -> Iterator[Any]:
    for part in parts:
        yield from part


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--shard-records", type=int, default=1000)
    parser.add_argument("--workload", choices=("small", "captions", "mixed"), default="small")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--no-tf", action="store_true", help="leave out the tf.data readers")
    parser.add_argument(
        "--no-torch", action="store_true", help="leave out the PyTorch readers (the tf.data rows alone)"
    )
    parser.add_argument(
        "--only",
        default=None,
        help="the rows to time, comma-separated (their baselines, plain and tf_plain, always run): "
        "e.g. tf_canonical_in_order for the in-order tf.data epoch against ds.tf(64) alone",
    )
    parser.add_argument(
        "--tf-same-process",
        action="store_true",
        help="time the tf.data rows in this process, after the PyTorch-side rows, as before the "
        "thirteenth session (not in a child process of their own)",
    )
    parser.add_argument("--tf-rows-of", type=Path, default=None, help=argparse.SUPPRESS)  # the child's
    args = parser.parse_args(argv)
    if args.tf_rows_of is not None:
        return _tf_child(args.tf_rows_of)
    root = Path(tempfile.mkdtemp(prefix="elastic-mix-"))
    try:
        return _measure(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)  # the datasets it wrote: not left behind in /tmp


def _measure(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """The datasets written under ``root``, then every contender's passes (see the module)."""
    schema, records = _workload(args.workload, args.records)
    half = len(records) // 2
    for name, part in (("whole", records), ("a", records[:half]), ("b", records[half:])):
        rk.write_dataset(part, root / name, schema, shard_records=args.shard_records, progress=False)
    # The records written are not kept: a reading program does not hold its dataset in
    # memory, and hundreds of thousands of live dicts make each of Python's full garbage
    # collections during the passes cost tens of milliseconds, falling on whichever row runs.
    count = len(records)
    del records, part
    gc.collect()
    whole, a, b = (rk.open(root / name, "train") for name in ("whole", "a", "b"))
    access = whole._random_access()
    # As [n, 2] arrays of (shard, record), as the epoch readers hand them to the stream.
    in_order = np.array(
        [(s, n) for s, in_shard in enumerate(access.shards.counts.tolist()) for n in range(in_shard)],
        dtype=np.int64,
    ).reshape(-1, 2)
    options: dict[str, Any] = {"shuffle": True, "seed": 0, "window": 1024, "tensors": False}
    # About half the epoch read by 4 ranks x 2 workers, in batches of 8.
    shuffled = whole.epoch_stream(**{k: v for k, v in options.items() if k != "tensors"}).worker_pairs(0, 1)
    state = whole.torch_iterable(**options, world_size=4, batch_size=8).loader_state(
        max(1, count // 2 // (4 * 8)), batch_size=8, num_workers=2
    )
    mixture = rk.mix({a: 0.7, b: 0.3}, samples_per_epoch=count)
    # Rank 0 of 2's share of what the 4 x 2 state left, in its order: what `elastic_rank`
    # reads, without the epoch machinery.
    resumed = {k: v for k, v in options.items() if k != "tensors"}
    share = whole.epoch_stream(**resumed, rank=0, world_size=2, start=state).worker_pairs(0, 1)
    quarter = in_order[: len(share)]  # as many records as the rank's share, in manifest order
    # The same rank resumed as a DataLoader run reads it (the how-to's loop): its share dealt
    # in blocks of a batch, not a record at a time.
    share_batched = whole.epoch_stream(
        **resumed, rank=0, world_size=2, start=state, batch_size=RANK_BATCH
    ).worker_pairs(0, 1)

    contenders: dict[str, Callable[[], Iterable[Any]]] = {
        "plain": lambda: access.stream(in_order, prefetch=64),
        "plain_shuffled": lambda: access.stream(shuffled, prefetch=64),
        "records": lambda: whole.records(),
        "canonical_in_order": lambda: whole.torch_iterable(**{**options, "shuffle": False}),
        "canonical": lambda: whole.torch_iterable(**options),
        "elastic": lambda: _chain(
            *(whole.torch_iterable(**options, rank=r, world_size=2, start=state) for r in range(2))
        ),
        "elastic_rank": lambda: whole.torch_iterable(**options, rank=0, world_size=2, start=state),
        "plain_share": lambda: access.stream(share, prefetch=64),
        "plain_quarter": lambda: access.stream(quarter, prefetch=64),
        "elastic_rank_batched": lambda: whole.torch_iterable(
            **options, rank=0, world_size=2, start=state, batch_size=RANK_BATCH
        ),
        "plain_share_batched": lambda: access.stream(share_batched, prefetch=64),
        "mixture_in_order": lambda: mixture.torch_iterable(**{**options, "shuffle": False}),
        "mixture": lambda: mixture.torch_iterable(**options),
    }
    results: dict[str, Any] = {"dataset_records": count, "workload": args.workload, "repeats": args.repeats}
    print(f"{count} {args.workload} records, {args.repeats} repetitions (wall times vary under load)")
    if not args.no_torch:
        contenders = _only(contenders, args.only, "plain")
        results.update(
            _compare(
                contenders,
                lambda _: 1,
                "plain",
                args.repeats,
                also="records" if "records" in contenders else None,
                same_count={
                    "canonical": "plain_shuffled",
                    "mixture": "plain_shuffled",
                    "elastic_rank": "plain_share",
                    "elastic_rank_batched": "plain_share_batched",
                },
                as_many_in_order={"elastic_rank": "plain_quarter", "elastic_rank_batched": "plain_quarter"},
            )
        )
    if not args.no_tf and args.tf_same_process:
        print("tf.data rows: in this process, after the rows above")
        results.update(_tf_rows(whole, mixture, state, args.repeats, args.only))
    elif not args.no_tf:
        results.update(_tf_rows_in_child(root, count, state, args))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(stamped(results), indent=2))
    return results


def _tf_rows_in_child(root: Path, count: int, state: dict[str, Any], args: argparse.Namespace) -> Any:
    """The tf.data rows' results, measured by a child process of their own (see the
    module) on the datasets under ``root``: this script run again with ``--tf-rows-of``
    and a JSON file saying what to read; it prints its table and writes its results."""
    spec = root / "tf-rows.json"
    spec.write_text(
        json.dumps({"records": count, "state": state, "repeats": args.repeats, "only": args.only})
    )
    print("tf.data rows: in a child process of their own, tf_plain with them")
    sys.stdout.flush()
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--tf-rows-of", str(spec)], check=True)
    return json.loads((root / "tf-results.json").read_text())


def _tf_child(spec_file: Path) -> dict[str, Any]:
    """The child's part (``--tf-rows-of``): the tf.data rows on the datasets beside
    ``spec_file``, their results written beside it."""
    spec = json.loads(spec_file.read_text())
    root = spec_file.parent
    whole, a, b = (rk.open(root / name, "train") for name in ("whole", "a", "b"))
    mixture = rk.mix({a: 0.7, b: 0.3}, samples_per_epoch=spec["records"])
    results = _tf_rows(whole, mixture, spec["state"], spec["repeats"], spec["only"])
    (root / "tf-results.json").write_text(json.dumps(results))
    return results


def _tf_rows(
    whole: rk.Dataset, mixture: rk.Mixture, state: dict[str, Any], repeats: int, only: str | None
) -> dict[str, Any]:
    """The tf.data rows' passes and results, in this process."""
    return _compare(
        _only(_tf_contenders(whole, mixture, state), only, "tf_plain"),
        _batch_records,
        "tf_plain",
        repeats,
        same_count={"tf_elastic": "tf_plain_share"},
    )


def _only(
    contenders: dict[str, Callable[[], Iterable[Any]]], only: str | None, baseline: str
) -> dict[str, Callable[[], Iterable[Any]]]:
    """The ``contenders`` named in ``only`` (comma-separated; None: all), with ``baseline``."""
    if only is None:
        return contenders
    kept = {baseline, *only.split(",")}
    return {name: make for name, make in contenders.items() if name in kept}


def _tf_contenders(
    whole: rk.Dataset, mixture: rk.Mixture, state: dict[str, Any]
) -> dict[str, Callable[[], Iterable[Any]]]:
    """The tf.data readers, in batches of 64: ``ds.tf()`` as a user writes it today (in
    order, and shuffled with its file shuffle and a buffer of 1024) against the canonical
    epochs (``tf_epochs``: in order, shuffled, resumed on 2 ranks from the 4 x 2 state,
    and the mixture)."""
    epochs: dict[str, Any] = {"shuffle": True, "seed": 0, "window": 1024}
    resumed: dict[str, Any] = {**epochs, "world_size": 2, "start": state}
    share = len(whole.tf_epochs(TF_BATCH, **resumed, rank=0))  # rank 0's batches
    return {
        "tf_plain": lambda: whole.tf(TF_BATCH),
        "tf_shuffled": lambda: whole.tf(TF_BATCH, shuffle_files=True, shuffle_buffer=1024, seed=0),
        "tf_canonical_in_order": lambda: whole.tf_epochs(TF_BATCH).dataset(),
        "tf_canonical": lambda: whole.tf_epochs(TF_BATCH, **epochs).dataset(),
        "tf_plain_share": lambda: whole.tf(TF_BATCH).take(share),
        "tf_elastic": lambda: whole.tf_epochs(TF_BATCH, **resumed, rank=0).dataset(),
        "tf_elastic_two_ranks": lambda: _chain(
            *(whole.tf_epochs(TF_BATCH, **resumed, rank=r).dataset() for r in range(2))
        ),
        "tf_mixture": lambda: mixture.tf_epochs(TF_BATCH, **epochs).dataset(),
    }


def _batch_records(batch: Any) -> int:
    """The records of a tf.data batch (its labels')."""
    return int(batch["label"].shape[0])


def _compare(
    contenders: dict[str, Callable[[], Iterable[Any]]],
    size: Callable[[Any], int],
    baseline: str,
    repeats: int,
    also: str | None = None,
    same_count: dict[str, str] | None = None,
    as_many_in_order: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Every contender's passes, rounds interleaved (their order rotated), each row with
    its repetitions, best, median and ratios to ``baseline`` (and its CPU per record to
    that of ``also``); printed as a table. ``size`` gives the records of one element.
    ``same_count`` names, for some contenders, a baseline that reads as many records
    (see the module): their ratios to it
    are added as ``ratio_to_same_count`` and ``cpu_ratio_to_same_count`` (and printed
    below the table); ``as_many_in_order`` likewise names a plain read of as many records
    in order (``ratio_to_as_many_in_order``, ``cpu_ratio_to_as_many_in_order``)."""
    counts = {
        name: sum(size(e) for e in make()) for name, make in contenders.items()
    }  # warm-up, and the records
    walls: dict[str, list[float]] = {name: [] for name in contenders}
    cpus: dict[str, list[float]] = {name: [] for name in contenders}
    faults: dict[str, list[int]] = {name: [] for name in contenders}
    names = list(contenders)
    for round_ in range(repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            wall, cpu = timed_pass(contenders[name]())
            faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
            walls[name].append(wall)
            cpus[name].append(cpu)
    results: dict[str, Any] = {}
    base = statistics.median(counts[baseline] / w for w in walls[baseline])
    base_cpu = statistics.median(cpus[baseline]) / counts[baseline]
    also_cpu = None if also is None else statistics.median(cpus[also]) / counts[also]
    print(
        f"{'contender':<22} {'records':>8} {'records/s each':<60} {'best':>8} {'median':>8} {'ratio':>6} "
        f"{'CPU/rec us':>10} {'CPU ratio':>9}" + ("" if also is None else f" {'to ' + also:>10}")
    )
    for name in names:
        each = [counts[name] / w for w in walls[name]]
        median = statistics.median(each)
        results[name] = {
            "records": counts[name],
            "seconds": walls[name],
            "cpu_seconds": cpus[name],
            "page_faults": faults[name],
            "records_per_s_each": each,
            "records_per_s": median,
            "records_per_s_best": max(each),
            "baseline": baseline,
            "ratio_to_baseline": median / base,
            "cpu_per_record_us": 1e6 * statistics.median(cpus[name]) / counts[name],
            "cpu_ratio_to_baseline": (statistics.median(cpus[name]) / counts[name]) / base_cpu,
        }
        if also_cpu is not None:
            results[name][f"cpu_ratio_to_{also}"] = (statistics.median(cpus[name]) / counts[name]) / also_cpu
        shown = " ".join(f"{v:,.0f}" for v in each)
        print(
            f"{name:<22} {counts[name]:>8} {shown:<60} {max(each):>8,.0f} {median:>8,.0f} "
            f"{median / base:>6.2f} {results[name]['cpu_per_record_us']:>10.1f} "
            f"{results[name]['cpu_ratio_to_baseline']:>9.2f}"
            + ("" if also is None else f" {results[name][f'cpu_ratio_to_{also}']:>10.2f}")
        )
    for kind, pairs in (("same_count", same_count), ("as_many_in_order", as_many_in_order)):
        for name, other in (pairs or {}).items():
            if name not in results or other not in results:  # a row left out (--only)
                continue
            row, base_row = results[name], results[other]
            row[f"{kind}_baseline"] = other
            row[f"ratio_to_{kind}"] = row["records_per_s"] / base_row["records_per_s"]
            row[f"cpu_ratio_to_{kind}"] = row["cpu_per_record_us"] / base_row["cpu_per_record_us"]
            print(
                f"{name} against {other}: records/s {row[f'ratio_to_{kind}']:.2f}x, "
                f"CPU per record {row[f'cpu_ratio_to_{kind}']:.2f}x"
            )
    return results


if __name__ == "__main__":
    main()
