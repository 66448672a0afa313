"""The CLI on remote datasets (the local S3 server, and the GCS emulator where marked):
every command that reads or writes a dataset or a schema takes a URL with
``--storage-option``, and says on an ``s3://`` copy exactly what it says on the local
one (the dataset's name aside)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import sample_sources as fx
from _cli_dataset import SCHEMA_YAML
from _object_stores import REMOTE_SCHEMA, Bucket, cli_options, remote_records
from click.testing import CliRunner, Result

import recordkit as rk
from recordkit.cli import main
from recordkit.storage import Location, location

pytestmark = pytest.mark.slow  # each test talks to a server the session started


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def upload(folder: Path, url: str, options: dict[str, Any]) -> str:
    """Copy every file under ``folder`` to ``url`` (byte for byte); return ``url``."""
    target = location(url, options)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            target.join(*path.relative_to(folder).parts).write_bytes(path.read_bytes())
    return url


def same_output(local: Result, remote: Result, local_name: str, url: str) -> None:
    """Both commands succeeded, and printed the same once the dataset's name is replaced."""
    assert local.exit_code == 0, local.output
    assert remote.exit_code == 0, remote.output
    assert remote.output.replace(url, "<DATASET>") == local.output.replace(local_name, "<DATASET>")


@pytest.fixture
def copies(dataset: Path, s3_bucket: Bucket) -> tuple[Path, str]:
    """The CLI tests' small dataset (two splits), locally and as an s3:// copy."""
    return dataset, upload(dataset, s3_bucket.join("shapes"), s3_bucket.storage_options)


# -- reading commands ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["inspect"], ["inspect", "--json", "-s", "test"], ["verify"], ["stats"], ["stats", "-s", "test"]],
    ids=" ".join,
)
def test_a_command_says_the_same_of_the_s3_copy(
    copies: tuple[Path, str], s3_bucket: Bucket, command: list[str]
) -> None:
    local, url = copies
    same_output(run(*command, local), run(*command, url, *cli_options(s3_bucket)), str(local), url)


def test_stats_json_of_the_s3_copy(copies: tuple[Path, str], s3_bucket: Bucket, tmp_path: Path) -> None:
    local, url = copies
    run("stats", local, "--json", tmp_path / "local.json", "--plots", tmp_path / "local")
    result = run(
        "stats", url, *cli_options(s3_bucket), "--json", tmp_path / "s3.json", "--plots", tmp_path / "s3"
    )
    assert result.exit_code == 0, result.output
    mine, theirs = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("local", "s3"))
    assert theirs.pop("dataset") == url
    assert mine.pop("dataset") == str(local)
    assert theirs == mine
    plots = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert plots
    for name in plots:
        assert (tmp_path / "s3" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()


def test_show_draws_the_same_records(copies: tuple[Path, str], s3_bucket: Bucket, tmp_path: Path) -> None:
    local, url = copies
    mine = run("show", local, "-s", "train", "-n", "5", "-o", tmp_path / "local")
    theirs = run("show", url, *cli_options(s3_bucket), "-s", "train", "-n", "5", "-o", tmp_path / "s3")
    same_output(mine, theirs, str(tmp_path / "local"), str(tmp_path / "s3"))
    drawn = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert len(drawn) == 6  # five records and the contact sheet
    for name in drawn:
        assert (tmp_path / "s3" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    one = run("show", url, *cli_options(s3_bucket), "-s", "test", "--index", "2", "-o", tmp_path / "one")
    assert one.exit_code == 0, one.output
    assert (tmp_path / "one" / "record-00002.png").is_file()


def _unindexed(root: Path | Location) -> None:
    """Make the dataset at ``root`` one written before record indexes (format 1)."""
    where = location(root)
    raw = json.loads(where.join("dataset.json").read_bytes())
    raw["format"] = "recordkit.dataset/1"
    for split in raw["splits"].values():
        split.pop("picture_sizes", None)  # recorded from format 6 on
        for shard in split["shards"]:
            where.join(shard.pop("index")["file"]).remove()
    where.join("dataset.json").write_bytes(json.dumps(raw).encode())


def test_index_uploads_the_indexes_then_the_manifest(
    copies: tuple[Path, str], s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    local, url = copies
    options = s3_bucket.storage_options
    remote = location(url, options)
    expected = {name: remote.join(name).read_bytes() for name in remote.list() if name.endswith(".index")}
    assert len(expected) == 4
    _unindexed(local)
    _unindexed(remote)
    assert not [name for name in remote.list() if name.endswith(".index")]
    puts: list[str] = []
    write_bytes = Location.write_bytes

    def record_puts(self: Location, data: bytes, *, durable: bool = True) -> None:
        puts.append(self.name)
        write_bytes(self, data, durable=durable)

    monkeypatch.setattr(Location, "write_bytes", record_puts)
    same_output(run("index", local), run("index", url, *cli_options(s3_bucket)), str(local), url)
    assert sorted(puts[:-1]) == sorted(expected)  # every index uploaded ...
    assert puts[-1] == "dataset.json"  # ... and then the manifest, once
    for name, data in expected.items():
        assert remote.join(name).read_bytes() == data  # as the writer made them
    assert rk.Manifest.load(url, options) == rk.Manifest.load(local).model_copy(
        update={"created": rk.Manifest.load(url, options).created}
    )
    assert run("verify", url, *cli_options(s3_bucket)).exit_code == 0


def test_index_of_remote_tfrecord_files(copies: tuple[Path, str], s3_bucket: Bucket) -> None:
    local, _ = copies
    options = s3_bucket.storage_options
    foreign = location(s3_bucket.join("foreign"), options)
    for path in sorted(local.glob("train-*.tfrecord")):
        foreign.join(f"part-{path.name}").write_bytes(path.read_bytes())
    result = run("index", s3_bucket.join("foreign", "part-*.tfrecord"), *cli_options(s3_bucket))
    assert result.exit_code == 0, result.output
    assert result.output.count("wrote s3://") == 3
    for path in sorted(local.glob("train-*.tfrecord")):
        written = foreign.join(f"part-{path.name}.index").read_bytes()
        assert written == (local / f"{path.name}.index").read_bytes()
    none = run("index", s3_bucket.join("foreign", "nothing-*.tfrecord"), *cli_options(s3_bucket))
    assert none.exit_code == 1
    assert "no objects match" in none.output


# -- schemas ------------------------------------------------------------------------------


@pytest.fixture
def schema_copies(tmp_path: Path, s3_bucket: Bucket) -> tuple[Path, str]:
    local = tmp_path / "shapes.yaml"
    local.write_text(SCHEMA_YAML, encoding="utf-8")
    url = s3_bucket.join("schemas", "shapes.yaml")
    location(url, s3_bucket.storage_options).write_bytes(SCHEMA_YAML.encode())
    return local, url


@pytest.mark.parametrize("flags", [[], ["--json"], ["--only-schemas"]], ids=str)
def test_schema_check_of_a_remote_file(
    schema_copies: tuple[Path, str], s3_bucket: Bucket, flags: list[str]
) -> None:
    local, url = schema_copies
    same_output(
        run("schema", "check", *flags, local),
        run("schema", "check", *flags, url, *cli_options(s3_bucket)),
        str(local),
        url,
    )


def test_schema_check_names_a_bad_remote_file(s3_bucket: Bucket) -> None:
    url = s3_bucket.join("bad.yaml")
    location(url, s3_bucket.storage_options).write_bytes(b"name: x\nfields:\n  a: {codec: nope}\n")
    result = run("schema", "check", url, *cli_options(s3_bucket))
    assert result.exit_code == 1
    assert "bad.yaml" in result.output
    assert "nope" in result.output
    missing = run("schema", "check", s3_bucket.join("missing.yaml"), *cli_options(s3_bucket))
    assert missing.exit_code == 1
    assert "missing.yaml" in missing.output


def test_schema_diff_and_infer_read_remote_datasets_and_files(
    copies: tuple[Path, str], schema_copies: tuple[Path, str], s3_bucket: Bucket
) -> None:
    local, url = copies
    schema_file, schema_url = schema_copies
    options = cli_options(s3_bucket)
    same_output(
        run("schema", "diff", local, schema_file),
        run("schema", "diff", url, schema_url, *options),
        f"{local} -> {schema_file}",
        f"{url} -> {schema_url}",
    )
    for source in ("dataset.json", "train-00001.tfrecord"):
        same_output(
            run("schema", "infer", local / source),
            run("schema", "infer", f"{url}/{source}", *options),
            str(local),
            url,
        )
    same_output(
        run("schema", "infer", local / "train-*.tfrecord", "--max-records", "7"),
        run("schema", "infer", f"{url}/train-*.tfrecord", "--max-records", "7", *options),
        str(local),
        url,
    )
    refused = run("schema", "infer", "--source", "image_folder", s3_bucket.join("photos"), *options)
    assert refused.exit_code == 2
    assert "must be a local path" in refused.output


# -- writing commands ---------------------------------------------------------------------


def test_ingest_into_a_bucket(bucket: Bucket, tmp_path: Path) -> None:
    photos = fx.image_folder(tmp_path)
    local, url = tmp_path / "ingested", bucket.join("ingested")
    split = ["--split-ratio", "train=0.5,validation=0.5"]
    mine = run("ingest", "image_folder", photos, local, *split)
    theirs = run("ingest", "image_folder", photos, url, *split, *cli_options(bucket))
    same_output(mine, theirs, str(local), url)
    options = bucket.storage_options
    assert rk.Schema.load(f"{url}/schema.yaml", storage_options=options) == rk.Schema.load(
        local / "schema.yaml"
    )
    for split_name in ("train", "validation"):
        got = list(rk.iter_records(url, split_name, storage_options=options))
        want = list(rk.iter_records(local, split_name))
        assert [r["file"] for r in got] == [r["file"] for r in want]
    assert run("verify", url, *cli_options(bucket)).exit_code == 0


def test_ingest_overwrites_a_bucket_dataset(s3_bucket: Bucket, tmp_path: Path) -> None:
    photos = fx.image_folder(tmp_path)
    url, options = s3_bucket.join("flowers"), s3_bucket.storage_options
    assert run("ingest", "image_folder", photos, url, *cli_options(s3_bucket)).exit_code == 0
    again = run("ingest", "image_folder", photos, url, *cli_options(s3_bucket))
    assert again.exit_code == 1
    assert "already holds a dataset" in again.output
    shutil.rmtree(photos / "daisy")
    result = run("ingest", "image_folder", photos, url, "--overwrite", *cli_options(s3_bucket))
    assert result.exit_code == 0, result.output
    assert "ingested 4 records" in result.output
    assert len(list(rk.iter_records(url, storage_options=options))) == 4
    assert run("verify", url, *cli_options(s3_bucket)).exit_code == 0


def test_ingest_and_convert_refuse_remote_inputs_in_one_line(s3_bucket: Bucket, tmp_path: Path) -> None:
    for command in (
        ["ingest", "image_folder", s3_bucket.join("photos"), tmp_path / "out"],
        ["convert", s3_bucket.join("tfds", "mnist", "3.0.1"), tmp_path / "out"],
    ):
        result = run(*command, *cli_options(s3_bucket))
        assert result.exit_code == 2
        message = [line for line in result.output.splitlines() if line.startswith("Error:")]
        assert len(message) == 1
        assert "must be a local path" in message[0]
        assert "copy it to a local folder first" in message[0]
    assert not (tmp_path / "out").exists()


# -- from the first remote commands ---------------------------------------------------------


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
    assert f"FAIL  {manifest.split('train').shards[2].file}" in bad.output
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


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_a_failed_ingest_into_a_bucket_leaves_no_object_and_runs_again(
    s3_bucket: Bucket, tmp_path: Path, overwrite: list[str]
) -> None:
    table = tmp_path / "items.jsonl"
    good = [json.dumps({"text": f"item {i}", "label": i % 2}) for i in range(4)]
    table.write_text("\n".join([*good, '{"text": "cut']) + "\n", encoding="utf-8")
    url = s3_bucket.join("items")
    failed = run("ingest", "jsonl", table, url, *overwrite, *cli_options(s3_bucket))
    assert failed.exit_code == 1
    assert failed.output.startswith(f"Error: InputError: file {table}, line 5: not JSON")
    assert list(location(url, s3_bucket.storage_options).walk_files()) == []
    table.write_text("\n".join(good) + "\n", encoding="utf-8")
    again = run("ingest", "jsonl", table, url, *overwrite, *cli_options(s3_bucket))
    assert again.exit_code == 0, again.output
    items = rk.iter_records(url, storage_options=s3_bucket.storage_options)
    assert [r["text"] for r in items] == [f"item {i}" for i in range(4)]
