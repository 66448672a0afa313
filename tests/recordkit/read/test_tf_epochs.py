"""The canonical epochs through real tf.data (sdk/recordkit/read/_tf_epochs.py): ranks read
an epoch, stop after some global batches, and resume with another number of ranks,
every record once, in the order the PyTorch, Grain and numpy readers share (also for
any stop point and rank counts Hypothesis draws)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recordkit as rk
from recordkit.read import _tf_epochs

tf = pytest.importorskip("tensorflow")

N = 61
BATCH = 3
SCHEMA = rk.Schema(
    name="names",
    fields={
        "name": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 7}),
    },
)
OPTIONS: dict[str, Any] = {"shuffle": True, "seed": 5, "window": 6}


def write(path: Path, prefix: str, count: int) -> rk.Dataset:
    records = [{"name": f"{prefix}{i}", "label": i % 7} for i in range(count)]
    rk.write_dataset(records, SCHEMA, path, shard_records=7, progress=False)
    return rk.open(path, "train")


@pytest.fixture(scope="module")
def handle(tmp_path_factory: pytest.TempPathFactory) -> rk.Dataset:
    return write(tmp_path_factory.mktemp("tf-epochs") / "names", "n", N)


Reader = rk.Dataset | rk.Mixture


def read(
    source: Reader, world: int, *, start: Any = None, stop: int | None = None
) -> tuple[list[list[str]], dict[str, Any] | None]:
    """``world`` ranks each reading their ``tf_epochs(...).dataset()`` batches, stopped
    after ``stop`` (None: the epoch); the global batches in step order and the state
    every rank computes at the stop (checked the same, and through JSON)."""
    per_rank: list[list[list[str]]] = []
    states = []
    for rank in range(world):
        epochs = source.tf_epochs(BATCH, **OPTIONS, rank=rank, world_size=world, start=start)
        batches: list[list[str]] = []
        for batch in epochs.dataset():
            if stop is not None and len(batches) == stop:
                break
            batches.append([name.decode() for name in batch["name"].numpy()])
        assert stop is not None or len(batches) == len(epochs)
        per_rank.append(batches)
        if stop is not None:
            states.append(epochs.state_after(stop))
    assert all(state == states[0] for state in states)
    steps = max(len(b) for b in per_rank)
    in_steps = [b[step] for step in range(steps) for b in per_rank if step < len(b)]
    return in_steps, (json.loads(json.dumps(states[0])) if states else None)


def names(batches: list[list[str]]) -> list[str]:
    return [name for batch in batches for name in batch]


def canonical(source: Reader, epoch: int = 0) -> list[str]:
    stream = source.epoch_stream(**OPTIONS)
    stream.set_epoch(epoch)
    return [record["name"] for record in stream]


# (4 ranks' stop, 2 ranks' stop): after 5 global batches only rank 0's short batch is left,
# which 2 ranks cannot both step through: the 1 rank reads it.
@pytest.mark.parametrize(("stop", "then"), [(1, 2), (4, 2), (5, 0)])
def test_four_tf_data_ranks_stopped_resume_with_two_ranks_then_one_each_record_once(
    handle: rk.Dataset, stop: int, then: int
) -> None:
    whole = canonical(handle)
    everyone, _ = read(handle, 4)
    assert names(everyone) == whole  # the global batches follow the canonical order
    before, state = read(handle, 4, stop=stop)
    assert state is not None
    assert state["position"] == len(names(before))
    middle, second = read(handle, 2, start=state, stop=then) if then else ([], state)
    rest, _ = read(handle, 1, start=second)
    assert names(before) + names(middle) + names(rest) == whole
    assert Counter(names(before) + names(middle) + names(rest)) == Counter(f"n{i}" for i in range(N))


@settings(max_examples=6, deadline=None)  # each example builds a tf.data graph per rank
@given(world=st.integers(1, 4), then=st.integers(1, 3), data=st.data())
def test_any_stop_point_resumed_on_any_rank_count_reads_every_remaining_record_once(
    handle: rk.Dataset, world: int, then: int, data: st.DataObject
) -> None:
    whole = canonical(handle)
    shortest = min(len(handle.tf_epochs(BATCH, **OPTIONS, rank=r, world_size=world)) for r in range(world))
    stop = data.draw(st.integers(0, shortest), label="global batches before the stop")
    before, state = read(handle, world, stop=stop)
    assert state is not None
    rest, _ = read(handle, then, start=state)
    assert names(before) + names(rest) == whole
    assert Counter(names(before) + names(rest)) == Counter(f"n{i}" for i in range(N))


def test_the_values_are_decoded_as_the_tf_reader_decodes_them(handle: rk.Dataset) -> None:
    by_name = {r["name"].numpy().decode(): int(r["label"]) for r in handle.tf()}
    records = list(handle.tf_epochs(**OPTIONS).dataset())
    assert len(records) == N
    assert {r["name"].numpy().decode(): int(r["label"]) for r in records} == by_name
    assert [r["name"].numpy().decode() for r in records] == canonical(handle)
    batch = next(iter(handle.tf_epochs(BATCH, **OPTIONS).dataset()))
    assert batch["label"].dtype == tf.int64
    assert batch["label"].shape == (BATCH,)


def test_tf_data_and_the_numpy_and_pytorch_readers_resume_each_other(handle: rk.Dataset) -> None:
    whole = canonical(handle)
    stream = handle.epoch_stream(**OPTIONS, batch_size=BATCH)
    records = iter(stream)
    head = [next(records)["name"] for _ in range(10)]
    middle, state = read(handle, 2, start=stream.state_dict(), stop=2)  # numpy state into tf.data
    assert state is not None
    rest = [r["name"] for r in handle.epoch_stream(**OPTIONS, rank=0, world_size=1, start=state)]
    assert head + names(middle) + rest == whole  # and the tf.data state back into numpy
    torch = pytest.importorskip("torch")
    assert torch is not None
    loaded = [r["name"] for r in handle.torch_iterable(**OPTIONS, tensors=False, start=state)]
    assert loaded == rest


def test_the_drop_remainder_batch_is_left_unread_in_the_state(handle: rk.Dataset) -> None:
    epochs = handle.tf_epochs(BATCH, **OPTIONS, drop_remainder=True)
    batches = [[n.decode() for n in b["name"].numpy()] for b in epochs.dataset()]
    assert len(batches) == len(epochs) == N // BATCH
    state = epochs.state_after(len(batches))
    assert state["position"] == N - N % BATCH
    tail = [r["name"].numpy().decode() for r in handle.tf_epochs(**OPTIONS, start=state).dataset()]
    assert names(batches) + tail == canonical(handle)


def test_each_epoch_has_its_own_order_and_a_state_knows_its_epoch(handle: rk.Dataset) -> None:
    epochs = handle.tf_epochs(BATCH, **OPTIONS)
    epochs.set_epoch(1)
    first = names([[n.decode() for n in b["name"].numpy()] for b in epochs.dataset()])
    assert first == canonical(handle, 1)
    assert first != canonical(handle, 0)
    resumed = handle.tf_epochs(BATCH, **OPTIONS, start=epochs.state_after(4))
    assert resumed.epoch == 1
    assert names([[n.decode() for n in b["name"].numpy()] for b in resumed.dataset()]) == first[12:]


def test_the_state_travels_in_a_tf_train_checkpoint(handle: rk.Dataset, tmp_path: Path) -> None:
    epochs = handle.tf_epochs(BATCH, **OPTIONS, rank=0, world_size=2)
    step = tf.Variable(0, dtype=tf.int64)
    data_state = tf.Variable("", dtype=tf.string)
    checkpoint = tf.train.Checkpoint(step=step, data_state=data_state)
    for _ in zip(range(3), epochs.dataset(), strict=False):
        step.assign_add(1)
    data_state.assign(json.dumps(epochs.state_after(int(step.numpy()))))
    path = checkpoint.write(str(tmp_path / "ckpt"))

    restored_step = tf.Variable(0, dtype=tf.int64)
    restored_state = tf.Variable("", dtype=tf.string)
    tf.train.Checkpoint(step=restored_step, data_state=restored_state).read(path).assert_consumed()
    start = json.loads(restored_state.numpy().decode())
    assert int(restored_step.numpy()) == 3
    assert start == epochs.state_after(3)
    rest, _ = read(handle, 3, start=start)
    assert sorted(names(rest)) == sorted(canonical(handle)[2 * 3 * BATCH :])


def test_a_mixture_read_by_four_tf_data_ranks_resumes_with_two_and_one(tmp_path: Path) -> None:
    a = write(tmp_path / "a", "a", 40)
    b = write(tmp_path / "b", "b", 25)
    mixture = rk.mix({a: 0.6, b: 0.4}, samples_per_epoch=90)
    whole = canonical(mixture)
    before, state = read(mixture, 4, stop=3)
    assert state is not None
    assert state["reader"] == "mixture stream"
    middle, second = read(mixture, 2, start=state, stop=1)
    rest, _ = read(mixture, 1, start=second)
    assert names(before) + names(middle) + names(rest) == whole
    share = np.mean([name.startswith("a") for name in whole])
    assert abs(share - 0.6) < 0.02


def test_a_read_is_fetched_in_calls_of_whole_batches_and_in_several_calls(handle: rk.Dataset) -> None:
    epochs = handle.tf_epochs(BATCH, **OPTIONS)
    assert epochs._together(64, 200_000) == 16_384 // 64  # the most a call
    assert epochs._together(64, 50_000) == 6_250 // 64  # 8 calls at least
    assert epochs._together(64, 1_000) == 4_096 // 64  # one call, of 4,096 at most
    assert epochs._together(5_000, 1_000) == 1  # one batch a call at least


@pytest.mark.parametrize("per_call", [10, _tf_epochs._RECORDS_PER_CALL])
def test_a_mixture_fetched_in_several_calls_keeps_its_batches_whole_and_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_call: int
) -> None:
    # 2 batches of 5 a call, each source's records fetched together and put back in place.
    monkeypatch.setattr(_tf_epochs, "_RECORDS_PER_CALL", per_call)
    a = write(tmp_path / "a", "a", 40)
    b = write(tmp_path / "b", "b", 25)
    mixture = rk.mix({a: 0.6, b: 0.4}, samples_per_epoch=93)
    whole = canonical(mixture)
    blocks = [whole[begin : begin + 5] for begin in range(0, len(whole), 5)]
    for rank in range(2):
        epochs = mixture.tf_epochs(5, **OPTIONS, rank=rank, world_size=2)
        got = [[n.decode() for n in batch["name"].numpy()] for batch in epochs.dataset()]
        assert got == blocks[rank::2]
        assert len(got) == len(epochs)


def test_a_state_of_other_options_or_a_record_count_for_tf_is_refused(handle: rk.Dataset) -> None:
    state = handle.tf_epochs(BATCH, **OPTIONS).state_after(2)
    with pytest.raises(rk.errors.ResumeStateError, match="seed=5 saved, 6 now"):
        handle.tf_epochs(BATCH, **{**OPTIONS, "seed": 6}, start=state)
    with pytest.raises(
        ValueError, match=r"rank 0's dataset yields 21 batches of epoch 0 .* cannot have yielded 22"
    ):
        handle.tf_epochs(BATCH, **OPTIONS).state_after(22)
    with pytest.raises(TypeError, match=r"resume it with Dataset.tf_epochs\(start=...\)"):
        handle.tf(BATCH, start=state)
    with pytest.raises(ValueError, match="give input_context or rank and world_size, not both"):
        handle.tf_epochs(BATCH, rank=0, input_context=tf.distribute.InputContext(2, 1))
    second = handle.tf_epochs(BATCH, **OPTIONS, input_context=tf.distribute.InputContext(2, 1))
    assert (second.stream.rank, second.stream.world_size) == (1, 2)


@pytest.mark.parametrize("drop_remainder", [False, True])
@pytest.mark.parametrize("per_call", [42, _tf_epochs._RECORDS_PER_CALL])
def test_an_epoch_fetched_in_several_calls_keeps_every_batch_whole_and_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_call: int, drop_remainder: bool
) -> None:
    # 2 ranks of batches of 5, 8 batches a call (42 records at most): several calls each,
    # parsed and decoded a call at a time, then cut into batches (the fields are of one
    # shape each); the default: one call each.
    monkeypatch.setattr(_tf_epochs, "_RECORDS_PER_CALL", per_call)
    big = write(tmp_path / "big", "r", 1_103)
    whole = canonical(big)
    blocks = [whole[begin : begin + 5] for begin in range(0, len(whole), 5)]
    if drop_remainder:
        blocks.pop()  # the short block of 3
    for rank in range(2):
        epochs = big.tf_epochs(5, **OPTIONS, rank=rank, world_size=2, drop_remainder=drop_remainder)
        batches = list(epochs.dataset())
        got = [[n.decode() for n in b["name"].numpy()] for b in batches]
        assert got == blocks[rank::2]  # rank 0 ends with the short block of 3, unless dropped
        assert len(got) == len(epochs)
        for batch, names_ in zip(batches, got, strict=True):  # each label with its own name
            assert batch["label"].numpy().tolist() == [int(name[1:]) % 7 for name in names_]


def test_pictures_of_several_sizes_come_as_ds_tf_gives_them(tmp_path: Path) -> None:
    schema = rk.Schema(
        name="pictures",
        fields={
            "name": rk.FieldSpec(codec="text"),
            "image": rk.FieldSpec(codec="image", options={"format": "png", "channels": 3}),
        },
    )
    rng = np.random.default_rng(4)
    sizes = [(12, 20), (30, 9), (16, 16), (7, 25)]
    records = [
        {"name": f"p{i}", "image": rng.integers(0, 256, (*sizes[i % 4], 3), dtype=np.uint8)}
        for i in range(22)
    ]
    rk.write_dataset(records, schema, tmp_path / "pictures", shard_records=5, progress=False)
    handle = rk.open(tmp_path / "pictures", "train")
    geometry = rk.ImageGeometry(size=(10, 12))
    want = {
        name.decode(): image
        for batch in handle.tf(4, geometry=geometry)
        for name, image in zip(batch["name"].numpy(), batch["image"].numpy(), strict=True)
    }
    got = [
        (name.decode(), image)
        for batch in handle.tf_epochs(4, **OPTIONS, geometry=geometry).dataset()
        for name, image in zip(batch["name"].numpy(), batch["image"].numpy(), strict=True)
    ]
    assert [name for name, _ in got] == canonical(handle)
    for name, image in got:
        assert image.shape == (10, 12, 3)
        np.testing.assert_array_equal(image, want[name])


def test_large_records_shuffled_come_in_the_order_and_batches_the_numpy_reader_gives(
    tmp_path: Path,
) -> None:
    # Records of 20 KB and more are fetched a record a read (recordkit/read/_batched_access.py).
    schema = rk.Schema(name="texts", fields={"text": rk.FieldSpec(codec="text")})
    records = [{"text": f"{i:05d}" + "x" * (20_000 + 300 * i)} for i in range(40)]
    rk.write_dataset(records, schema, tmp_path / "large", shard_records=9, progress=False)
    a = rk.open(tmp_path / "large", "train")
    rk.write_dataset(records[:13], schema, tmp_path / "other", shard_records=9, progress=False)
    for source in (a, rk.mix({a: 0.6, rk.open(tmp_path / "other", "train"): 0.4})):
        got = [
            [text.decode() for text in batch["text"].numpy()]
            for batch in source.tf_epochs(BATCH, **OPTIONS).dataset()
        ]
        want = [record["text"] for record in source.epoch_stream(**OPTIONS)]
        assert got == [want[begin : begin + BATCH] for begin in range(0, len(want), BATCH)]


def test_compressed_shards_are_refused_when_the_reader_is_made(tmp_path: Path) -> None:
    records = [{"name": f"z{i}", "label": i % 7} for i in range(9)]
    rk.write_dataset(records, SCHEMA, tmp_path / "zipped", compression="GZIP", progress=False)
    with pytest.raises(
        rk.errors.DatasetError, match="random access needs uncompressed shards; these are stored GZIP"
    ):
        rk.open(tmp_path / "zipped", "train").tf_epochs(BATCH)
