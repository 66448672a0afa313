"""Elastic exact resume with real DataLoader worker processes (sdk/recordkit/read/_torch.py
over _epoch_order.py): an epoch read by simulated ranks x workers, stopped, and resumed
with another number of ranks and workers reads exactly the records that were left."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import recordkit as rk

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

from recordkit.torch import ThreadLoader  # noqa: E402

# Three workers on a machine of two CPUs: PyTorch warns, the test means it.
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")

N = 61
BATCH = 3
SCHEMA = rk.Schema(name="names", fields={"name": rk.FieldSpec(codec="text")})
OPTIONS: dict[str, Any] = {"shuffle": True, "seed": 5, "window": 6}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("elastic") / "names"
    rk.write_dataset([{"name": f"n{i}"} for i in range(N)], SCHEMA, path, shard_records=7, progress=False)
    return path


def read(
    path: Path,
    world: int,
    workers: int,
    *,
    start: Any = None,
    stop: int | None = None,
    block: int | None = BATCH,
) -> tuple[list[list[str]], dict[str, Any] | None]:
    """Each rank's DataLoader with ``workers`` workers, each stopped after ``stop``
    batches (None: the whole epoch), over records dealt in blocks of ``block``; the
    global batches in step order (all ranks' i-th batches, rank by rank), and the state
    every rank computes at the stop."""
    per_rank: list[list[list[str]]] = []
    states = []
    for rank in range(world):
        ds = (
            rk.open(path, "train")
            .select("name")
            .torch_iterable(**OPTIONS, rank=rank, world_size=world, batch_size=block, start=start)
        )
        loader = DataLoader(ds, batch_size=BATCH, num_workers=workers, collate_fn=ds.collate_fn)
        batches: list[list[str]] = []
        for batch in loader:
            if stop is not None and len(batches) == stop:
                break
            batches.append(list(batch["name"]))
        del loader  # its workers end here
        per_rank.append(batches)
        if stop is not None:
            states.append(ds.loader_state(stop, BATCH, workers))
    assert all(state == states[0] for state in states)  # every rank saves the same state
    steps = max(len(b) for b in per_rank)
    global_batches = [b[step] for step in range(steps) for b in per_rank if step < len(b)]
    return global_batches, (json.loads(json.dumps(states[0])) if states else None)


def names(batches: list[list[str]]) -> list[str]:
    return [name for batch in batches for name in batch]


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1, 1), (2, 1), (2, 2), (3, 2)])
def test_every_division_reads_each_record_once_in_the_canonical_order(
    dataset: Path, shape: tuple[int, int]
) -> None:
    batches, _ = read(dataset, *shape)
    assert Counter(names(batches)) == Counter(f"n{i}" for i in range(N))
    in_process = rk.open(dataset, "train").select("name").torch_iterable(**OPTIONS, tensors=False)
    assert names(batches) == [r["name"] for r in in_process]  # the canonical order, whatever the shape


@pytest.mark.slow
@pytest.mark.parametrize("after", [(2, 3), (1, 0)])
def test_four_ranks_of_two_workers_stopped_resume_exactly_with_another_shape(
    dataset: Path, after: tuple[int, int]
) -> None:
    before, state = read(dataset, 4, 2, stop=2)
    assert state is not None
    assert state["position"] == 2 * 4 * BATCH
    rest, _ = read(dataset, *after, start=state)
    assert Counter(names(before) + names(rest)) == Counter(f"n{i}" for i in range(N))  # each exactly once
    whole, _ = read(dataset, 1, 1)
    assert names(before) + names(rest) == names(whole)  # and in the canonical order


@pytest.mark.slow
def test_a_stop_that_is_not_a_prefix_of_the_order_still_resumes_exactly(dataset: Path) -> None:
    # Records dealt one at a time to 3 ranks x 2 workers, batched by 3 in each worker: after
    # one batch per rank (from each rank's first worker) the records read are not a prefix
    # of the order (the state lists those read past it), and a second stop and resume
    # builds on the first.
    before, state = read(dataset, 3, 2, stop=1, block=None)
    assert state is not None
    assert (state["position"], state["done"], state["also"]) == (9, 3, [6, 7, 8, 12, 13, 14])
    rest, second = read(dataset, 2, 1, start=state, stop=1, block=None)
    assert second is not None
    assert second["position"] == state["position"] + 2 * BATCH
    last, _ = read(dataset, 1, 2, start=second, block=None)
    assert Counter(names(before) + names(rest) + names(last)) == Counter(f"n{i}" for i in range(N))


@pytest.mark.slow
def test_a_thread_loader_state_resumes_a_dataloader_of_other_workers(dataset: Path) -> None:
    handle = rk.open(dataset, "train").select("name")
    stream = handle.torch_batches(BATCH, **OPTIONS)
    threads = ThreadLoader(stream, num_workers=3, threads=2)
    iterator = iter(threads)
    head = [list(next(iterator)["name"]) for _ in range(5)]
    state = threads.state_dict()
    # Stop the loader's threads before the DataLoader forks its workers: a thread caught
    # holding a lock at the fork leaves the forked worker waiting on it for ever.
    iterator.close()
    resumed = handle.torch_batches(BATCH, **OPTIONS, start=state)
    rest = [list(b["name"]) for b in DataLoader(resumed, batch_size=None, num_workers=2)]
    whole = [list(b["name"]) for b in DataLoader(stream, batch_size=None, num_workers=1)]
    assert head + rest == whole


def test_a_state_of_another_seed_or_dataset_is_refused_naming_the_difference(
    dataset: Path, tmp_path: Path
) -> None:
    handle = rk.open(dataset, "train").select("name")
    ds = handle.torch_iterable(**OPTIONS)
    iterator = iter(ds)
    for _ in range(4):
        next(iterator)
    state = ds.state_dict()
    with pytest.raises(rk.errors.ResumeStateError, match="seed=5 saved, 6 now"):
        handle.torch_iterable(**{**OPTIONS, "seed": 6}, start=state)
    other = tmp_path / "other"
    rk.write_dataset([{"name": f"m{i}"} for i in range(N)], SCHEMA, other, shard_records=5, progress=False)
    with pytest.raises(rk.errors.ResumeStateError, match=r"dataset='[0-9a-f]+' saved, '[0-9a-f]+' now"):
        rk.open(other, "train").torch_iterable(**OPTIONS, start=state)
