"""The CLI on remote datasets, and a remote write resumed after its process was killed."""

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
from _object_stores import Bucket
from click.testing import CliRunner
from test_remote_datasets import Item, _records

import recordkit as rk
from recordkit.cli import main
from recordkit.storage import location

REPO = Path(__file__).resolve().parents[3]


def _cli_options(bucket: Bucket) -> list[str]:
    return [f"--storage-option={key}={value}" for key, value in bucket.storage_options.items()]


def test_verify_and_inspect_a_remote_dataset(bucket: Bucket) -> None:
    url = bucket.join("items")
    manifest = rk.write_dataset(
        _records(12), Item, url, shard_records=5, storage_options=bucket.storage_options
    )
    ok = CliRunner().invoke(main, ["verify", url, *_cli_options(bucket)])
    assert ok.exit_code == 0, ok.output
    assert "verified 3 shards of 1 split: 12 records" in ok.output
    shown = CliRunner().invoke(main, ["inspect", url, "--json", *_cli_options(bucket)])
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.output)
    assert summary["splits"]["train"]["records"] == 12
    assert summary["breakdown"]["records"] == 12
    # One flipped byte in a shard: verify names it and fails.
    shard = location(url, bucket.storage_options).join(manifest.split("train").shards[2].file)
    data = bytearray(shard.read_bytes())
    data[20] ^= 0x01
    shard.write_bytes(bytes(data))
    bad = CliRunner().invoke(main, ["verify", url, *_cli_options(bucket)])
    assert bad.exit_code == 1
    assert "FAIL  train-00002.tfrecord" in bad.output
    assert "sha256" in bad.output


def test_a_bad_storage_option_is_a_usage_error(s3_bucket: Bucket) -> None:
    result = CliRunner().invoke(main, ["verify", s3_bucket.join("x"), "--storage-option", "novalue"])
    assert result.exit_code == 2
    assert "is not KEY=VALUE" in result.output


_WRITER = textwrap.dedent(
    """
    import json, sys, time
    import recordkit as rk
    from test_remote_datasets import Item, _records

    url, options = sys.argv[1], json.loads(sys.argv[2])

    def slow():
        for i, record in enumerate(_records(60)):
            if i >= 25:
                time.sleep(0.2)  # the parent kills it while it writes these
            yield record

    rk.write_dataset(slow(), Item, url, shard_records=10, storage_options=options)
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
                str(REPO / "tests" / "recordkit" / "storage"),
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
    rk.write_dataset(_records(60), Item, url, shard_records=10, resume=True, storage_options=options)
    names = [r["name"] for r in rk.iter_records(url, storage_options=options, verify_sha256=True)]
    assert names == [f"item-{i}" for i in range(60)]  # every record exactly once, in order
    assert (
        CliRunner()
        .invoke(main, ["verify", url, *[f"--storage-option={k}={v}" for k, v in options.items()]])
        .exit_code
        == 0
    )


def test_schemas_and_codegen_from_a_bucket(s3_bucket: Bucket) -> None:
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    rk.write_dataset(_records(3), Item, url, storage_options=options)
    schema_url = s3_bucket.join("schemas", "item.yaml")
    location(schema_url, options).write_bytes(Item.dumps().encode("utf-8"))
    assert rk.Schema.load(schema_url, storage_options=options) == Item
    # A schema file's URL as the reader's schema, and make_parser's input.
    assert len(list(rk.iter_records(url, schema=schema_url, storage_options=options))) == 3
    for source in (url, schema_url):
        result = CliRunner().invoke(main, ["codegen", source, *_cli_options(s3_bucket)])
        assert result.exit_code == 0, result.output
        assert "def make_parser" in result.output
