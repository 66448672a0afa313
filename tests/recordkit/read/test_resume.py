"""Exact resume (sdk/recordkit/read/_position.py): iter_records and load_dataset started
from a saved position yield exactly the records that were left, shuffled or not; a
tf.data iterator saved with tf.train.Checkpoint resumes too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _writer_support import SCHEMA, make_records

import recordkit as rk

N = 40


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("resume") / "data"
    rk.write_dataset(list(make_records(N)), SCHEMA, path, shard_records=7, progress=False)
    return path


def ids(records: object) -> list[int]:
    return [int(r["id"]) for r in records]  # type: ignore[attr-defined]


@pytest.mark.parametrize("workers", [None, (2, 1), (9, 4)])  # by shard, and by record
def test_iter_records_resumes_at_every_position(dataset: Path, workers: tuple[int, int] | None) -> None:
    share = {"num_workers": workers[0], "worker_index": workers[1]} if workers else {}
    everything = ids(rk.iter_records(dataset, fields="id", **share))
    for stop in range(len(everything) + 1):
        iterator = rk.iter_records(dataset, fields="id", **share)
        head = [int(next(iterator)["id"]) for _ in range(stop)]
        assert iterator.position == stop
        state = json.loads(json.dumps(iterator.state_dict()))  # it survives JSON
        assert head + ids(rk.iter_records(dataset, fields="id", start=state, **share)) == everything
        assert ids(rk.iter_records(dataset, fields="id", start=stop, **share)) == everything[stop:]


def test_a_state_from_other_options_is_refused(dataset: Path) -> None:
    iterator = rk.iter_records(dataset, fields="id", num_workers=2, worker_index=0)
    next(iterator)
    with pytest.raises(ValueError, match=r"worker=\[2, 0\] saved, \[2, 1\] now"):
        rk.iter_records(dataset, num_workers=2, worker_index=1, start=iterator.state_dict())
    with pytest.raises(ValueError, match="must be 0 or more"):
        rk.iter_records(dataset, start=-1)


@pytest.mark.slow
@pytest.mark.parametrize("shuffled", [False, True])
def test_load_dataset_resumes_with_exactly_the_remaining_records(dataset: Path, shuffled: bool) -> None:
    options = {"fields": ["id"], "batch_size": 4, "block_length": 3, "seed": 3}
    if shuffled:
        options.update(shuffle_files=True, shuffle_buffer=16)
    full = [int(x) for batch in rk.load_dataset(dataset, **options) for x in batch["id"].numpy()]
    assert sorted(full) == list(range(N))
    taken = 3 * 4  # three batches
    resumed = rk.load_dataset(dataset, start=taken, **options)
    assert int(resumed.cardinality()) == (N - taken) // 4
    assert [int(x) for batch in resumed for x in batch["id"].numpy()] == full[taken:]


def test_load_dataset_refuses_a_resume_it_cannot_make_exact(dataset: Path) -> None:
    with pytest.raises(ValueError, match="needs seed="):
        rk.load_dataset(dataset, shuffle_buffer=8, start=5)
    with pytest.raises(TypeError, match="record count"):
        rk.load_dataset(dataset, start={"position": 3})


@pytest.mark.slow
def test_a_tf_data_iterator_checkpoints_with_tf_train_checkpoint(dataset: Path, tmp_path: Path) -> None:
    import tensorflow as tf

    options = {"fields": ["id"], "batch_size": 4, "shuffle_files": True, "shuffle_buffer": 16, "seed": 5}
    full = [int(x) for batch in rk.load_dataset(dataset, **options) for x in batch["id"].numpy()]
    iterator = iter(rk.load_dataset(dataset, **options))
    head = [int(x) for _ in range(3) for x in next(iterator)["id"].numpy()]
    saved = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "ckpt"))
    restored = iter(rk.load_dataset(dataset, **options))
    tf.train.Checkpoint(iterator=restored).read(saved).assert_consumed()
    assert head + [int(x) for batch in restored for x in batch["id"].numpy()] == full
