"""The numpy epoch stream (sdk/recordkit/read/_epoch_stream.py): a split or a mixture read
in the canonical order without PyTorch, by simulated ranks, stopped and resumed with
another number of ranks."""

from __future__ import annotations

import json
from collections import Counter
from itertools import islice
from pathlib import Path
from typing import Any

import pytest
from _epoch_reference import remaining, share

import recordkit as rk

N = 50
SCHEMA = rk.Schema(name="names", fields={"name": rk.FieldSpec(codec="text")})
OPTIONS: dict[str, Any] = {"shuffle": True, "seed": 2, "window": 7, "batch_size": 3}


@pytest.fixture(scope="module")
def handle(tmp_path_factory: pytest.TempPathFactory) -> rk.Dataset:
    path = tmp_path_factory.mktemp("epoch-stream") / "names"
    rk.write_dataset([{"name": f"n{i}"} for i in range(N)], SCHEMA, path, shard_records=6, progress=False)
    return rk.open(path, "train")


def names(stream: Any, count: int | None = None) -> list[str]:
    return [record["name"] for record in islice(stream, count)]


def test_ranks_read_every_record_once_stop_and_resume_with_another_number_of_ranks(
    handle: rk.Dataset,
) -> None:
    whole = names(handle.epoch_stream(**OPTIONS))
    assert Counter(whole) == Counter(f"n{i}" for i in range(N))
    ranks = [handle.epoch_stream(**OPTIONS, rank=r, world_size=4) for r in range(4)]
    before = [names(iter(stream), 6) for stream in ranks]  # every rank stops after 2 blocks
    states = [stream.state_dict() for stream in ranks]
    assert all(state == states[0] for state in states)
    state = json.loads(json.dumps(states[0]))
    assert (state["position"], state["done"], state["also"]) == (24, 24, [])
    rest = [names(handle.epoch_stream(**OPTIONS, rank=r, world_size=3, start=state)) for r in range(3)]
    assert Counter(n for part in before + rest for n in part) == Counter(whole)  # each exactly once
    # Rank r's i-th block of 3 is block i * 4 + r of the order: the ranks in turn read it from the start.
    in_turn = [before[r][3 * i : 3 * i + 3] for i in range(2) for r in range(4)]
    assert [n for block in in_turn for n in block] == whole[:24]


def test_a_numpy_state_and_a_torch_state_are_one_state(handle: rk.Dataset) -> None:
    pytest.importorskip("torch")
    stream = handle.epoch_stream(**OPTIONS)
    head = names(iter(stream), 10)
    resumed = handle.select("name").torch_iterable(**OPTIONS, start=stream.state_dict(), tensors=False)
    assert head + [r["name"] for r in resumed] == names(handle.epoch_stream(**OPTIONS))


def test_a_mixture_streams_as_numpy_and_resumes(handle: rk.Dataset, tmp_path: Path) -> None:
    rk.write_dataset(
        [{"name": f"m{i}"} for i in range(10)], SCHEMA, tmp_path / "m", shard_records=4, progress=False
    )
    mixture = rk.mix({handle: 0.8, rk.open(tmp_path / "m", "train"): 0.2}, samples_per_epoch=40)
    whole = names(mixture.epoch_stream(**OPTIONS))
    assert sum(n.startswith("m") for n in whole) == 8
    stream = mixture.epoch_stream(**OPTIONS)
    head = names(iter(stream), 13)
    rest = names(mixture.epoch_stream(**OPTIONS, start=stream.state_dict()))
    assert head + rest == whole


@pytest.mark.parametrize("shuffle", [True, False])
def test_a_readers_records_are_its_share_of_the_whole_orders_rest_wherever_the_epoch_was_left(
    handle: rk.Dataset, shuffle: bool
) -> None:
    # A reader lays the order out from its first place only (_epoch_order.epoch_order_from),
    # and reads end where windows do: its records must be those of its share of the whole
    # order's positions left, for prefixes that end inside a window or on its edge, and
    # positions read beyond them, read in that order.
    from recordkit.read._epoch_order import Progress

    options = {**OPTIONS, "shuffle": shuffle}
    for world_size, workers in ((1, 0), (2, 3), (3, 2)):
        stream = handle.epoch_stream(**options, rank=world_size - 1, world_size=world_size)
        order = stream.epochs.items(seed=stream.seed, epoch=0, shuffle=shuffle, window=stream.window)
        for done, also in ((0, ()), (6, ()), (7, ()), (13, (15, 22, 40)), (N - 1, ()), (N, ())):
            stream._progress = Progress(N, done, also)
            division = stream.division(workers)
            for worker in range(division.workers):
                reader = division.reader(stream.rank, worker)
                places = share(division, remaining(Progress(N, done, also)), reader)
                expected = stream.epochs.locate_pairs(order[places])
                assert stream.worker_pairs(worker, workers).tolist() == expected.tolist()
                read = [r["name"] for r in stream.read_share(worker, workers, count=False)]
                assert read == [f"n{stream.records.shards.starts[s] + n}" for s, n in expected.tolist()]
