"""Random crops and flips in the canonical epochs are keyed by each record's place in the
epoch (sdk/recordkit/read/_numpy_geometry.py ``epoch_draws``): a run stopped and resumed
with another number of ranks or workers gets the pictures the unbroken run gets, in
tf.data (``tf_epochs``) and in the PyTorch and numpy epoch readers; the next epoch draws
afresh."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.read._numpy_geometry import DRAWS, epoch_draws

tf = pytest.importorskip("tensorflow")
pytest.importorskip("torch")

N = 23
BATCH = 3
SCHEMA = rk.Schema(
    name="pictures",
    fields={
        "name": rk.FieldSpec(codec="text"),
        "image": rk.FieldSpec(codec="image", options={"format": "png", "channels": 3}),
    },
)
GEOMETRY = rk.ImageGeometry(size=(8, 8), fit="random_resized_crop", flip=0.5, seed=11)
OPTIONS: dict[str, Any] = {"shuffle": True, "seed": 5, "window": 6}


@pytest.fixture(scope="module")
def handle(tmp_path_factory: pytest.TempPathFactory) -> rk.Dataset:
    rng = np.random.default_rng(8)
    records = [
        {"name": f"p{i}", "image": rng.integers(0, 256, (20 + i % 5, 24 - i % 3, 3), dtype=np.uint8)}
        for i in range(N)
    ]
    path = tmp_path_factory.mktemp("augmented") / "pictures"
    rk.write_dataset(records, SCHEMA, path, shard_records=5, progress=False)
    return rk.open(path, "train")


def tf_pictures(
    handle: rk.Dataset, world: int, *, start: Any = None, stop: int | None = None, epoch: int = 0
) -> tuple[dict[str, np.ndarray], Any]:
    """The pictures ``world`` tf.data ranks read (by record name), stopped after ``stop``
    global batches, and the state there."""
    pictures: dict[str, np.ndarray] = {}
    state = None
    for rank in range(world):
        epochs = handle.tf_epochs(
            BATCH, **OPTIONS, rank=rank, world_size=world, start=start, geometry=GEOMETRY
        )
        if epoch:
            epochs.set_epoch(epoch)
        for step, batch in enumerate(epochs.dataset()):
            if stop is not None and step == stop:
                break
            for name, image in zip(batch["name"].numpy(), batch["image"].numpy(), strict=True):
                pictures[name.decode()] = image
        if stop is not None:
            state = epochs.state_after(stop)
    return pictures, state


def test_tf_epochs_resumed_on_another_rank_count_crop_and_flip_as_the_unbroken_run(
    handle: rk.Dataset,
) -> None:
    unbroken, _ = tf_pictures(handle, 1)
    assert len(unbroken) == N
    before, state = tf_pictures(handle, 2, stop=2)
    after, _ = tf_pictures(handle, 3, start=state)
    assert set(before).isdisjoint(after)
    assert len(before) + len(after) == N
    for name, picture in {**before, **after}.items():
        np.testing.assert_array_equal(picture, unbroken[name], err_msg=name)
    # the crops are random: not all records get the same window
    assert len({picture.tobytes() for picture in unbroken.values()}) == N
    # a new epoch draws afresh
    again, _ = tf_pictures(handle, 1, epoch=1)
    assert sum(not np.array_equal(again[name], unbroken[name]) for name in unbroken) > N // 2


def torch_pictures(
    handle: rk.Dataset,
    world: int,
    workers: int,
    *,
    start: Any = None,
    stop: int | None = None,
    epoch: int = 0,
) -> tuple[dict[str, np.ndarray], Any]:
    """The pictures ``world`` ranks of ``workers`` DataLoader workers read (by record
    name; 0 workers: in the process), stopped after ``stop`` batches each."""
    from torch.utils.data import DataLoader

    pictures: dict[str, np.ndarray] = {}
    state = None
    for rank in range(world):
        dataset = handle.torch_iterable(
            **OPTIONS, rank=rank, world_size=world, start=start, geometry=GEOMETRY, batch_size=BATCH
        )
        if epoch:
            dataset.set_epoch(epoch)
        loader = DataLoader(dataset, batch_size=BATCH, num_workers=workers)
        for step, batch in enumerate(loader):
            if stop is not None and step == stop:
                break
            for name, image in zip(batch["name"], batch["image"].numpy(), strict=True):
                pictures[name] = image
        if stop is not None:
            state = dataset.loader_state(stop, BATCH, workers)
    return pictures, state


def test_the_pytorch_epoch_resumed_with_other_ranks_and_workers_crops_as_the_unbroken_run(
    handle: rk.Dataset,
) -> None:
    unbroken, _ = torch_pictures(handle, 1, 0)
    assert len(unbroken) == N
    before, state = torch_pictures(handle, 2, 2, stop=2)
    after, _ = torch_pictures(handle, 3, 0, start=state)
    assert set(before).isdisjoint(after)
    assert len(before) + len(after) == N
    for name, picture in {**before, **after}.items():
        np.testing.assert_array_equal(picture, unbroken[name], err_msg=name)
    again, _ = torch_pictures(handle, 1, 0, epoch=1)  # a new epoch draws afresh
    assert sum(not np.array_equal(again[name], unbroken[name]) for name in unbroken) > N // 2


def test_a_record_s_draws_are_keyed_by_seed_epoch_and_place_and_are_uniform() -> None:
    draws = epoch_draws(11, 0, np.arange(50))
    assert draws.shape == (50, DRAWS)
    assert ((draws >= 0) & (draws < 1)).all()
    np.testing.assert_array_equal(draws[7:9], epoch_draws(11, 0, np.asarray([7, 8])))
    assert not np.array_equal(draws, epoch_draws(11, 1, np.arange(50)))
    assert not np.array_equal(draws, epoch_draws(12, 0, np.arange(50)))
    # uniform enough for a flip and a crop: each draw's mean near a half
    assert np.abs(epoch_draws(3, 2, np.arange(20_000)).mean(axis=0) - 0.5).max() < 0.02
