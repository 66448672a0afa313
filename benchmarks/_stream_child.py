"""One memory run of the long stream, in a fresh process (``python -m benchmarks._stream_child``).

Prints one JSON line: the process's peak resident set size (VmHWM, or ``ru_maxrss``), its RSS
after imports and setup (the baseline), the records and the seconds the stream took.
The records are generated lazily, so nothing in the process itself grows with the
record count except what the writer or reader keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

CONTENDERS = ("recordkit write", "hand-written write", "recordkit read")


def _peak_rss_bytes() -> int:
    """This process's peak RSS. On Linux, VmHWM: ``ru_maxrss`` survives exec, so a child
    forked from a large parent would report the parent's size, not its own."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--contender", choices=CONTENDERS, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--dir", type=Path, required=True, help="dataset directory (written or read)")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args(argv)

    import psutil

    from benchmarks import _data, _handwritten, _recordkit

    schema = _recordkit.stream_schema()
    records = _data.stream_records(args.count)
    read = 0
    if args.contender == "recordkit read":
        dataset = _recordkit.stream_dataset(args.dir, args.batch_size)
        baseline = psutil.Process().memory_info().rss
        start = time.perf_counter()
        for batch in dataset:
            read += int(batch["label"].shape[0])
    elif args.contender == "recordkit write":
        import recordkit  # noqa: F401 - imported before the baseline, like the other contenders' libraries

        baseline = psutil.Process().memory_info().rss
        start = time.perf_counter()
        _recordkit.write(records, schema, args.dir)
    else:
        import tensorflow  # noqa: F401 - imported before the baseline, not during the stream

        baseline = psutil.Process().memory_info().rss
        start = time.perf_counter()
        _handwritten.write_stream(records, args.dir)
    seconds = time.perf_counter() - start
    result = {
        "contender": args.contender,
        "records": read if args.contender == "recordkit read" else args.count,
        "seconds": seconds,
        "baseline_rss": baseline,
        "peak_rss": _peak_rss_bytes(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
