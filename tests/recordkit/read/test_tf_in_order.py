"""The in-order tf.data epoch streamed from its shards by ``TFRecordDataset``
(sdk/recordkit/read/_tf_in_order.py) gives the batches the index-driven generator gives,
for any rank count, rank, resume point and ``drop_remainder``; its states resume on the
generator's path and back; a record of a wrong value count is named alike on both (damaged
records: tests/faults/test_tf_epoch_faults.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _writer_support import tensor_one_value_short

import recordkit as rk
from recordkit.read import _tf_in_order
from recordkit.read._tf_epochs import TfEpochs
from recordkit.read._tf_in_order import record_runs, streams_in_order

tf = pytest.importorskip("tensorflow")

N = 61
SCHEMA = rk.Schema(
    name="names",
    fields={
        "name": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 7}),
    },
)
PICTURES = rk.Schema(
    name="pictures",
    fields={
        "name": rk.FieldSpec(codec="text"),
        "image": rk.FieldSpec(codec="image", options={"format": "png", "channels": 3}),
    },
)


def write(path: Path, count: int = N) -> rk.Dataset:
    records = [{"name": f"n{i}", "label": i % 7} for i in range(count)]
    rk.write_dataset(records, SCHEMA, path, shard_records=7, progress=False)
    return rk.open(path, "train")


@pytest.fixture(scope="module")
def handle(tmp_path_factory: pytest.TempPathFactory) -> rk.Dataset:
    return write(tmp_path_factory.mktemp("tf-in-order") / "names")


@pytest.fixture(scope="module")
def pictures(tmp_path_factory: pytest.TempPathFactory) -> rk.Dataset:
    rng = np.random.default_rng(8)
    records = [
        {"name": f"p{i}", "image": rng.integers(0, 256, (20 + i % 5, 24 - i % 3, 3), dtype=np.uint8)}
        for i in range(23)
    ]
    path = tmp_path_factory.mktemp("tf-in-order-pictures") / "pictures"
    rk.write_dataset(records, PICTURES, path, shard_records=5, progress=False)
    return rk.open(path, "train")


@pytest.fixture
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Records of any size streamed (these tests' records are small)."""
    monkeypatch.setattr(_tf_in_order, "STREAM_FROM_BYTES", 0)


def elements(epochs: TfEpochs, *, streamed: bool) -> list[dict[str, np.ndarray]]:
    """Every element of ``epochs``' dataset, read by one path or the other, as numpy."""
    epochs._streams = streamed
    built = epochs.dataset()
    return [{key: np.asarray(value) for key, value in element.items()} for element in built]


def assert_same(streamed: list[dict[str, np.ndarray]], fetched: list[dict[str, np.ndarray]]) -> None:
    assert len(streamed) == len(fetched)
    for one, other in zip(streamed, fetched, strict=True):
        assert one.keys() == other.keys()
        for key in one:
            assert one[key].dtype == other[key].dtype, key
            np.testing.assert_array_equal(one[key], other[key], err_msg=key)


def states(handle: rk.Dataset, batch: int | None) -> list[Any]:
    """Resume points: none, a count of records, states after some global batches of 4
    ranks, and a state of 2 ranks x 3 DataLoader workers (an irregular remainder)."""
    size = batch or 1
    made: list[Any] = [None, 10]
    four = handle.tf_epochs(batch, world_size=4)
    made += [four.state_after(k) for k in (1, 3)]
    made.append(handle.torch_iterable(world_size=2, batch_size=size).loader_state(2, size, 3))
    return made


@pytest.mark.parametrize(("batch", "drop_remainder"), [(None, False), (4, False), (4, True), (5, True)])
def test_the_streamed_read_gives_the_generator_s_batches_on_every_rank_and_resume_point(
    handle: rk.Dataset, batch: int | None, drop_remainder: bool, any_size: None
) -> None:
    for start in states(handle, batch):
        for world in (1, 3):
            for rank in range(world):
                epochs = handle.tf_epochs(
                    batch, rank=rank, world_size=world, start=start, drop_remainder=drop_remainder
                )
                runs = record_runs(epochs.stream.worker_pairs(0, 1))
                fetched = elements(epochs, streamed=False)
                if world == 1 and start is None:
                    assert streams_in_order(epochs.stream, runs)
                assert_same(elements(epochs, streamed=True), fetched)
                assert len(fetched) == len(epochs)


def global_batches(
    handle: rk.Dataset, world: int, *, streamed: bool, start: Any = None, stop: int | None = None
) -> tuple[list[str], Any]:
    """The names ``world`` ranks read on one path, in global batches (step by step),
    stopped after ``stop`` batches each, and the state there."""
    parts = []
    state = None
    for rank in range(world):
        epochs = handle.tf_epochs(4, rank=rank, world_size=world, start=start)
        parts.append(
            [[str(n.decode()) for n in b["name"]] for b in elements(epochs, streamed=streamed)][:stop]
        )
        if stop is not None:
            state = epochs.state_after(stop)
    steps = max(map(len, parts))
    return [name for step in range(steps) for part in parts if step < len(part) for name in part[step]], state


def test_a_state_saved_on_one_path_resumes_on_the_other(handle: rk.Dataset) -> None:
    whole, _ = global_batches(handle, 1, streamed=False)
    assert whole == [f"n{i}" for i in range(N)]
    for first, then in ((True, False), (False, True)):
        head, state = global_batches(handle, 2, streamed=first, stop=3)
        assert state["position"] == len(head) == 2 * 3 * 4
        tail, _ = global_batches(handle, 3, streamed=then, start=state)
        assert head + tail == whole


def test_random_crops_are_keyed_by_each_record_s_place_on_both_paths(pictures: rk.Dataset) -> None:
    geometry = rk.ImageGeometry(size=(8, 8), fit="random_resized_crop", flip=0.5, seed=11)
    for world, batch in ((1, 3), (2, 3), (2, None)):
        for rank in range(world):
            epochs = pictures.tf_epochs(batch, rank=rank, world_size=world, geometry=geometry)
            assert_same(elements(epochs, streamed=True), elements(epochs, streamed=False))


def test_the_in_order_read_streams_only_a_split_s_plain_shards_of_large_records(
    handle: rk.Dataset, pictures: rk.Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    located = handle.tf_epochs(4).stream.worker_pairs(0, 1)
    runs = record_runs(located)
    assert runs.tolist() == [[s, 0, 7] for s in range(8)] + [[8, 0, 5]]
    assert not streams_in_order(handle.tf_epochs(4).stream, runs)  # records of 30 bytes
    stream = pictures.tf_epochs(4).stream
    first = stream.records.shards.shards[0]
    assert first.bytes is not None
    monkeypatch.setattr(_tf_in_order, "STREAM_FROM_BYTES", first.bytes // first.records)
    assert streams_in_order(stream, record_runs(stream.worker_pairs(0, 1)))
    monkeypatch.setattr(_tf_in_order, "STREAM_FROM_BYTES", 0)
    assert streams_in_order(handle.tf_epochs(4).stream, runs)
    # Rank 0 of 2 in batches of 3: runs of 2 records or more on average that pass over
    # more records (36) than they read (31).
    rank_zero = handle.tf_epochs(3, rank=0, world_size=2).stream
    runs = record_runs(rank_zero.worker_pairs(0, 1))
    assert (int(runs[:, 1].sum()), int(runs[:, 2].sum()), len(runs)) == (36, 31, 15)
    assert not streams_in_order(rank_zero, runs)
    resumed = handle.tf_epochs(4, start=10).stream  # one run from record 3, whole shards after
    assert streams_in_order(resumed, record_runs(resumed.worker_pairs(0, 1)))
    shuffled = handle.tf_epochs(4, shuffle=True, seed=1).stream
    assert not streams_in_order(shuffled, record_runs(shuffled.worker_pairs(0, 1)))
    scattered = np.array([[0, 1], [0, 3], [1, 0]])
    assert record_runs(scattered).tolist() == [[0, 1, 1], [0, 3, 1], [1, 0, 1]]
    assert not streams_in_order(handle.tf_epochs(4).stream, record_runs(scattered))  # runs of one
    assert record_runs(np.zeros((0, 2), np.int64)).shape == (0, 3)


@pytest.mark.parametrize("select", [None, ["embedding"]])
@pytest.mark.parametrize("batch", [4, None])
def test_a_record_of_a_wrong_value_count_is_named_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, select: list[str] | None, batch: int | None
) -> None:
    schema = rk.Schema(
        name="s",
        fields={
            "image": rk.FieldSpec(codec="image"),
            "embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [16]}),
        },
    )
    records = [
        {"image": np.full((8 + i, 9, 3), i, np.uint8), "embedding": np.full(16, i, np.float32)}
        for i in range(10)
    ]
    with tensor_one_value_short(monkeypatch, 7):
        rk.write_dataset(records, tmp_path / "short", schema, shard_records=5, progress=False)
    handle = rk.open(tmp_path / "short")
    if select is not None:
        handle = handle.select(select)
    for streamed in (True, False):
        epochs = handle.tf_epochs(batch, layout=rk.Layout(image_size=(8, 8)) if select is None else None)
        epochs._streams = streamed
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            list(epochs.dataset())
        message = str(raised.value).replace("\\'", "'")
        where = r"DecodeError: shard train-00001\.tfrecord, offset \d+, record 7, field 'embedding'"
        assert re.search(where, message), message
        assert "holds 60 bytes" in message  # 15 float32 values stored as bytes
