"""The writer on object stores (the local S3 server and the GCS emulator): shards
streamed under their final names, the manifest as the commit, append and resume, and a
write resumed after its process was killed."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from _object_stores import REMOTE_SCHEMA, Bucket, remote_records, run_shard_names
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.storage import location

REPO = Path(__file__).resolve().parents[3]


def _names(rows: Any) -> list[str]:
    return [row["name"] for row in rows]


def test_write_then_read_back(bucket: Bucket, tmp_path: Path) -> None:
    url = bucket.join("items")
    options = bucket.storage_options
    manifest = rk.write_dataset(
        remote_records(50), REMOTE_SCHEMA, url, shard_records=20, storage_options=options
    )
    assert [s.records for s in manifest.split("train").shards] == [20, 20, 10]
    root = location(url, options)
    names = root.list()
    assert "dataset.json" in names
    assert not [n for n in names if n.startswith(".")]  # no temp names, no lock file remotely
    listed = json.loads(root.join("dataset.json").read_bytes())
    # Named with the run's token (a late upload of another run can never replace them).
    files = [s["file"] for s in listed["splits"]["train"]["shards"]]
    assert len({file.split(".")[1] for file in files}) == 1
    assert run_shard_names(files) == [
        "train-00000.tfrecord",
        "train-00001.tfrecord",
        "train-00002.tfrecord",
    ]
    # sha256 computed as the shard streamed equals the stored object's
    for shard in manifest.split("train").shards:
        data = root.join(shard.file).read_bytes()
        assert hashlib.sha256(data).hexdigest() == shard.sha256
    assert _names(rk.iter_records(url, storage_options=options, verify_sha256=True)) == [
        f"item-{i}" for i in range(50)
    ]


def test_append_and_resume(bucket: Bucket) -> None:
    url = bucket.join("items")
    options = bucket.storage_options
    rk.write_dataset(remote_records(10), REMOTE_SCHEMA, url, shard_records=4, storage_options=options)
    rk.write_dataset(
        remote_records(5, 10), REMOTE_SCHEMA, url, shard_records=4, append=True, storage_options=options
    )
    assert _names(rk.iter_records(url, storage_options=options)) == [f"item-{i}" for i in range(15)]

    def failing() -> Any:
        yield from remote_records(9, 100)
        raise RuntimeError("the input broke")

    with pytest.raises(RuntimeError, match="input broke"):
        rk.write_dataset(
            failing(), REMOTE_SCHEMA, url, "test", shard_records=4, append=True, storage_options=options
        )
    # Complete shards stay listed: the unfinished split reads its 8 records.
    assert len(list(rk.iter_records(url, "test", storage_options=options))) == 8
    rk.write_dataset(
        remote_records(12, 100),
        REMOTE_SCHEMA,
        url,
        "test",
        shard_records=4,
        resume=True,
        storage_options=options,
    )
    assert _names(rk.iter_records(url, "test", storage_options=options)) == [
        f"item-{i}" for i in range(100, 112)
    ]


_WRITER = textwrap.dedent(
    """
    import json, sys, time
    import recordkit as rk
    from _object_stores import REMOTE_SCHEMA, remote_records

    url, options = sys.argv[1], json.loads(sys.argv[2])

    def slow():
        for i, record in enumerate(remote_records(60)):
            if i >= 25:
                time.sleep(0.2)  # the parent kills it while it writes these
            yield record

    rk.write_dataset(slow(), REMOTE_SCHEMA, url, shard_records=10, storage_options=options)
    """
)


@pytest.mark.slow
def test_resume_after_sigkill(s3_bucket: Bucket, tmp_path: Path) -> None:
    url = s3_bucket.join("killed")
    options = s3_bucket.storage_options
    script = tmp_path / "writer.py"
    script.write_text(_WRITER, encoding="utf-8")
    env = {
        **os.environ,
        **s3_bucket.env,
        "PYTHONPATH": os.pathsep.join(
            [
                str(REPO / "sdk"),
                str(REPO / "plugins"),
                str(REPO / "tests" / "recordkit"),
            ]
        ),
    }
    process = subprocess.Popen([sys.executable, str(script), url, json.dumps(options)], env=env)
    manifest_object = location(url, options).join("dataset.json")
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if manifest_object.exists():
                listed = json.loads(manifest_object.read_bytes())["splits"].get("train", {}).get("shards", [])
                if len(listed) >= 2:
                    break
            assert process.poll() is None, "the writer ended before it was killed"
            time.sleep(0.1)
        else:
            pytest.fail("the writer listed no shards in time")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    # Killed: the manifest lists complete shards only, and marks the write unfinished.
    partial = rk.Manifest.load(url, options)
    info = partial.split("train")
    assert info.unfinished is not None
    assert 20 <= info.num_records < 60
    assert len(list(rk.iter_records(url, storage_options=options))) == info.num_records
    rk.write_dataset(
        remote_records(60), REMOTE_SCHEMA, url, shard_records=10, resume=True, storage_options=options
    )
    names = [r["name"] for r in rk.iter_records(url, storage_options=options, verify_sha256=True)]
    assert names == [f"item-{i}" for i in range(60)]  # every record exactly once, in order
    assert (
        CliRunner()
        .invoke(main, ["verify", url, *[f"--storage-option={k}={v}" for k, v in options.items()]])
        .exit_code
        == 0
    )
