"""recordkit.beam.WriteDataset on the DirectRunner: the same dataset as the local writer,
deterministic shards, rejects, metrics, and no manifest after a failure.

One pipeline runs on the multi-processing DirectRunner (two worker processes, slow to
start; shared with test_beam_picture_sizes.py: the ``worker_processes_write`` fixture);
the rest run in memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import apache_beam as beam
import numpy as np
import pytest
from _beam_support import (
    SCHEMA,
    WorkerProcessesWrite,
    canonical,
    keyed_splits,
    records,
    run,
    shard_hashes,
    write_beam,
    write_to,
)
from _object_stores import Bucket, cli_options, run_shard_names
from _writer_support import check_manifest_matches_files
from apache_beam.metrics.metric import MetricsFilter
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import DatasetError
from recordkit.format._tfrecord import (  # private: frames records by hand, to build or damage shards
    Compression,
    frame_record,
)
from recordkit.storage import Location, location
from recordkit.write import _beam as beam_writer
from recordkit.write._shard_file import run_token_of  # private: the token the sweeps read

pytestmark = pytest.mark.slow


def test_beam_with_one_and_two_workers_equals_the_local_writer(
    tmp_path: Path, worker_processes_write: WorkerProcessesWrite
) -> None:
    """One worker in this process; two worker processes (the pipeline this file shares
    with test_beam_picture_sizes.py, which writes these splits with the same options)."""
    splits = keyed_splits()
    local = tmp_path / "local"
    for name, items in splits.items():
        rk.write_dataset(items, SCHEMA, local, split=name, append=name != "train", progress=False)
    one, two = tmp_path / "one", worker_processes_write.keyed
    run(write_beam(one, splits, key="id", shard_bytes=4000))

    for name, items in splits.items():
        expected = canonical(local, name)
        assert {i: payload for i, (payload, _) in expected.items()} == {r["id"]: r["payload"] for r in items}
        assert canonical(one, name) == expected
        assert canonical(two, name) == expected
    # With a key, the shards are the same bytes whoever wrote them.
    assert shard_hashes(one) == shard_hashes(two)
    assert len(shard_hashes(one)["train"]) > 3
    check_manifest_matches_files(one)
    check_manifest_matches_files(two)
    # Identical in kind to a local write: schema, fingerprint, codecs, format.
    beam_manifest, local_manifest = rk.Manifest.load(two), rk.Manifest.load(local)
    assert beam_manifest.schema == local_manifest.schema
    assert beam_manifest.fingerprint == local_manifest.fingerprint
    assert beam_manifest.codecs == local_manifest.codecs
    # The same picture sizes per split (format 6), merged across workers.
    assert beam_manifest.format == local_manifest.format
    for name in splits:
        assert beam_manifest.splits[name].picture_sizes is not None
        assert beam_manifest.splits[name].picture_sizes == local_manifest.splits[name].picture_sizes
    # tf.data reads the Beam dataset as it reads the local one.
    batches = list(rk.load_dataset(two, "test", ["id", "payload"], batch_size=8).as_numpy_iterator())
    read = {int(i): p.decode() for b in batches for i, p in zip(b["id"], b["payload"], strict=True)}
    assert read == {i: payload for i, (payload, _) in canonical(local, "test").items()}
    # And the CLI accepts it.
    verified = CliRunner().invoke(main, ["verify", str(two)])
    assert verified.exit_code == 0, verified.output
    inspected = CliRunner().invoke(main, ["inspect", str(two)])
    assert inspected.exit_code == 0, inspected.output
    assert "train" in inspected.output
    assert "test" in inspected.output


def test_shard_count_follows_num_shards_or_shard_bytes(tmp_path: Path) -> None:
    items = records(120)
    run(write_beam(tmp_path / "n", {"train": items}, key="id", num_shards=3))
    assert len(rk.Manifest.load(tmp_path / "n").split("train").shards) == 3

    total = sum(len(frame_record(SCHEMA.bind().encoder().encode(r))) for r in items)
    run(write_beam(tmp_path / "b", {"train": items}, key="id", shard_bytes=total // 4))
    shards = rk.Manifest.load(tmp_path / "b").split("train").shards
    assert [s.file for s in shards] == [f"train-{i:05d}.tfrecord" for i in range(len(shards))]
    assert 3 <= len(shards) <= 5  # ceil(total / shard_bytes) = 5 hash buckets, none or some empty
    assert sum(s.records for s in shards) == 120


def test_compressed_shards_verify_and_read_back(tmp_path: Path) -> None:
    items = records(40)
    run(write_beam(tmp_path, {"train": items}, key="id", num_shards=2, compression="GZIP"))
    manifest = rk.Manifest.load(tmp_path)
    assert manifest.compression == "GZIP"
    assert all(s.file.endswith(".tfrecord.gz") for s in manifest.split("train").shards)
    check_manifest_matches_files(tmp_path)
    assert {i: p for i, (p, _) in canonical(tmp_path, "train").items()} == {
        r["id"]: r["payload"] for r in items
    }


def test_without_a_key_the_bytes_decide_the_shards(tmp_path: Path) -> None:
    items = records(60)
    run(write_beam(tmp_path / "a", {"train": items}, num_shards=4))
    run(write_beam(tmp_path / "b", {"train": list(reversed(items))}, num_shards=4))
    assert shard_hashes(tmp_path / "a") == shard_hashes(tmp_path / "b")
    assert sorted(canonical(tmp_path / "a", "train")) == list(range(60))


def test_a_failure_midway_leaves_no_manifest_and_a_rerun_writes_every_record_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = records(150)
    real_write = beam_writer.write_shard
    committed: list[str] = []

    def failing_write(target: Location, framed: Iterable[bytes], compression: Compression) -> rk.ShardInfo:
        if len(committed) == 2:  # two shards staged, then the third fails
            raise OSError("injected failure while writing a shard")
        committed.append(target.name)
        return real_write(target, framed, compression)

    monkeypatch.setattr(beam_writer, "write_shard", failing_write)
    with pytest.raises(Exception, match="injected failure"):
        run(write_beam(tmp_path, {"train": items}, key="id", num_shards=6))
    assert len(committed) == 2
    assert not (tmp_path / "dataset.json").exists()
    with pytest.raises(DatasetError, match="not a recordkit dataset"):
        rk.iter_records(tmp_path)

    assert (tmp_path / ".beam-staging").is_dir()  # what the failed run left
    monkeypatch.setattr(beam_writer, "write_shard", real_write)
    run(write_beam(tmp_path, {"train": items}, key="id", num_shards=6))
    ids = sorted(int(r["id"]) for r in rk.iter_records(tmp_path))
    assert ids == list(range(150))
    check_manifest_matches_files(tmp_path)  # and no staging debris left


def test_skipped_records_go_to_the_rejects_output_and_file(tmp_path: Path) -> None:
    items = records(50, bad=frozenset({3, 17}))
    out = tmp_path / "rejects-out"

    def body(p: beam.Pipeline) -> None:
        result = (
            p
            | beam.Create(items)
            | rk.beam.WriteDataset(SCHEMA, tmp_path / "data", key="id", on_error="skip", num_shards=2)
        )
        result["rejects"] | beam.Map(json.dumps) | beam.io.WriteToText(str(out), shard_name_template="")

    run(body)
    root = tmp_path / "data"
    written = sorted(json.loads(line)["key"] for line in out.read_text().splitlines())
    assert written == ["17", "3"]
    split = rk.Manifest.load(root).split("train")
    assert split.rejected == 2
    assert split.rejects_file == "rejects-train.jsonl"
    lines = [json.loads(line) for line in (root / "rejects-train.jsonl").read_text().splitlines()]
    assert [line["key"] for line in lines] == ["17", "3"]
    assert lines[0]["errors"][0]["field"] == "payload"
    assert "record key '17'" in lines[0]["message"]
    assert sorted(canonical(root, "train")) == sorted(set(range(50)) - {3, 17})
    check_manifest_matches_files(root)


def test_a_bad_record_fails_the_pipeline_naming_its_key_and_field(tmp_path: Path) -> None:
    items = records(20, bad=frozenset({11}))
    with pytest.raises(Exception, match=r"record key '11'.*field 'payload'|field 'payload'.*record key '11'"):
        run(write_beam(tmp_path, {"train": items}, key="id", num_shards=2))
    assert not (tmp_path / "dataset.json").exists()


def test_records_and_field_bytes_are_beam_metrics(tmp_path: Path) -> None:
    items = records(30, bad=frozenset({4}))
    result = run(write_beam(tmp_path, {"train": items}, key="id", on_error="skip", num_shards=2))
    counters = {
        r.key.metric.name: r.committed
        for r in result.metrics().query(MetricsFilter().with_namespace("recordkit"))["counters"]
    }
    good = [r for r in items if r["id"] != 4]
    encoder = SCHEMA.bind().encoder()
    breakdowns = [rk.byte_breakdown(SCHEMA, encoder.encode(r)) for r in good]
    assert counters["train/records"] == 29
    assert counters["train/rejected"] == 1
    assert counters["train/shards"] == 2
    for field in SCHEMA.fields:
        assert counters[f"train/bytes/{field}"] == sum(b[field] for b in breakdowns)


def test_an_empty_split_is_listed_with_no_shards(tmp_path: Path) -> None:
    run(write_beam(tmp_path, {"train": records(5), "extra": []}, key="id", num_shards=2))
    manifest = rk.Manifest.load(tmp_path)
    assert manifest.split("extra").shards == []
    assert manifest.split("train").num_records == 5
    assert list(rk.iter_records(tmp_path, "extra")) == []
    check_manifest_matches_files(tmp_path)


def test_an_existing_dataset_is_refused(tmp_path: Path) -> None:
    rk.write_dataset(records(3), SCHEMA, tmp_path, progress=False)
    with pytest.raises(DatasetError, match="already holds a dataset"):
        run(write_beam(tmp_path, {"train": records(3)}))


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="on_error"):
        rk.beam.WriteDataset(SCHEMA, "x", on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_shards"):
        rk.beam.WriteDataset(SCHEMA, "x", num_shards=0)
    with pytest.raises(ValueError, match="invalid split name"):
        rk.beam.WriteDataset(SCHEMA, "x", split="../up")


def test_without_beam_the_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['apache_beam'] = None\n"
        "import recordkit as rk\n"
        "try:\n    rk.beam\nexcept ImportError as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("MissingExtraError")
    assert "pip install 'recordkit[beam]'" in out


def test_a_key_that_cannot_be_read_fails_naming_the_split(tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"split 'train'.*cannot get the record's key: KeyError"):
        run(write_beam(tmp_path, {"train": records(3)}, key="name", num_shards=1))


def test_the_pipeline_writes_into_an_s3_bucket(tmp_path: Path, s3_bucket: Bucket) -> None:
    """Into moto's S3 server on 127.0.0.1: the same shards as into a local folder, a
    manifest written last, no staging objects left; the bucket's copy reads and verifies."""
    import s3fs

    splits = {"train": records(60), "test": records(10, start=500)}
    url = s3_bucket.join("pets")
    run(write_to(url, splits, s3_bucket.storage_options, num_shards=3))
    run(write_beam(tmp_path / "local", splits, key="id", num_shards=3))

    fs = s3fs.S3FileSystem(**s3_bucket.storage_options)
    stored = sorted(name.rsplit("/", 1)[-1] for name in fs.find(url))
    local = sorted(p.name for p in (tmp_path / "local").iterdir() if p.name != ".recordkit.lock")
    # Shards, indexes, dataset.json; no staging debris. (In a bucket the shards' names
    # carry the run's token: another run's shard can never land on them.)
    assert run_shard_names(stored) == local
    # The token is one the sweeps and resumes read (run_token_of), the same for the run's
    # shards, indexes and rejects files of every split, and not another run's.
    files = [
        shard.file
        for info in rk.Manifest.load(url, s3_bucket.storage_options).splits.values()
        for shard in info.shards
    ]
    tokens = {run_token_of(name) for name in files}
    assert len(tokens) == 1
    assert None not in tokens
    run(write_to(s3_bucket.join("again"), splits, s3_bucket.storage_options, num_shards=3))
    again = rk.Manifest.load(s3_bucket.join("again"), s3_bucket.storage_options).split("train").shards
    assert {run_token_of(shard.file) for shard in again}.isdisjoint(tokens)
    copy = tmp_path / "copy"
    fs.get(url + "/", str(copy), recursive=True)
    check_manifest_matches_files(copy, lock=False)
    assert shard_hashes(copy) == shard_hashes(tmp_path / "local")
    for name in splits:
        assert canonical(copy, name) == canonical(tmp_path / "local", name)
    verified = CliRunner().invoke(main, ["verify", str(copy)])
    assert verified.exit_code == 0, verified.output
    # The readers read it in the bucket too.
    options = s3_bucket.storage_options
    streamed = {
        int(r["id"]): str(r["payload"]) for r in rk.iter_records(url, "train", storage_options=options)
    }
    assert streamed == {r["id"]: r["payload"] for r in splits["train"]}


def test_a_commit_into_a_bucket_never_deletes_a_shard_another_writer_has_not_listed_yet(
    s3_bucket: Bucket,
) -> None:
    """With no lock on an object store, an unlisted shard in the split may be another
    writer's, uploaded and about to be listed: the Beam commit leaves it alone (it used to
    delete every unlisted shard of the split before its conditional save)."""
    import s3fs

    url = s3_bucket.join("pets")
    fs = s3fs.S3FileSystem(**s3_bucket.storage_options)
    theirs = f"{url}/train-00000.0123abcd.tfrecord"
    fs.pipe(theirs, b"another writer's shard, not listed yet")
    run(write_to(url, {"train": records(20)}, s3_bucket.storage_options, num_shards=2))
    assert fs.cat(theirs) == b"another writer's shard, not listed yet"
    listed = rk.open(url, "train", storage_options=s3_bucket.storage_options)
    assert sorted(int(r["id"]) for r in listed.records()) == [r["id"] for r in records(20)]


def test_the_pipeline_writes_into_a_gcs_bucket(tmp_path: Path, gcs_bucket: Bucket) -> None:
    """Into the GCS emulator on 127.0.0.1: the dataset verifies in the bucket and every
    reader returns the records written (the emulator's endpoint in the storage options)."""
    splits = {"train": records(45), "test": records(12, start=700)}
    url = gcs_bucket.join("pets")
    options = gcs_bucket.storage_options
    run(write_to(url, splits, options, num_shards=3))

    manifest = rk.Manifest.load(url, storage_options=options)
    assert {name: split.num_records for name, split in manifest.splits.items()} == {"train": 45, "test": 12}
    files = [s.file for s in manifest.split("train").shards]
    assert run_shard_names(files) == [f"train-{i:05d}.tfrecord" for i in range(3)]
    names = location(url, options).list()
    assert not any(name.startswith(".") for name in names)  # no staging debris
    verified = CliRunner().invoke(main, ["verify", url, *cli_options(gcs_bucket)])
    assert verified.exit_code == 0, verified.output
    for name, items in splits.items():
        read = {
            int(r["id"]): (str(r["payload"]), np.asarray(r["image"]).shape)
            for r in rk.iter_records(url, name, storage_options=options)
        }
        assert read == {r["id"]: (r["payload"], (6 + r["id"] % 5, 7, 3)) for r in items}
    # tf.data over gs://, streamed through fsspec (TensorFlow's GCS client cannot reach the emulator).
    batches = rk.load_dataset(
        url, "test", ["id", "payload"], batch_size=5, storage_options=options, remote_io="fsspec"
    )
    read_tf = {
        int(i): p.decode()
        for b in batches.as_numpy_iterator()
        for i, p in zip(b["id"], b["payload"], strict=True)
    }
    assert read_tf == {r["id"]: r["payload"] for r in splits["test"]}


def test_a_schema_file_in_the_bucket_is_read_with_the_storage_options(gcs_bucket: Bucket) -> None:
    """The schema given as a gs:// URL beside the dataset: read with the pipeline's
    storage options (the URL kept whole, not turned into a local path ``gs:/...``)."""
    url, options = gcs_bucket.join("pets"), gcs_bucket.storage_options
    schema_url = gcs_bucket.join("schemas", "pets.yaml")
    location(schema_url, options).write_bytes(SCHEMA.dumps().encode("utf-8"))

    def body(p: beam.Pipeline) -> None:
        created = p | beam.Create(records(6))
        created | rk.beam.WriteDataset(url, schema_url, key="id", num_shards=2, storage_options=options)

    run(body)
    assert rk.Manifest.load(url, storage_options=options).schema == SCHEMA
    read = sorted(int(r["id"]) for r in rk.iter_records(url, storage_options=options))
    assert read == list(range(6))


def test_the_path_comes_first_and_the_older_order_still_works(tmp_path: Path) -> None:
    """WriteDataset(path, schema), as every writer takes them; the older
    WriteDataset(schema, path) writes the same dataset; a schema file named first is
    recognised by its suffix; two things neither of which is a path are refused."""
    schema_file = tmp_path / "pets.yaml"
    SCHEMA.dump(schema_file)
    forms = {
        "new": lambda root: rk.beam.WriteDataset(root, SCHEMA, key="id", num_shards=2),
        "old": lambda root: rk.beam.WriteDataset(SCHEMA, root, key="id", num_shards=2),
        "old-file": lambda root: rk.beam.WriteDataset(str(schema_file), str(root), key="id", num_shards=2),
    }
    for name, make in forms.items():
        root = tmp_path / name

        def body(p: beam.Pipeline, make: Any = make, root: Path = root) -> None:
            p | beam.Create(records(8)) | make(root)

        run(body)
    new = shard_hashes(tmp_path / "new")
    assert shard_hashes(tmp_path / "old") == shard_hashes(tmp_path / "old-file") == new
    with pytest.raises(TypeError, match=r"takes the dataset's path .* then its schema"):
        rk.beam.WriteDataset(SCHEMA, SCHEMA)  # type: ignore[arg-type]
