"""Hostile record headers: a length that the header's own CRC vouches for, but that the
shard cannot hold (2**40, 2**36, 2**63, a byte too many), at generated records of
plain and compressed shards whose manifest was made to agree (sizes and sha256), as an
attacker would.

Every reader refuses with an error naming the shard and the record's offset, without
allocating the declared length: ``iter_records``, ``recordkit verify``, and
``load_dataset``, which hands the shard to TensorFlow only after the header walk (run
in a subprocess, so that a regression, a segfault in TensorFlow, fails this test
instead of killing the test run).
"""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _fault_support import relist, set_declared_length, shard_paths, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.format._tfrecord import (  # private: a shard's raw frames, without TensorFlow
    Compression,
    iter_tfrecords,
)
from recordkit.storage import location

LENGTHS = (2**40, 2**36, 2**63 - 1, 2**64 - 1)
SEED = 1202


def _hostile(tmp_path: Path, case: int, compression: str | None) -> tuple[Path, str, int, int]:
    """A dataset with one hostile header: (root, shard name, offset, declared length)."""
    rng = random.Random(SEED * 100 + case)
    root = tmp_path / f"case{case}-{compression}"
    write(root, 30, compression=compression)
    comp = Compression.parse(compression)
    path = rng.choice(shard_paths(root))
    offsets = [offset for offset, _ in iter_tfrecords(location(path), comp)]
    offset = rng.choice(offsets)
    remaining = None
    if comp is Compression.NONE:
        remaining = path.stat().st_size - offset - 16
    length = rng.choice([*LENGTHS, (remaining or 10_000) + 1])
    if comp is Compression.NONE:
        set_declared_length(path, offset, length)
    else:
        plain = tmp_path / "plain.bin"
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        set_declared_length(plain, offset, length)
        path.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    relist(root)
    return root, path.name, offset, length


CASES = [(case, compression) for compression in (None, "GZIP") for case in range(8)]


@pytest.mark.parametrize(("case", "compression"), CASES)
def test_iter_records_and_verify_refuse_a_hostile_length(
    tmp_path: Path, case: int, compression: str | None, fault_cases: Any
) -> None:
    root, shard, offset, _length = _hostile(tmp_path, case, compression)
    fault_cases.tried("hostile record headers")
    with pytest.raises(rk.errors.CorruptRecordError) as info:
        list(rk.iter_records(root))
    assert info.value.shard == shard
    assert info.value.context.offset == offset
    assert "announced" in str(info.value)
    # skip: the records before it are read, the rest of the shard is reported
    report = rk.CorruptionReport()
    kept = list(rk.iter_records(root, on_corrupt="skip", report=report))
    assert report.shards == [shard]
    assert len(kept) < 30
    result = CliRunner().invoke(main, ["verify", str(root)])
    assert result.exit_code == 1
    fail = next(line for line in result.output.splitlines() if line.startswith("FAIL"))
    assert shard in fail
    assert f"(offset {offset})" in fail


READER = textwrap.dedent(
    """
    import json, sys
    import recordkit as rk

    out = []
    for root, on_corrupt in json.loads(sys.argv[1]):
        report = rk.CorruptionReport()
        try:
            n = sum(1 for _ in rk.load_dataset(root, on_corrupt=on_corrupt, report=report))
            out.append({"records": n, "skipped": [s.shard for s in report.skipped]})
        except rk.errors.RecordkitError as exc:
            out.append({"error": type(exc).__name__, "shard": exc.shard, "offset": exc.context.offset})
    print(json.dumps(out))
    """
)


@pytest.mark.slow
def test_load_dataset_refuses_a_hostile_length_without_crashing(tmp_path: Path, fault_cases: Any) -> None:
    pytest.importorskip("tensorflow")
    cases = [_hostile(tmp_path, case, compression) for case, compression in CASES[::4]]
    jobs = [[str(root), mode] for root, *_ in cases for mode in ("raise", "skip")]
    fault_cases.tried("hostile record headers (tf.data)", len(jobs))
    done = subprocess.run(
        [sys.executable, "-c", READER, json.dumps(jobs)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"the reader died (signal {-done.returncode}): {done.stderr[-2000:]}"
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for (root, shard, offset, length), raised, skipped in zip(
        cases, results[::2], results[1::2], strict=True
    ):
        assert raised == {"error": "CorruptRecordError", "shard": shard, "offset": offset}, (root, length)
        assert "error" not in skipped
        assert skipped["records"] < 30
        assert shard in skipped["skipped"]
