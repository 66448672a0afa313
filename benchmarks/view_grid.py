"""``recordkit view`` on a split of many small records: how long until the first grid
page is served after the server starts, and how long a page deep in the split takes.

    python benchmarks/view_grid.py --records 1000000 --out benchmarks/out/view_grid.json

The dataset (an 8x8 PNG, a label and a caption per record, 10,000 records a shard) is
written once (``--root`` keeps it for later runs). Each repetition starts ``recordkit
view DATASET --port 0`` in a process of its own and measures:

* ``first_page``: from starting the process to the first grid page and all its
  thumbnails received, 6 at a time as a browser fetches them (Python's start, opening
  the dataset, reading the page's records through the index sidecars, drawing them);
* ``first_page_served``: the same page from the moment the server prints its address;
* ``deep_page``: then the last page of the split with its thumbnails (a page whose
  records were never read before).

Every repetition's seconds are reported, with the fastest and the median. Timing on a
busy machine is noise: read the spread, not only the median.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import recordkit as rk
from benchmarks._provenance import stamped

PER_PAGE = 48
#: Thumbnails fetched at once, as a browser does (Chromium opens 6 connections a host).
BROWSER_CONNECTIONS = 6
SCHEMA = rk.Schema.loads(
    """
name: tiny
fields:
  image: {codec: image, options: {format: png, channels: 3}}
  label: {codec: label, options: {names: [cat, dog, bird]}}
  caption: {codec: text}
"""
)


def tiny_records(count: int) -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(0)
    pictures = rng.integers(0, 256, (64, 8, 8, 3), dtype=np.uint8)  # 64 pictures, reused
    for i in range(count):
        yield {"image": pictures[i % 64], "label": ("cat", "dog", "bird")[i % 3], "caption": f"record {i}"}


def write(root: Path, count: int) -> Path:
    data = root / f"tiny-{count}"
    if not (data / "dataset.json").is_file():
        rk.write_dataset(tiny_records(count), data, SCHEMA, shard_records=10_000, progress=False)
    return data


def _get(url: str) -> bytes:
    # urllib, as a browser would: httpx's client waits on delayed ACKs, ~40 ms a request.
    with urllib.request.urlopen(url, timeout=120) as answer:
        return bytes(answer.read())


def _page(url: str) -> int:
    """GET a grid page and every thumbnail on it; the number of thumbnails."""
    text = _get(url).decode("utf-8")
    pictures = [part.split('"')[0] for part in text.split('src="')[1:] if part.startswith("/picture/")]
    base = url.split("/?")[0].rstrip("/")
    with ThreadPoolExecutor(BROWSER_CONNECTIONS) as pool:
        list(pool.map(_get, [base + picture.replace("&amp;", "&") for picture in pictures]))
    return len(pictures)


def one_run(data: Path, count: int) -> dict[str, float]:
    start = time.perf_counter()
    command = [sys.executable, "-m", "recordkit", "view", str(data), "--port", "0"]
    cache = tempfile.mkdtemp(prefix="rk-view-cache-")
    command += ["--cache-dir", cache]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if " at " not in line:
                raise RuntimeError(f"recordkit view did not start: {line!r}")
            ready = time.perf_counter()
            url = line.split(" at ")[1].split()[0]
            shown = _page(url)
            first = time.perf_counter()
            last = math.ceil(count / PER_PAGE)
            deep_shown = _page(f"{url}?page={last}")
            deep = time.perf_counter() - first
            expected_last = count - (last - 1) * PER_PAGE
            if shown != min(PER_PAGE, count) or deep_shown != expected_last:
                raise RuntimeError(f"pages showed {shown} and {deep_shown} thumbnails")
        finally:
            process.terminate()
            process.wait()
            shutil.rmtree(cache, ignore_errors=True)  # the server's thumbnails: not left in /tmp
    return {"first_page": first - start, "first_page_served": first - ready, "deep_page": deep}


def run(count: int, repeats: int, root: Path) -> dict[str, Any]:
    data = write(root, count)
    runs = [one_run(data, count) for _ in range(repeats)]
    results: dict[str, Any] = {"records": count, "per_page": PER_PAGE}
    for name in runs[0]:
        seconds = [r[name] for r in runs]
        results[name] = {"seconds": seconds, "min": min(seconds), "median": statistics.median(seconds)}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=100_000, help="records in the split (default 100000)")
    parser.add_argument("--repeats", type=int, default=5, help="server starts measured (default 5)")
    parser.add_argument("--root", type=Path, default=None, help="keep the dataset in this folder")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if args.root is not None:
        args.root.mkdir(parents=True, exist_ok=True)
        results = run(args.records, args.repeats, args.root)
    else:
        with tempfile.TemporaryDirectory(prefix="rk-view-grid-") as tmp:
            results = run(args.records, args.repeats, Path(tmp))
    print(f"{results['records']:,} records, {PER_PAGE} a page")
    for name in ("first_page", "first_page_served", "deep_page"):
        row = results[name]
        each = " ".join(f"{s:.3f}" for s in row["seconds"])
        print(f"{name:18s} min {row['min']:.3f} s  median {row['median']:.3f} s  each: {each}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(stamped(results), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
