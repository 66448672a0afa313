"""Epoch 2 against epoch 1 of a dataset in S3 read with the local shard cache
(``rk.open(url, cache=...)``), on the mixed workload, with moto's S3 server on 127.0.0.1.

    python benchmarks/cache_epochs.py --records 1000 --out benchmarks/out/cache_epochs.json

For each of ``no cache`` and ``cache``, the split is read ``--epochs`` times in order
through the numpy reader (``ds.records()``, every field decoded) from one handle; each
epoch's seconds, records/s and the S3 GETs the client sent (those of shards apart) are
reported. With the cache, epoch 1 downloads each shard whole (one GET) and checks its
sha256; the later epochs read the local copies. The server runs on this machine, so
the gap shown is the client's overhead, not a network's latency or bandwidth: a real
bucket widens it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import recordkit as rk
from benchmarks._data import mixed_records
from benchmarks._provenance import stamped
from benchmarks._recordkit import mixed_record, mixed_schema
from benchmarks.remote import SHARD_BYTES, _free_port, _s3_requests, _wait


def _epochs(
    url: str, options: dict[str, Any], epochs: int, cache: rk.ShardCache | None
) -> list[dict[str, Any]]:
    """Each epoch of one handle: seconds, records/s, shard GETs and other GETs."""
    ds = rk.open(url, "train", storage_options=options, cache=cache)
    results = []
    for epoch in range(1, epochs + 1):
        with _s3_requests() as requests:
            start = time.perf_counter()
            count = sum(1 for _ in ds.records())
            seconds = time.perf_counter() - start
        results.append(
            {
                "epoch": epoch,
                "seconds": round(seconds, 3),
                "records_per_s": round(count / seconds, 1),
                "get_requests": requests["GetObject"],
                "head_requests": requests["HeadObject"],
            }
        )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
    )
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(port)
        import s3fs

        options = {"endpoint_url": f"http://127.0.0.1:{port}", "key": "testing", "secret": "testing"}
        bucket = f"rk-bench-{uuid.uuid4().hex[:8]}"
        s3fs.S3FileSystem(**options).mkdir(bucket)
        url = f"s3://{bucket}/mixed"
        records = [mixed_record(r) for r in mixed_records(args.records)]
        manifest = rk.write_dataset(
            records, url, mixed_schema(), shard_bytes=SHARD_BYTES, progress=False, storage_options=options
        )
        split = manifest.splits["train"]
        with tempfile.TemporaryDirectory() as folder:
            report = {
                "records": args.records,
                "shards": len(split.shards),
                "bytes": sum(s.bytes for s in split.shards),
                "no cache": _epochs(url, options, args.epochs, None),
                "cache": _epochs(url, options, args.epochs, rk.ShardCache(folder)),
            }
    finally:
        server.terminate()
        server.wait(timeout=10)
    text = json.dumps(stamped(report), indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
