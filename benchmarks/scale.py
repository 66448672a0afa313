"""How recordkit's costs grow with the number of shards and of records per shard.

    python benchmarks/scale.py --root /tmp/rk-scale --out benchmarks/out/scale.json

Datasets (kept under ``--root`` for later runs):

* ``shards-N`` (N = 10, 1k, 10k, 100k, 1M): N tiny **real** shards of one split, each
  holding 10 records (a label and a short caption; about 400 bytes) with its record
  index. One shard is written by ``rk.write_dataset``; the others are hard links to it
  (or to a copy of it, every 50,000 shards) under their own names, and ``dataset.json``
  lists them all (the same size, sha256 and records each), saved by ``Manifest.save``:
  the format recordkit writes now.
  Every file exists, so every operation runs as on a real dataset; only the bytes are
  shared (the file system's cache holds one shard).
* ``records-R`` (R = 1 to 100k): 10 shards of R records each, written by
  ``rk.write_dataset``: the per-record costs.
* ``verify-Mmb-of-256mb`` (M = 1, 4, 16): 256 MB of 16 KB records in shards of M MB, written by
  ``rk.write_dataset``: ``verify`` on shards of realistic sizes, with the speed-up of
  2 threads (and of 2 processes) over 1, each ratio computed from the same run.

Every measurement runs in a fresh Python process (so peaks are clean), repeated
``--repeats`` times; each repetition's wall seconds, CPU seconds and peak memory over
the process's baseline (its resident size once recordkit is imported, before the
operation) are kept, with the fastest and the median:

* ``open_first``: ``rk.open(path, "train")`` then the first record of ``ds.records()``;
* ``len``: ``len(rk.open(path, "train"))``;
* ``last_random``: ``ds[len(ds) - 1]`` on a handle just opened (the access alone timed:
  the last shard's index loaded, one read), and ``last_random_warm`` another record of
  the last shard after it;
* ``tf_first``: ``ds.tf(batch_size=1)`` built and its first batch read, TensorFlow
  imported before the clock starts (a split of more than 16 shards is built without
  touching one: each shard's size and record headers are checked as the read opens it);
* ``verify_1``, ``verify_2_threads``, ``verify_2_processes``: ``recordkit verify`` with
  ``-j 1``, ``-j 2`` (threads) and ``-j 2 --processes`` (CPU seconds are this process's
  only: the worker processes' are not counted);
* ``stats_sample``: ``recordkit stats -s "train[:1000]"`` (statistics of a sample of
  1,000 records, or all when there are fewer);
* ``index``: ``recordkit index --rebuild`` (every shard's index built again);
* ``append``: ``rk.write_dataset(..., append=True)`` of one shard into a new split (the
  manifest rewritten with every shard listed);
* ``beam_commit``: the commit step of ``rk.beam.WriteDataset`` (``_CommitFn``, run as
  Beam runs it once every shard is written) for as many shards as the split has, staged
  as Beam's shard writers leave them (one staging folder per shard, hard links to the
  shards), into a new dataset: every shard and index renamed to its final name, the
  manifest (with its shard table) written, the staging folder removed. Apache Beam's own
  cost of running the pipeline is not in it (the DirectRunner costs minutes per thousand
  shards on this machine; ``benchmarks/beam_write.py`` measures whole pipelines);
* the manifest's bytes (``dataset.json`` and any shard table beside it).

Operations that read every shard (verify, stats, index) are skipped above
``--full-pass-max`` shards (default 100k): each touches every file, and their cost per
shard is read from the smaller sizes. ``beam_commit`` is skipped above it too.

Timing on a busy machine is noise: read the spread and the CPU seconds, not only the
median. The JSON holds every repetition; ``--csv`` and ``--plot`` write a table and the
log-log curves.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._provenance import stamped

SHARD_COUNTS = (10, 1_000, 10_000, 100_000, 1_000_000)
RECORD_COUNTS = (1, 100, 10_000, 100_000)
#: Shard sizes (MB) of the realistic verify datasets, 256 MB of 16 KB records each.
VERIFY_SHARD_MB = (1, 4, 16)
VERIFY_TOTAL_MB = 256
VERIFY_RECORD_BYTES = 16 * 1024
RECORDS_PER_TINY_SHARD = 10
#: Hard links made to one shard file before the next is written anew.
LINKS_PER_FILE = 50_000
SCHEMA_TEXT = """
name: tiny
fields:
  label: {codec: label, options: {names: [cat, dog, bird]}}
  caption: {codec: text}
"""
SHARD_OPS = (
    "open_first",
    "len",
    "last_random",
    "tf_first",
    "verify_1",
    "verify_2_threads",
    "verify_2_processes",
    "stats_sample",
    "index",
    "append",
    "beam_commit",
)
FULL_PASS = {
    "verify_1",
    "verify_2_threads",
    "verify_2_processes",
    "stats_sample",
    "index",
    "beam_commit",
}
RECORD_OPS = ("open_first", "len", "last_random", "verify_1", "verify_2_threads", "verify_2_processes")
VERIFY = {
    "verify_1": ["-j", "1"],
    "verify_2_threads": ["-j", "2"],
    "verify_2_processes": ["-j", "2", "--processes"],
}


def _records(count: int, first: int = 0) -> Iterator[dict[str, Any]]:
    for i in range(first, first + count):
        yield {"label": ("cat", "dog", "bird")[i % 3], "caption": f"record {i}"}


# -- datasets ---------------------------------------------------------------------------------


def shards_dataset(root: Path, count: int) -> Path:
    """``count`` tiny real shards (hard links to one), listed in one split."""
    import recordkit as rk
    from recordkit.dataset._manifest import Manifest, ShardIndex, ShardInfo

    data = root / f"shards-{count}"
    if (data / "dataset.json").is_file():
        return data
    shutil.rmtree(data, ignore_errors=True)
    template = root / "template"
    if not (template / "dataset.json").is_file():
        shutil.rmtree(template, ignore_errors=True)
        rk.write_dataset(
            _records(RECORDS_PER_TINY_SHARD), template, rk.Schema.loads(SCHEMA_TEXT), progress=False
        )
    manifest = Manifest.load(template)
    (first,) = manifest.splits["train"].shards
    assert first.index is not None
    data.mkdir(parents=True)
    shard_bytes = (template / first.file).read_bytes()
    index_bytes = (template / first.index.file).read_bytes()
    (data / first.file).write_bytes(shard_bytes)
    (data / first.index.file).write_bytes(index_bytes)
    listed = [first]
    source = first.file
    for i in range(1, count):
        name = f"train-{i:05d}.tfrecord"
        if i % LINKS_PER_FILE == 0:  # a file system caps the links to one file (ext4: 65,000)
            (data / name).write_bytes(shard_bytes)
            (data / f"{name}.index").write_bytes(index_bytes)
            source = name
        else:
            os.link(data / source, data / name)
            os.link(data / f"{source}.index", data / f"{name}.index")
        index = ShardIndex.model_construct(file=f"{name}.index", sha256=first.index.sha256)
        listed.append(
            ShardInfo.model_construct(
                file=name, records=first.records, bytes=first.bytes, sha256=first.sha256, index=index
            )
        )
    manifest.splits["train"].shards = listed
    manifest.save(data, durable=False)
    return data


def records_dataset(root: Path, per_shard: int, shards: int = 10) -> Path:
    """``shards`` shards of ``per_shard`` records each, written by ``rk.write_dataset``."""
    import recordkit as rk

    data = root / f"records-{per_shard}"
    if not (data / "dataset.json").is_file():
        shutil.rmtree(data, ignore_errors=True)
        rk.write_dataset(
            _records(per_shard * shards),
            data,
            rk.Schema.loads(SCHEMA_TEXT),
            shard_records=per_shard,
            progress=False,
            durable=False,
        )
    return data


def verify_dataset(root: Path, shard_mb: int, total_mb: int) -> Path:
    """``total_mb`` MB of 16 KB records in shards of ``shard_mb`` MB, written by
    ``rk.write_dataset``."""
    import recordkit as rk

    data = root / f"verify-{shard_mb}mb-of-{total_mb}mb"
    if not (data / "dataset.json").is_file():
        shutil.rmtree(data, ignore_errors=True)
        text = "".join(chr(ord("a") + (i * 7919) % 26) for i in range(2 * VERIFY_RECORD_BYTES))
        records = (
            {"label": "cat", "caption": text[i % VERIFY_RECORD_BYTES :][:VERIFY_RECORD_BYTES]}
            for i in range(total_mb * 2**20 // VERIFY_RECORD_BYTES)
        )
        rk.write_dataset(
            records,
            data,
            rk.Schema.loads(SCHEMA_TEXT),
            shard_bytes=shard_mb * 2**20,
            progress=False,
            durable=False,
        )
    return data


def manifest_bytes(data: Path) -> int:
    """``dataset.json`` and every shard table it lists."""
    manifest = json.loads((data / "dataset.json").read_text())
    total = (data / "dataset.json").stat().st_size
    for split in manifest["splits"].values():
        table = split.get("shard_table")
        if table:
            total += (data / table["file"]).stat().st_size
    return total


def staged_beam_commit(data: Path, target: Path) -> Callable[[], object]:
    """The commit step of a Beam write of ``data``'s train shards into a new dataset at
    ``target``, with every shard staged as ``rk.beam.WriteDataset``'s shard writers leave
    them (hard links); calling the result runs the commit alone."""
    import recordkit as rk
    from recordkit.codec._plugins import default_registry
    from recordkit.dataset._manifest import Manifest, ShardIndex, ShardInfo
    from recordkit.format._tfrecord import Compression
    from recordkit.write._beam import STAGING_FOLDER, _CommitFn
    from recordkit.write._beam_folder import Folder
    from recordkit.write._plan import start_manifest

    shutil.rmtree(target, ignore_errors=True)
    source = Manifest.load(data)
    schema = rk.Schema.loads(SCHEMA_TEXT)
    registry = default_registry()
    base = start_manifest(schema, schema.bind(registry), registry, Compression.NONE)
    staged: list[tuple[str, int, str, str]] = []
    run = f"{STAGING_FOLDER}/benchmark"  # the run's staging folder, as WriteDataset names one
    for number, shard in enumerate(source.splits["train"].shards):
        assert shard.index is not None
        name = f"train-{number:05d}.tfrecord"
        folder = target / run / f"{number:016x}"
        folder.mkdir(parents=True)
        os.link(data / shard.file, folder / name)
        os.link(data / shard.index.file, folder / f"{name}.index")
        index = ShardIndex.model_construct(file=f"{name}.index", sha256=shard.index.sha256)
        info = ShardInfo.model_construct(
            file=name, records=shard.records, bytes=shard.bytes, sha256=shard.sha256, index=index
        )
        staged.append(("train", number, f"{run}/{number:016x}/{name}", info.model_dump_json()))
    base_json = base.model_dump_json(by_alias=True)
    commit = _CommitFn(Folder(str(target), None), None, base_json, ["train"], run, frozenset())

    def step() -> None:
        for _ in commit.process(staged, [], {}):  # the schema has no pictures: no sizes to list
            pass

    return step


# -- one measurement, in a child process ------------------------------------------------------


def _cli(*args: str) -> None:
    from click.testing import CliRunner

    from recordkit.cli import main

    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"recordkit {' '.join(args)}: {result.output[-2000:]}")


def _child(op: str, data: str, rep: int) -> dict[str, float]:
    """Run ``op`` on ``data`` once; what it cost."""
    import psutil

    import recordkit as rk

    if op == "beam_commit":
        import apache_beam  # noqa: F401  # its import (about 150 MB) is not the commit's memory
    baseline = psutil.Process().memory_info().rss

    def timed(step: Callable[[], object]) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        step()
        return time.perf_counter() - wall, time.process_time() - cpu

    extra: dict[str, float] = {}
    if op == "open_first":
        wall, cpu = timed(lambda: next(iter(rk.open(data, "train").records())))
    elif op == "len":
        wall, cpu = timed(lambda: len(rk.open(data, "train")))
    elif op == "last_random":
        ds = rk.open(data, "train")
        size = len(ds)
        wall, cpu = timed(lambda: ds[size - 1])
        extra["last_random_warm"] = timed(lambda: ds[size - 2])[0]
    elif op == "tf_first":
        import tensorflow  # noqa: F401  # imported before the clock starts

        wall, cpu = timed(lambda: next(iter(rk.open(data, "train").tf(batch_size=1))))
    elif op in VERIFY:
        wall, cpu = timed(lambda: _cli("verify", "-q", "--no-progress", *VERIFY[op], data))
    elif op == "stats_sample":
        sample = f"train[:{min(1000, len(rk.open(data, 'train')))}]"
        wall, cpu = timed(lambda: _cli("stats", "--no-progress", "-s", sample, data))
    elif op == "index":
        wall, cpu = timed(lambda: _cli("index", "--rebuild", data))
    elif op == "append":
        schema = rk.Schema.loads(SCHEMA_TEXT)
        wall, cpu = timed(
            lambda: rk.write_dataset(
                _records(RECORDS_PER_TINY_SHARD), data, schema, f"added{rep}", append=True, progress=False
            )
        )
    elif op == "beam_commit":
        target = Path(data).parent / f"beam-commit-{rep}"
        wall, cpu = timed(staged_beam_commit(Path(data), target))
        shutil.rmtree(target)
    else:
        raise ValueError(op)
    return {"seconds": wall, "cpu": cpu, "peak_mb": max(_peak_rss() - baseline, 0) / 1e6, **extra}


def _peak_rss() -> int:
    """This process's peak resident size (``VmHWM``: unlike ``ru_maxrss``, which Linux
    carries over from the parent through fork and exec, it starts afresh with the
    program)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(op: str, data: Path, repeats: int) -> dict[str, Any]:
    """``op`` on ``data`` in ``repeats`` fresh processes: every repetition, min and median."""
    reps: list[dict[str, float]] = []
    for rep in range(repeats):
        out = subprocess.run(
            [sys.executable, __file__, "--child", op, "--data", str(data), "--rep", str(rep)],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        )
        reps.append(json.loads(out.stdout.strip().splitlines()[-1]))
    row: dict[str, Any] = {}
    for key in reps[0]:
        values = [r[key] for r in reps]
        row[key] = {"values": values, "min": min(values), "median": statistics.median(values)}
    return row


# -- the whole run ----------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"repeats": args.repeats, "shards": {}, "records": {}, "verify": {}}
    for count in args.shards:
        started = time.perf_counter()
        data = shards_dataset(root, count)
        row: dict[str, Any] = {"made_seconds": time.perf_counter() - started}
        row["manifest_bytes"] = manifest_bytes(data)
        for op in args.ops:
            if op in FULL_PASS and count > args.full_pass_max:
                continue
            row[op] = measure(op, data, args.repeats)
            print(f"shards {count:>9,}  {op:<13} {_brief(row[op])}", flush=True)
        if "append" in args.ops:  # the appended splits go: the next run starts the same
            shutil.rmtree(data)
        results["shards"][str(count)] = row
    for per_shard in args.records:
        data = records_dataset(root, per_shard)
        row = {}
        for op in RECORD_OPS:
            if op in args.ops and op in args.record_ops:
                row[op] = measure(op, data, args.repeats)
                print(f"records {per_shard:>8,}  {op:<13} {_brief(row[op])}", flush=True)
        results["records"][str(per_shard)] = row
    for shard_mb in args.verify_mb:
        data = verify_dataset(root, shard_mb, args.verify_total_mb)
        row = {op: measure(op, data, args.repeats) for op in VERIFY}
        for parallel in ("verify_2_threads", "verify_2_processes"):
            # The speed-up over one thread, from the medians of this run.
            row[f"speedup_{parallel[len('verify_2_') :]}"] = (
                row["verify_1"]["seconds"]["median"] / row[parallel]["seconds"]["median"]
            )
        for op in VERIFY:
            print(f"verify {shard_mb:>3} MB shards  {op:<18} {_brief(row[op])}", flush=True)
        print(f"verify {shard_mb:>3} MB shards  2 threads: {row['speedup_threads']:.2f}x", flush=True)
        results["verify"][str(shard_mb)] = row
    return results


def _brief(row: dict[str, Any]) -> str:
    return (
        f"min {row['seconds']['min']:.4f} s  median {row['seconds']['median']:.4f} s  "
        f"cpu {row['cpu']['median']:.4f} s  peak {row['peak_mb']['median']:.1f} MB"
    )


def write_csv(results: dict[str, Any], path: Path) -> None:
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["axis", "size", "op", "repetition", "seconds", "cpu", "peak_mb"])
        for axis in ("shards", "records", "verify"):
            for size, row in results.get(axis, {}).items():
                for op, cell in row.items():
                    if not _timed(cell):
                        continue
                    for i, seconds in enumerate(cell["seconds"]["values"]):
                        cpu, peak = cell["cpu"]["values"][i], cell["peak_mb"]["values"][i]
                        writer.writerow([axis, size, op, i, seconds, cpu, peak])


def markdown(results: dict[str, Any]) -> str:
    """The medians (CPU seconds in brackets, peak MB over baseline after a slash) as
    Markdown tables: one by shard count, one by records per shard."""
    lines: list[str] = []
    for axis in ("shards", "records"):
        rows = results[axis]
        if not rows:
            continue
        ops = [op for op in SHARD_OPS if any(op in row for row in rows.values())]
        lines += [f"| {axis} | " + " | ".join(ops) + (" | manifest |" if axis == "shards" else " |")]
        lines += ["| ---: " * (len(ops) + 1 + (axis == "shards")) + "|"]
        for size, row in rows.items():
            cells = [
                f"{row[op]['seconds']['median']:.3g} s ({row[op]['cpu']['median']:.3g}) / "
                f"{row[op]['peak_mb']['median']:.0f} MB"
                if op in row
                else "-"
                for op in ops
            ]
            if axis == "shards":
                cells.append(f"{row['manifest_bytes'] / 1e6:.3g} MB")
            lines.append(f"| {int(size):,} | " + " | ".join(cells) + " |")
        lines.append("")
    if results.get("verify"):
        lines += ["| shard MB | " + " | ".join(VERIFY) + " | 2 threads | 2 processes |"]
        lines += ["| ---: " * (len(VERIFY) + 3) + "|"]
        for size, row in results["verify"].items():
            cells = [
                f"{row[op]['seconds']['median']:.3g} s ({row[op]['cpu']['median']:.3g})" for op in VERIFY
            ]
            cells += [f"{row['speedup_threads']:.2f}x", f"{row['speedup_processes']:.2f}x"]
            lines.append(f"| {size} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _timed(cell: object) -> bool:
    return isinstance(cell, dict) and "seconds" in cell


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(16, 5))
    for axis, panel in (("shards", axes[0]), ("records", axes[2])):
        rows = results[axis]
        ops = sorted({op for row in rows.values() for op, cell in row.items() if _timed(cell)})
        for op in ops:
            points = [(int(s), row[op]["seconds"]["median"]) for s, row in rows.items() if op in row]
            if points:
                panel.plot(*zip(*points, strict=False), marker="o", label=op)
        panel.set(xscale="log", yscale="log", title=f"median seconds by {axis}", xlabel=axis)
        panel.legend(fontsize=7)
    rows = results["shards"]
    points = [(int(s), row["manifest_bytes"] / 1e6) for s, row in rows.items()]
    memory = [
        (int(s), row["open_first"]["peak_mb"]["median"]) for s, row in rows.items() if "open_first" in row
    ]
    axes[1].plot(*zip(*points, strict=False), marker="o", label="manifest MB")
    if memory:
        axes[1].plot(*zip(*memory, strict=False), marker="s", label="open+first record peak MB")
    axes[1].set(xscale="log", yscale="log", title="megabytes by shards", xlabel="shards")
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/tmp/rk-scale", help="where the datasets are kept")
    parser.add_argument("--out", default="benchmarks/out/scale.json")
    parser.add_argument("--csv", help="also write every repetition as CSV")
    parser.add_argument("--plot", help="also draw the log-log curves (PNG)")
    parser.add_argument("--markdown", help="also write the medians as Markdown tables")
    parser.add_argument("--merge", nargs="*", default=[], help="JSON results of earlier runs to add in")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shards", type=int, nargs="*", default=list(SHARD_COUNTS))
    parser.add_argument("--records", type=int, nargs="*", default=list(RECORD_COUNTS))
    parser.add_argument(
        "--verify-mb", type=int, nargs="*", default=list(VERIFY_SHARD_MB), help="verify datasets' shard sizes"
    )
    parser.add_argument(
        "--verify-total-mb", type=int, default=VERIFY_TOTAL_MB, help="each verify dataset's size"
    )
    parser.add_argument("--ops", nargs="*", default=list(SHARD_OPS), choices=SHARD_OPS)
    parser.add_argument(
        "--record-ops",
        nargs="*",
        default=list(RECORD_OPS),
        choices=RECORD_OPS,
        help="the operations of the records-R datasets (of those in --ops; default: all)",
    )
    parser.add_argument("--full-pass-max", type=int, default=100_000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--rep", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.data, args.rep)))
        return
    results = stamped(run(args))
    for earlier in args.merge:  # e.g. the large sizes, run on their own
        other = json.loads(Path(earlier).read_text())
        results.setdefault("merged", []).append({"file": earlier, "git": other.get("git")})
        for axis in ("shards", "records", "verify"):
            results[axis] = dict(
                sorted({**other.get(axis, {}), **results[axis]}.items(), key=lambda item: int(item[0]))
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    if args.csv:
        write_csv(results, Path(args.csv))
    if args.plot:
        plot(results, Path(args.plot))
    if args.markdown:
        Path(args.markdown).write_text(markdown(results))


if __name__ == "__main__":
    main()
