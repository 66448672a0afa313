"""An appender to a remote dataset, for the bucket concurrency tests (run as a subprocess).

Usage: python _bucket_writer.py PLAN

PLAN is JSON: ``url``, ``storage_options``, ``split``, ``start``, ``n``, ``resume``, and
the steps where it meets the other writers, through files of a local folder:
``opened`` (touched once the writer has opened the dataset, that is read its
``dataset.json``, or failed to), ``wait_before_writing`` (files to wait for then),
``pause_after`` (a number of records), ``paused`` (touched after writing that many)
and ``resume_when`` (waited for before writing the rest). It appends records
``item-START`` .. (the remote tests' records, shards of 5) and prints ``ok`` or the
one-line error.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "recordkit"))

from _object_stores import REMOTE_SCHEMA, remote_records

import recordkit as rk

plan = json.loads(sys.argv[1])


def wait_for(*names: str) -> None:
    while not all(Path(name).exists() for name in names):
        time.sleep(0.01)


def touch(name: str | None) -> None:
    if name:
        Path(name).touch()


try:
    try:
        writer = rk.DatasetWriter(
            plan["url"],
            REMOTE_SCHEMA,
            append=not plan.get("resume", False),
            resume=plan.get("resume", False),
            shard_records=5,
            progress=False,
            storage_options=plan["storage_options"],
        )
    finally:
        touch(plan.get("opened"))
    with writer:
        wait_for(*plan.get("wait_before_writing", []))
        for i, record in enumerate(remote_records(plan["n"], plan["start"])):
            if i == plan.get("pause_after"):
                touch(plan["paused"])
                wait_for(plan["resume_when"])
            writer.write(record, plan["split"])
except rk.errors.RecordkitError as exc:
    print(f"{type(exc).__name__}: {exc}")
else:
    print("ok")
