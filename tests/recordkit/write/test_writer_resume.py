"""A writing process killed mid-shard (SIGKILL), then the write resumed.

Twice: a fresh write, and an append to a dataset that already holds a finished split
and another split, which must come through the kill unchanged and readable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _writer_support import SCHEMA, check_manifest_matches_files, make_records, read_ids

import recordkit as rk

N = 300
KILL_AT = 137  # shards of 20 records: 0-119 complete, 120-136 in the partial shard
#: Every test here runs a writing process and kills it.
pytestmark = pytest.mark.slow

BAD = frozenset({7, 57, 128, 201})  # rejected records, before and after the kill point

SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path

    sys.path.insert(0, sys.argv[1])
    import recordkit as rk
    from _writer_support import SCHEMA, make_records

    root, ready, n, kill_at = Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    bad = frozenset(int(i) for i in sys.argv[6].split(","))
    append = sys.argv[7] == "append"

    def records():
        for record in make_records(n, bad=bad):
            if record["id"] == kill_at:
                ready.touch()
                time.sleep(600)  # killed here, in the middle of a shard
            yield record

    rk.write_dataset(
        records(), SCHEMA, root, shard_records=20, on_error="skip", append=append, progress=False
    )
    """
)


BASE = 30  # records already in "train" before an append: shards 0 (20) and 1 (10)


def shard_names(first: int, stop: int) -> list[str]:
    return [f"train-{i:05d}.tfrecord" for i in range(first, stop)]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("mode", ["write", "append"])
def test_killed_write_resumes_with_every_record_once(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "data"
    before: list[int] = []
    if mode == "append":
        rk.write_dataset(make_records(BASE), SCHEMA, root, shard_records=20, progress=False)
        rk.write_dataset(make_records(5), SCHEMA, root, split="test", append=True, progress=False)
        before = list(range(BASE))
    committed = rk.Manifest.load(root).splits if mode == "append" else {}
    first = len(committed["train"].shards) if committed else 0  # the append's first shard
    ready = tmp_path / "ready"
    script = tmp_path / "write.py"
    script.write_text(SCRIPT)
    args = [
        str(Path(__file__).parents[1]),  # tests/recordkit, where _writer_support.py lives
        str(root),
        str(ready),
        str(N),
        str(KILL_AT),
        ",".join(map(str, BAD)),
        mode,
    ]
    process = subprocess.Popen([sys.executable, str(script), *args], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            if process.poll() is not None:
                pytest.fail(f"the writer exited early: {process.stderr.read().decode()}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                pytest.fail("the writer never reached the kill point")
            time.sleep(0.05)
        # A completed shard is listed from the background (its fsync overlaps the next
        # records), also while the writer waits for input: wait for the 6th, then kill.
        while len(json.loads((root / "dataset.json").read_text())["splits"]["train"]["shards"]) < first + 6:
            if time.monotonic() > deadline:
                pytest.fail("the 6th complete shard was never listed")
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()  # type: ignore[union-attr]

    # Killed mid-shard: after 6 complete shards, the partial 7th exists only under its
    # temporary name.
    partial = shard_names(first + 6, first + 7)[0]
    names = {p.name for p in root.iterdir()}
    assert any(n.startswith(f".{partial}.") and n.endswith(".tmp") for n in names), names
    assert partial not in names
    manifest = rk.Manifest.load(root)
    split = manifest.split("train")
    assert [s.file for s in split.shards] == shard_names(0, first + 6)
    assert split.unfinished is not None
    assert split.unfinished.consumed == 122  # 120 written + 2 rejected
    assert read_ids(root) == before + [i for i in range(122) if i not in BAD]
    for shard in split.shards:  # every listed shard is complete and valid
        assert (root / shard.file).stat().st_size == shard.bytes
    if committed:  # what was committed before the append is untouched
        assert split.shards[:first] == committed["train"].shards
        assert manifest.split("test") == committed["test"]
        assert read_ids(root, "test") == list(range(5))

    manifest = rk.write_dataset(
        make_records(N, bad=BAD), SCHEMA, root, shard_records=20, on_error="skip", resume=True, progress=False
    )

    assert read_ids(root) == before + [i for i in range(N) if i not in BAD]
    assert manifest.split("train").unfinished is None
    assert manifest.split("train").rejected == len(BAD)
    rejects = [json.loads(line) for line in (root / "rejects-train.jsonl").read_text().splitlines()]
    assert [r["index"] for r in rejects] == sorted(BAD)
    if committed:
        assert manifest.split("test") == committed["test"]
    check_manifest_matches_files(root)  # no temp files or unlisted shards remain
