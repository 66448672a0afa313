"""A tf.data read of many shards (sdk/recordkit/read/_framed_read.py): built without
touching a shard, each shard checked (size, path, record headers) as the interleave opens
it, read by TensorFlow alone when intact; every record once, in the order and batches a
read of few shards gives, and its iterator still saves in a tf.train.Checkpoint."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf
from _writer_support import SCHEMA, make_records

import recordkit as rk
from recordkit.read._framed_read import DEFAULT_CYCLE, checked_as_opened
from recordkit.read._open import open_dataset
from recordkit.read._shard_stream import read_shards

SHARDS = 2 * DEFAULT_CYCLE + 3
PER_SHARD = 3
N = SHARDS * PER_SHARD


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("many") / "data"
    rk.write_dataset(make_records(N), SCHEMA, path, shard_records=PER_SHARD, progress=False, durable=False)
    return path


def ids(dataset: Any) -> list[int]:
    return [int(x) for batch in dataset for x in tf.reshape(batch["id"], [-1]).numpy()]


def test_a_read_of_more_shards_than_it_opens_at_once_checks_them_as_it_opens_them(many: Path) -> None:
    source = open_dataset(many, check_sizes=False)
    assert checked_as_opened(source, source.shards, "raise")
    assert not checked_as_opened(source, source.shards, "skip")
    assert not checked_as_opened(source, source.shards[:DEFAULT_CYCLE], "raise")
    sliced = open_dataset(many, "train[:50%]", check_sizes=False)
    assert not checked_as_opened(sliced, sliced.shards, "raise")


def test_building_the_read_touches_no_shard(many: Path, tmp_path: Path) -> None:
    """Every shard file gone: the pipeline still builds (nothing is stat'ed, resolved or
    walked), and reading it names the first shard it opens."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "dataset.json").write_bytes((many / "dataset.json").read_bytes())
    dataset = rk.open(empty).tf(batch_size=4, read_config=rk.ReadConfig(cycle_length=1))
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"recordkit ManifestError: shard train-0+\.tfrecord: listed in the manifest but missing",
    ):
        next(iter(dataset))


def test_every_record_comes_once_in_order_and_in_whole_batches(many: Path) -> None:
    dataset = rk.load_dataset(many, fields=["id"], batch_size=4)
    assert int(dataset.cardinality()) == -(-N // 4)
    assert [len(batch["id"]) for batch in dataset] == [4] * (N // 4) + [N % 4] * bool(N % 4)
    assert ids(dataset) == list(range(N))
    shuffled = rk.load_dataset(
        many, fields=["id"], batch_size=4, shuffle_files=True, shuffle_buffer=5, seed=3
    )
    assert sorted(ids(shuffled)) == list(range(N))


@pytest.mark.parametrize("one_by_one", [False, True])
def test_the_records_come_in_the_order_and_chunks_of_a_read_checked_when_built(
    many: Path, one_by_one: bool
) -> None:
    source = open_dataset(many)
    options: dict[str, Any] = {
        "block_length": 4,
        "on_corrupt": "raise",
        "report": None,
        "shuffle_files": False,
        "seed": None,
        "cycle_length": 3,
        "deterministic": True,
        "one_by_one": one_by_one,
    }
    built = [
        tf.reshape(el, [-1]).numpy().tolist() for el in read_shards(source, list(source.shards), **options)
    ]
    as_opened = read_shards(source, source.shards, **options, as_opened=True)
    opened = [tf.reshape(el, [-1]).numpy().tolist() for el in as_opened]
    assert opened == built
    assert len(built) == (N if one_by_one else -(-N // 4))


def test_workers_share_the_shards_and_read_every_record_once(many: Path) -> None:
    got = [ids(rk.open(many).tf(batch_size=5, rank=rank, world_size=3)) for rank in range(3)]
    assert sorted(x for share in got for x in share) == list(range(N))
    assert all(got)


def test_the_iterator_saves_in_a_tf_train_checkpoint(many: Path, tmp_path: Path) -> None:
    options: dict[str, Any] = {"fields": ["id"], "batch_size": 4, "shuffle_files": True, "seed": 5}
    full = ids(rk.load_dataset(many, **options))
    iterator = iter(rk.load_dataset(many, **options))
    head = [int(x) for _ in range(5) for x in next(iterator)["id"].numpy()]
    saved = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "ckpt"))
    restored = iter(rk.load_dataset(many, **options))
    tf.train.Checkpoint(iterator=restored).read(saved).assert_consumed()
    assert head + ids(restored) == full


def test_a_shard_symlinked_out_of_the_folder_is_refused_when_the_read_opens_it(
    many: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    os.makedirs(copy)
    for item in many.iterdir():
        os.link(item, copy / item.name)
    victim = sorted(copy.glob("train-*.tfrecord"))[SHARDS - 2]
    outside = tmp_path / "outside.tfrecord"
    outside.write_bytes(victim.read_bytes())
    victim.unlink()
    victim.symlink_to(outside)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"recordkit ManifestError: shard {victim.name}: resolves to .*outside the dataset folder",
    ):
        ids(rk.load_dataset(copy, fields=["id"], batch_size=8))
