"""The generated tf.data reader against the simplest hand-written pipeline, field by field
(issue 30).

    python benchmarks/tfdata_fields.py --records 1500 --passes 5 [--stages] [--json out.json]

Writes the issue's workload (1,500 records: a noisy JPEG of 200 to 320 px at quality 90,
1 s of 16 kHz WAV, a caption of 3 to 12 words, 0 to 6 normalized boxes with labels, a
label) with ``rk.write_dataset(durable=False)`` into one shard, then reads each field
group (the image; the audio; the boxes, label and text; all five) with
``rk.load_dataset(fields=..., batch_size=32, pad=True)`` and with the tutorials'
per-record pipeline (``benchmarks/_tfdata_fields.py``: ``HAND_WRITTEN_CODE``) over the
same shard, the autotuner on and off, next to the raw read, parse only and the decode
limit. Every pass is printed (records/s), with the median and the best, and the CPU
per record of the whole process. ``--stages`` adds recordkit's read built up one stage
at a time, per group (CPU per record: each stage's cost is the difference between two
rows). Also run by ``benchmarks/run.py --only fields``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the benchmarks package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks import _tfdata_fields
from benchmarks._provenance import stamped


def run(
    records: int, passes: int, stages: bool, scratch: Path, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Write the workload under ``scratch``, time every case; the results as JSON-ready data."""
    root = scratch / "fields"
    files, jpegs, wavs = _tfdata_fields.write_workload(root, records)
    log(f"workload: {records} records in {files[0].name} ({files[0].stat().st_size / 2**20:.1f} MiB)")
    start = _tfdata_fields.machine()
    results = _tfdata_fields.run_cases(
        _tfdata_fields.build_cases(root, files, jpegs, wavs), records, passes, log
    )
    out: dict[str, Any] = {"records": records, "passes": passes, "machine_start": start}
    out["fields"] = [r.__dict__ for r in results]
    tables = ["side by side:\n" + _tfdata_fields.format_results(results)]
    if stages:
        staged = _tfdata_fields.run_cases(_tfdata_fields.stage_cases(root, files), records, passes, log)
        out["stages"] = [r.__dict__ for r in staged]
        tables.append("recordkit stage by stage:\n" + _tfdata_fields.format_results(staged))
    out["machine_end"] = _tfdata_fields.machine()
    out["tables"] = tables
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--passes", type=int, default=5, help="passes of every case, alternating")
    parser.add_argument("--stages", action="store_true", help="also time recordkit's read stage by stage")
    parser.add_argument("--json", type=Path, help="write every pass here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tfdata-fields-") as tmp:
        out = run(args.records, args.passes, args.stages, Path(tmp))
    print(f"conditions: {out['machine_start']} -> {out['machine_end']}")
    for table in out["tables"]:
        print()
        print(table)
    if args.json:
        args.json.write_text(json.dumps(stamped(out), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
