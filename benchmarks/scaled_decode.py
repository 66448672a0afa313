"""Decoding JPEGs at the model's size (issue 33): scaled decode on and off in tf.data,
the numpy reader and the PyTorch loader, next to the hand-written tf.data pipeline.

    python benchmarks/scaled_decode.py --records 96 --repeats 5 [--json out.json]

Writes three workloads (JPEGs of 1,024 to 2,048 px, smooth and detailed; 200 to 320 px)
and reads each to 224 x 224 every way (see ``benchmarks/_scaled_decode.py``), the ways
interleaved round by round; prints every repetition with the median and the best, the
ratios to the full decode and to the hand-written pipeline, and the mean PSNR of the
scaled pictures. Also run by ``benchmarks/run.py --only scaled``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the benchmarks package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import _scaled_decode
from benchmarks._provenance import stamped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=96, help="records of each workload")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds of every way, interleaved")
    parser.add_argument(
        "--only", choices=list(_scaled_decode.WORKLOADS), action="append", help="one workload"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    start = _scaled_decode.machine()
    rows: list[_scaled_decode.Row] = []
    scores: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="scaled-decode-") as scratch:
        for name in args.only or list(_scaled_decode.WORKLOADS):
            got, quality = _scaled_decode.run_workload(name, Path(scratch), args.records, args.repeats, print)
            rows += got
            if quality:
                scores[name] = quality
    end = _scaled_decode.machine()
    print(
        f"\nmachine: {start['usable_cpus']} usable CPUs, load average {start['load_average']} at the start, "
        f"{end['load_average']} at the end\n"
    )
    print(_scaled_decode.format_rows(rows))
    if scores:
        print(
            "\nmean PSNR of the first 16 pictures of each workload:\n" + _scaled_decode.format_quality(scores)
        )
    if args.json:
        out = {
            "rows": [r.__dict__ for r in rows],
            "quality": scores,
            "machine_start": start,
            "machine_end": end,
        }
        args.json.write_text(json.dumps(stamped(out), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
