"""A writer for the concurrency tests (run as a subprocess).

Usage: python _concurrent_writer.py ROOT MODE START N WAIT GO

Waits until the file GO exists (so that several start together), then writes (MODE
``write``) or appends (``append``) records START .. START+N-1 to split train, slowly
(a pause before each record, shards of 5 records), with ``wait=`` WAIT (``no`` or
seconds). Prints ``ok`` or the one-line error.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _fault_support import SCHEMA, records

import recordkit as rk

root, mode = Path(sys.argv[1]), sys.argv[2]
start, n = int(sys.argv[3]), int(sys.argv[4])
wait: bool | float = False if sys.argv[5] == "no" else float(sys.argv[5])
go = Path(sys.argv[6])
while not go.exists():
    time.sleep(0.01)


def slow() -> Iterator[dict[str, Any]]:
    for record in records(n, start):
        time.sleep(0.05)  # a write that lasts: the others start while it holds the lock
        yield record


try:
    rk.write_dataset(
        slow(),
        SCHEMA,
        root,
        "train",
        shard_records=5,
        append=mode == "append" or root.exists(),
        progress=False,
        durable=False,
        wait=wait,
    )
except rk.errors.RecordkitError as exc:
    print(f"{type(exc).__name__}: {exc}")
else:
    print("ok")
