"""The CLI on remote datasets: verify, inspect and codegen with --storage-option."""

from __future__ import annotations

import json

from _object_stores import REMOTE_SCHEMA, Bucket, cli_options, remote_records
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.storage import location


def test_verify_and_inspect_a_remote_dataset(bucket: Bucket) -> None:
    url = bucket.join("items")
    manifest = rk.write_dataset(
        remote_records(12), REMOTE_SCHEMA, url, shard_records=5, storage_options=bucket.storage_options
    )
    ok = CliRunner().invoke(main, ["verify", url, *cli_options(bucket)])
    assert ok.exit_code == 0, ok.output
    assert "verified 3 shards of 1 split: 12 records" in ok.output
    shown = CliRunner().invoke(main, ["inspect", url, "--json", *cli_options(bucket)])
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.output)
    assert summary["splits"]["train"]["records"] == 12
    assert summary["breakdown"]["records"] == 12
    # One flipped byte in a shard: verify names it and fails.
    shard = location(url, bucket.storage_options).join(manifest.split("train").shards[2].file)
    data = bytearray(shard.read_bytes())
    data[20] ^= 0x01
    shard.write_bytes(bytes(data))
    bad = CliRunner().invoke(main, ["verify", url, *cli_options(bucket)])
    assert bad.exit_code == 1
    assert "FAIL  train-00002.tfrecord" in bad.output
    assert "sha256" in bad.output


def test_a_bad_storage_option_is_a_usage_error(s3_bucket: Bucket) -> None:
    result = CliRunner().invoke(main, ["verify", s3_bucket.join("x"), "--storage-option", "novalue"])
    assert result.exit_code == 2
    assert "is not KEY=VALUE" in result.output


def test_schemas_and_codegen_from_a_bucket(s3_bucket: Bucket) -> None:
    url = s3_bucket.join("items")
    options = s3_bucket.storage_options
    rk.write_dataset(remote_records(3), REMOTE_SCHEMA, url, storage_options=options)
    schema_url = s3_bucket.join("schemas", "item.yaml")
    location(schema_url, options).write_bytes(REMOTE_SCHEMA.dumps().encode("utf-8"))
    assert rk.Schema.load(schema_url, storage_options=options) == REMOTE_SCHEMA
    # A schema file's URL as the reader's schema, and make_parser's input.
    assert len(list(rk.iter_records(url, schema=schema_url, storage_options=options))) == 3
    for source in (url, schema_url):
        result = CliRunner().invoke(main, ["codegen", source, *cli_options(s3_bucket)])
        assert result.exit_code == 0, result.output
        assert "def make_parser" in result.output
