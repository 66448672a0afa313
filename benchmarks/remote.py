"""Writing and reading a dataset in object storage against a local folder, on the mixed
workload, with the local S3 server (moto) and the GCS emulator started on 127.0.0.1.

    python benchmarks/remote.py --records 2000 --out benchmarks/out/remote.json

Measured for each of ``local`` (a folder), ``s3`` (moto's server) and ``gs`` (the GCS
emulator), every field decoded (JPEG, WAV, caption, boxes, label):

* ``write``: ``write_dataset`` of the records (shards streamed, manifest PUT), records/s;
* ``iter_records``: the split read in order through the numpy reader, records/s;
* ``load_dataset``: batches of 64 through tf.data (remote shards streamed through
  fsspec: TensorFlow's own gs client cannot reach an emulator), records/s;
* ``random_access_1``: ``rk.RandomAccess``, one record at a random index at a time (a
  local ``pread`` / one ranged GET each), records/s;
* ``random_access_64``: ``ds[list]`` of 64 random indices at a time (remote: the 64
  ranged GETs in flight together), records/s;
* ``random_access_bytes_1``, ``random_access_bytes_64``: the same reads without the
  decode (``ds.read_serialized(i)``; a batch's bytes fetched together and checked): the
  storage's own cost, records/s;
* ``random_access_open``: making the ``RandomAccess`` (manifest, shard sizes, every
  record index fetched and checked), seconds;
* ``requests`` (s3 only): the HTTP requests counted in the client (aiobotocore) for
  making the reader, for one record, and for one batch of 64.

The local servers run on this machine, so the figures show the clients' overhead (HTTP,
parts, ranged reads), not a network's latency or bandwidth: a real bucket adds both.
Each read figure is ``--repeats`` runs (every run's seconds, the median and the best
records/s), after one unmeasured tf.data read. ``--random-access-only`` leaves out the
streamed reads (and TensorFlow).
Timing on a busy machine is noise: the figures for docs/performance.md come from a quiet
one.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"  # see tests/recordkit/_object_stores.py

import recordkit as rk
from benchmarks._data import mixed_records
from benchmarks._provenance import stamped
from benchmarks._random_reads import RandomReads
from benchmarks._recordkit import mixed_record, mixed_schema
from benchmarks._timing import repeated

BATCH = 64
SHARD_BYTES = 8 << 20
#: Records read one at a time by the random-access figure (at most).
SINGLES = 300


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"no server on port {port}")


@contextlib.contextmanager
def _servers() -> Iterator[dict[str, tuple[str, dict[str, Any]]]]:
    """moto's S3 server and the GCS emulator, each in its own process; a bucket on each."""
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
    )
    s3_port, gcs_port = _free_port(), _free_port()
    s3 = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(s3_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    gcs = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gcp_storage_emulator",
            "start",
            "--host",
            "127.0.0.1",
            "--port",
            str(gcs_port),
            "--in-memory",
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(s3_port)
        _wait(gcs_port)
        os.environ["STORAGE_EMULATOR_HOST"] = f"http://127.0.0.1:{gcs_port}"
        import gcsfs
        import s3fs

        bucket = f"rk-bench-{uuid.uuid4().hex[:8]}"
        s3_options = {"endpoint_url": f"http://127.0.0.1:{s3_port}", "key": "testing", "secret": "testing"}
        # The emulator serves one connection at a time with a listen backlog of 5: more
        # GETs in flight get their connections dropped and retried a second or more
        # later. fsspec's batch_size caps them (a real bucket needs no cap).
        gs_options = {
            "endpoint_url": f"http://127.0.0.1:{gcs_port}",
            "token": "anon",
            "project": "bench",
            "batch_size": 4,
        }
        s3fs.S3FileSystem(**s3_options).mkdir(bucket)
        gcsfs.GCSFileSystem(**gs_options).mkdir(bucket)
        yield {"s3": (f"s3://{bucket}/mixed", s3_options), "gs": (f"gs://{bucket}/mixed", gs_options)}
    finally:
        for process in (s3, gcs):
            process.terminate()
            process.wait(timeout=10)


@contextlib.contextmanager
def _s3_requests() -> Iterator[collections.Counter[str]]:
    """Counts the S3 API calls the client makes inside the block, by operation."""
    from aiobotocore.client import AioBaseClient

    counts: collections.Counter[str] = collections.Counter()
    original = AioBaseClient._make_api_call

    async def counting(self: Any, operation: str, params: Any) -> Any:
        counts[operation] += 1
        return await original(self, operation, params)

    AioBaseClient._make_api_call = counting
    try:
        yield counts
    finally:
        AioBaseClient._make_api_call = original


def _random_access(url: str, extra: dict[str, Any], repeats: int, count_requests: bool) -> dict[str, Any]:
    """Random reads through ``rk.RandomAccess`` (see the module docs)."""
    start = time.perf_counter()
    ds = rk.RandomAccess(url, **extra)
    result: dict[str, Any] = {"random_access_open": {"seconds": time.perf_counter() - start}}
    reads = RandomReads.draw(ds, SINGLES, 1024, BATCH)
    singles, batches = reads.singles, reads.batches

    def bytes_one_at_a_time() -> int:
        return sum(1 for i in singles if ds.read_serialized(i))

    def bytes_batches_of_64() -> int:
        shards = ds.shards
        count = 0
        for batch in batches:
            located = [shards.locate(i) for i in batch]
            for (shard, number), framed in zip(located, shards.fetch(located), strict=True):
                count += bool(shards.unframe(shard, number, framed))
        return count

    ds[singles[0]]  # warm-up: the connection (remote) or the page cache (local)
    result["random_access_1"] = repeated(reads.one_at_a_time, repeats)
    result["random_access_64"] = repeated(reads.in_batches, repeats)
    result["random_access_bytes_1"] = repeated(bytes_one_at_a_time, repeats)
    result["random_access_bytes_64"] = repeated(bytes_batches_of_64, repeats)
    if count_requests:
        with _s3_requests() as opening:
            rk.RandomAccess(url, **extra)
        with _s3_requests() as single:
            ds[singles[0]]
        with _s3_requests() as batch:
            ds[batches[0]]
        result["requests"] = {
            "open": dict(opening),
            "one_record": dict(single),
            "batch_of_64": dict(batch),
            "shards": len(ds.shards.shards),
        }
    return result


def _measure(
    url: str,
    options: dict[str, Any] | None,
    records: list[dict[str, Any]],
    repeats: int,
    *,
    streaming: bool = True,
    count_requests: bool = False,
) -> dict[str, Any]:
    extra: dict[str, Any] = {"storage_options": options} if options is not None else {}

    def write() -> int:
        manifest = rk.write_dataset(records, url, mixed_schema(), shard_bytes=SHARD_BYTES, **extra)
        return manifest.split("train").num_records

    # Written once: a second write would find the dataset.
    result: dict[str, Any] = {"write": repeated(write, 1)}
    result.update(_random_access(url, extra, repeats, count_requests))
    if not streaming:
        return result

    def numpy_read() -> int:
        return sum(1 for _ in rk.iter_records(url, **extra))

    read_extra = {**extra, "remote_io": "fsspec"} if options is not None else {}

    def tf_read() -> int:
        return sum(
            int(batch["label"].shape[0]) for batch in rk.load_dataset(url, batch_size=BATCH, **read_extra)
        )

    tf_read()  # warm-up: TensorFlow's start and the first graph are not the storage's cost
    result["iter_records"] = repeated(numpy_read, repeats)
    result["load_dataset"] = repeated(tf_read, repeats)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--random-access-only", action="store_true", help="leave out iter_records and load_dataset"
    )
    args = parser.parse_args(argv)
    streaming = not args.random_access_only
    records = [mixed_record(r) for r in mixed_records(args.records)]
    results: dict[str, Any] = {"records": args.records, "shard_bytes": SHARD_BYTES}
    with tempfile.TemporaryDirectory() as tmp, _servers() as buckets:
        results["local"] = _measure(
            str(Path(tmp) / "mixed"), None, records, args.repeats, streaming=streaming
        )
        for name, (url, options) in buckets.items():
            results[name] = _measure(
                url, options, records, args.repeats, streaming=streaming, count_requests=name == "s3"
            )
    text = json.dumps(stamped(results), indent=2)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    for store in ("local", "s3", "gs"):
        for name in (
            "random_access_1",
            "random_access_64",
            "random_access_bytes_1",
            "random_access_bytes_64",
        ):
            row = results[store][name]
            runs = " ".join(f"{rate:,.0f}" for rate in row["records_per_s_each"])
            print(
                f"{store:5s} {name:22s} median {row['records_per_s']:8,.0f}  best "
                f"{row['records_per_s_best']:8,.0f} records/s  (runs {runs})"
            )


if __name__ == "__main__":
    main()
