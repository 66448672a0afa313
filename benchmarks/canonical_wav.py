"""WAV decoding in datasets recordkit wrote (issue 13): without the choice between the
canonical path and ``tf.audio.decode_wav``, against with it.

    python benchmarks/canonical_wav.py --records 1500 --passes 5 --rounds 3

The reader-speed workload (JPEG of 200 to 320 pixels a side, 1 s of 16 kHz WAV, a
caption, 0 to 6 labelled boxes, a class label) is written once by recordkit. Its audio
codec has only ever stored canonical WAV files, so a dataset it wrote is read with the
canonical check as an assertion (``AudioCodec.for_stored_version``); records of other
tools keep a ``tf.cond`` between the canonical path and ``tf.audio.decode_wav``. Each
round runs one process per way, alternating (``general`` puts back the base class's
``for_stored_version``, which is what recordkit did before). Each process reads, with
``load_dataset``: the audio alone (``batch_size``, ``pad=True``), every field batched the
same way, and every field record by record; every pass timed without its iterator's
teardown. Printed per case and way: every pass's records/s, the median and the best, and
the CPU time per record (median), then the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the benchmarks package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import _data, _recordkit
from benchmarks._reader_speed import IMAGE_SIDES
from benchmarks._timing import timed_pass

WAYS = ("canonical", "general")
CASES = ("audio, batched", "every field, batched", "every field, unbatched")


def _child(way: str, root: Path, records: int, passes: int, batch: int) -> dict[str, Any]:
    """Time the cases in this process, reading the ``way`` it is told."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import recordkit as rk
    from recordkit_codecs.audio import AudioCodec

    if way == "general":
        AudioCodec.for_stored_version = rk.Codec.for_stored_version  # type: ignore[method-assign]  # the general path
    datasets = {
        "audio, batched": rk.load_dataset(root, fields=["audio"], batch_size=batch, pad=True),
        "every field, batched": rk.load_dataset(root, batch_size=batch, pad=True),
        "every field, unbatched": rk.load_dataset(root),
    }
    for dataset in datasets.values():  # warm-up: page cache and graph building
        for _ in dataset:
            pass
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in datasets}
    for _ in range(passes):
        for name, dataset in datasets.items():
            wall, cpu = timed_pass(dataset)
            runs[name].append((records / wall, cpu / records * 1e6))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--passes", type=int, default=5, help="passes per case in each process")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two processes")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--child", nargs=2, metavar=("WAY", "DATASET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        way, root = args.child
        print(json.dumps(_child(way, Path(root), args.records, args.passes, args.batch)))
        return
    scratch = Path(tempfile.mkdtemp(prefix="canonical-wav-"))
    root = scratch / "mixed"
    try:
        written = _data.mixed_records(args.records, seed=13, sides=IMAGE_SIDES)
        _recordkit.write([_recordkit.mixed_record(r) for r in written], _recordkit.mixed_schema(), root)
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {(c, w): [] for c in CASES for w in WAYS}
        for _ in range(args.rounds):
            for way in WAYS:
                command = [
                    sys.executable,
                    __file__,
                    "--records",
                    str(args.records),
                    "--passes",
                    str(args.passes),
                ]
                command += ["--batch", str(args.batch), "--child", way, str(root)]
                done = subprocess.run(command, capture_output=True, text=True, check=True, env=os.environ)
                for case, values in json.loads(done.stdout.splitlines()[-1]).items():
                    runs[(case, way)] += [tuple(v) for v in values]
        print(f"{'case':24} {'way':9} {'rec/s median':>12} {'best':>8} {'CPU us/rec':>10}   runs (rec/s)")
        for case in CASES:
            medians = {}
            for way in WAYS:
                values = runs[(case, way)]
                medians[way] = statistics.median(r for r, _ in values)
                cpu = statistics.median(c for _, c in values)
                each = " ".join(f"{r:,.0f}" for r, _ in values)
                best = max(r for r, _ in values)
                print(f"{case:24} {way:9} {medians[way]:12,.0f} {best:8,.0f} {cpu:10.1f}   {each}")
            print(f"{case:24} {'ratio':9} {medians['canonical'] / medians['general']:11.2f}x")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # what it wrote: not left in /tmp


if __name__ == "__main__":
    main()
