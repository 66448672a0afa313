"""A writing process killed mid-shard (SIGKILL), then the write resumed."""

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

    def records():
        for record in make_records(n, bad=bad):
            if record["id"] == kill_at:
                ready.touch()
                time.sleep(600)  # killed here, in the middle of a shard
            yield record

    rk.write_dataset(records(), SCHEMA, root, shard_records=20, on_error="skip", progress=False)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_write_resumes_with_every_record_once(tmp_path: Path) -> None:
    root = tmp_path / "data"
    ready = tmp_path / "ready"
    script = tmp_path / "write.py"
    script.write_text(SCRIPT)
    args = [str(Path(__file__).parent), str(root), str(ready), str(N), str(KILL_AT), ",".join(map(str, BAD))]
    process = subprocess.Popen([sys.executable, str(script), *args], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            if process.poll() is not None:
                pytest.fail(f"the writer exited early: {process.stderr.read().decode()}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                pytest.fail("the writer never reached the kill point")
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()  # type: ignore[union-attr]

    # Killed mid-shard: the partial shard exists only under its temporary name.
    names = {p.name for p in root.iterdir()}
    assert ".train-00006.tfrecord.tmp" in names
    assert "train-00006.tfrecord" not in names
    split = rk.Manifest.load(root).split("train")
    assert [s.file for s in split.shards] == [f"train-{i:05d}.tfrecord" for i in range(6)]
    assert split.unfinished is not None
    assert split.unfinished.consumed == 122  # 120 written + 2 rejected
    assert read_ids(root) == [i for i in range(122) if i not in BAD]
    for shard in split.shards:  # every listed shard is complete and valid
        assert (root / shard.file).stat().st_size == shard.bytes

    manifest = rk.write_dataset(
        make_records(N, bad=BAD), SCHEMA, root, shard_records=20, on_error="skip", resume=True, progress=False
    )

    assert read_ids(root) == [i for i in range(N) if i not in BAD]
    assert manifest.split("train").unfinished is None
    assert manifest.split("train").rejected == len(BAD)
    rejects = [json.loads(line) for line in (root / "rejects-train.jsonl").read_text().splitlines()]
    assert [r["index"] for r in rejects] == sorted(BAD)
    check_manifest_matches_files(root)  # no temp files or unlisted shards remain
