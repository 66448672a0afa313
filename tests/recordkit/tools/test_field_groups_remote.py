"""Field groups on an object store (sdk/recordkit/tools/_field_groups.py over the storage
layer): added, read by every reader, replaced, removed and appended to in a bucket on moto's
S3 server and the GCS emulator, with ``dataset.json`` as the commit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _object_stores import REMOTE_SCHEMA, Bucket, cli_options, remote_records
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import ConcurrentWriteError
from recordkit.storage import location
from recordkit.write._commit import RemoteManifest  # private: a second writer's view of the manifest

pytestmark = pytest.mark.slow  # every test here talks to a local server

N = 9
EMBEDDING = rk.Schema(
    name="e", fields={"embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [4]})}
)


def _embeddings(offset: float = 0.0) -> np.ndarray:
    return np.arange(N * 4, dtype=np.float32).reshape(N, 4) + offset


def test_a_field_group_added_in_a_bucket_reads_in_every_reader(bucket: Bucket, tmp_path: Path) -> None:
    url = bucket.join("data")
    options = bucket.storage_options
    rk.write_dataset(
        remote_records(N), REMOTE_SCHEMA, url, shard_records=4, progress=False, storage_options=options
    )
    rk.add_fields(url, "train", EMBEDDING, _embeddings(), storage_options=options)
    labels = {r["name"]: r["label"] for r in remote_records(N)}
    rk.add_fields(
        url,
        "train",
        rk.Schema(name="d", fields={"double": rk.FieldSpec(codec="scalar")}),
        lambda r: 2 * labels[r["name"]],
        read_fields=["name"],
        storage_options=options,
    )
    got = list(rk.iter_records(url, storage_options=options))
    np.testing.assert_array_equal(np.stack([r["embedding"] for r in got]), _embeddings())
    assert [int(r["double"]) for r in got] == [2 * (i % 10) for i in range(N)]
    far = rk.RandomAccess(url, fields=["embedding", "name"], storage_options=options)
    np.testing.assert_array_equal(far[7]["embedding"], _embeddings()[7])
    assert [r["name"] for r in far[[8, 0]]] == ["item-8", "item-0"]
    pytest.importorskip("tensorflow")
    # fsspec: TensorFlow's own gs client cannot reach the emulator (see test_read_remote.py)
    batches = list(
        rk.load_dataset(url, fields=["embedding"], batch_size=N, storage_options=options, remote_io="fsspec")
    )
    np.testing.assert_array_equal(batches[0]["embedding"].numpy(), _embeddings())
    rk.add_fields(url, "train", EMBEDDING, _embeddings(100), replace=True, storage_options=options)
    assert float(next(rk.iter_records(url, storage_options=options))["embedding"][0]) == 100.0
    rk.remove_fields(url, "train", "embedding", storage_options=options)
    rk.remove_fields(url, "train", "double", storage_options=options)
    assert location(url, options).join("fields", "train").list() == []
    assert sorted(next(rk.iter_records(url, storage_options=options))) == ["label", "name", "values"]


def test_add_fields_stops_when_another_writer_replaced_the_manifest(bucket: Bucket) -> None:
    url = bucket.join("data")
    options = bucket.storage_options
    rk.write_dataset(
        remote_records(N), REMOTE_SCHEMA, url, shard_records=4, progress=False, storage_options=options
    )
    other = RemoteManifest(location(url, options))

    def values():  # another writer commits while this one writes its first shard
        for i, value in enumerate(_embeddings()):
            if i == 1:
                manifest = other.load()
                assert manifest is not None
                manifest.created = "2000-01-01T00:00:00+00:00"  # a change: the other writer's commit
                other.save(manifest)
            yield value

    with pytest.raises(ConcurrentWriteError, match="replaced by another writer"):
        rk.add_fields(url, "train", EMBEDDING, values(), storage_options=options)
    assert "embedding" not in next(rk.iter_records(url, storage_options=options))


def test_two_overlapping_add_fields_runs_in_a_bucket_never_write_over_each_others_files(
    s3_bucket: Bucket,
) -> None:
    url = s3_bucket.join("data")
    options = s3_bucket.storage_options
    rk.write_dataset(
        remote_records(N), REMOTE_SCHEMA, url, shard_records=4, progress=False, storage_options=options
    )
    mine, theirs = _embeddings(), _embeddings(100)

    def values():  # while this run writes its second shard, a second run resumes the group and commits
        for i, value in enumerate(mine):
            if i == 5:
                rk.add_fields(url, "train", EMBEDDING, theirs, storage_options=options)
            yield value

    with pytest.raises(ConcurrentWriteError, match="replaced by another writer"):
        rk.add_fields(url, "train", EMBEDDING, values(), storage_options=options)
    got = np.stack([r["embedding"] for r in rk.iter_records(url, storage_options=options)])
    np.testing.assert_array_equal(got, np.concatenate([mine[:4], theirs[4:]]))  # its first shard, then theirs
    verified = CliRunner().invoke(main, ["verify", url, *cli_options(s3_bucket)])
    assert verified.exit_code == 0, verified.output


def test_an_append_to_a_split_with_a_field_group_in_a_bucket_keeps_the_group_aligned(bucket: Bucket) -> None:
    url = bucket.join("data")
    options = bucket.storage_options
    rk.write_dataset(
        remote_records(N), REMOTE_SCHEMA, url, shard_records=4, progress=False, storage_options=options
    )
    rk.add_fields(url, "train", EMBEDDING, _embeddings(), storage_options=options)
    schema = rk.open(url, storage_options=options).schema
    more = [{**r, "embedding": np.full(4, -i, np.float32)} for i, r in enumerate(remote_records(6, N))]
    rk.write_dataset(more, url, schema, shard_records=4, append=True, progress=False, storage_options=options)
    split = rk.Manifest.load(url, options).split("train")
    assert split.field_groups is not None
    assert [s.records for s in split.field_groups["embedding"].shards] == [4, 4, 1, 4, 2]
    want = np.concatenate([_embeddings(), np.stack([r["embedding"] for r in more])])
    got = list(rk.iter_records(url, storage_options=options))
    assert [r["name"] for r in got] == [f"item-{i}" for i in range(N + 6)]
    np.testing.assert_array_equal(np.stack([r["embedding"] for r in got]), want)
    far = rk.RandomAccess(url, fields=["embedding", "name"], storage_options=options)
    np.testing.assert_array_equal(far[12]["embedding"], want[12])
    verified = CliRunner().invoke(main, ["verify", url, *cli_options(bucket)])
    assert verified.exit_code == 0, verified.output
    pytest.importorskip("tensorflow")
    batches = list(
        rk.load_dataset(url, fields=["embedding"], batch_size=20, storage_options=options, remote_io="fsspec")
    )
    np.testing.assert_array_equal(batches[0]["embedding"].numpy(), want)
