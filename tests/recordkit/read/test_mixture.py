"""Weighted mixtures of datasets (sdk/recordkit/read/_mixture.py, _mixture_torch.py):
proportions, each source in its own epochs, and exact elastic resume with real
DataLoader worker processes."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.errors import CorruptRecordError

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

from recordkit.torch import ThreadLoader  # noqa: E402

# Three workers on a machine of two CPUs: PyTorch warns, the test means it.
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")

SCHEMA = rk.Schema(name="names", fields={"name": rk.FieldSpec(codec="text")})
OPTIONS: dict[str, Any] = {"shuffle": True, "seed": 3, "window": 8}


def write(path: Path, prefix: str, count: int) -> Path:
    rk.write_dataset(
        [{"name": f"{prefix}{i}"} for i in range(count)], SCHEMA, path, shard_records=6, progress=False
    )
    return path


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[rk.Dataset, rk.Dataset]:
    root = tmp_path_factory.mktemp("mixture")
    return rk.open(write(root / "a", "a", 50), "train"), rk.open(write(root / "b", "b", 30), "train")


def test_a_mixture_of_ten_thousand_samples_keeps_its_weights_within_two_points(
    sources: tuple[rk.Dataset, rk.Dataset],
) -> None:
    a, b = sources
    mixture = rk.mix({a: 0.7, b: 0.3}, samples_per_epoch=10_000)
    names = [r["name"] for r in mixture.torch_iterable(**OPTIONS, tensors=False)]
    assert len(names) == 10_000
    share = sum(name.startswith("a") for name in names) / len(names)
    assert abs(share - 0.7) <= 0.02
    # Each source read in its own epochs: after 7,000 samples of a (50 records) every record
    # of a was read 140 times, each of b's (30) 100 times.
    counts = Counter(names)
    assert {counts[f"a{i}"] for i in range(50)} == {140}
    assert {counts[f"b{i}"] for i in range(30)} == {100}


def test_an_unshuffled_mixture_spreads_its_sources_evenly(sources: tuple[rk.Dataset, rk.Dataset]) -> None:
    mixture = rk.mix(list(sources), weights=[3, 1], samples_per_epoch=400)
    names = [r["name"] for r in mixture.torch_iterable(tensors=False)]
    for begin in range(0, 400, 40):  # every stretch of 40 holds 30 of a and 10 of b
        assert sum(n.startswith("a") for n in names[begin : begin + 40]) == 30


def test_the_default_epoch_reads_no_source_twice_and_the_next_epoch_continues_each(
    sources: tuple[rk.Dataset, rk.Dataset],
) -> None:
    a, b = sources
    mixture = rk.mix({a: 0.7, b: 0.3})
    assert len(mixture) == 71  # 50 / 0.7: a runs out first
    stream = mixture.torch_iterable(**OPTIONS, tensors=False)
    first = [r["name"] for r in stream]
    assert Counter(first) == Counter([f"a{i}" for i in range(50)]) + Counter(n for n in first if n[0] == "b")
    assert len(set(first)) == 71  # 50 of a, 21 of b, none twice
    stream.set_epoch(1)
    second = [r["name"] for r in stream]
    read_of_b = [n for n in first + second if n[0] == "b"]
    assert Counter(read_of_b[:30]) == Counter(f"b{i}" for i in range(30))  # b's first epoch, then its second


def read(
    mixture: rk.Mixture, world: int, workers: int, *, start: Any = None, stop: int | None = None
) -> tuple[list[str], dict[str, Any] | None]:
    """The mixture read by ``world`` ranks' DataLoaders of ``workers`` workers, each
    stopped after ``stop`` batches (None: the epoch); the samples in global batch order
    and the state at the stop (the same on every rank)."""
    per_rank, states = [], []
    for rank in range(world):
        ds = mixture.torch_iterable(**OPTIONS, rank=rank, world_size=world, batch_size=4, start=start)
        batches: list[list[str]] = []
        for batch in DataLoader(ds, batch_size=4, num_workers=workers, collate_fn=ds.collate_fn):
            if stop is not None and len(batches) == stop:
                break
            batches.append(list(batch["name"]))
        per_rank.append(batches)
        if stop is not None:
            states.append(ds.loader_state(stop, 4, workers))
    assert all(state == states[0] for state in states)
    steps = max(len(b) for b in per_rank)
    names = [n for step in range(steps) for b in per_rank if step < len(b) for n in b[step]]
    return names, (json.loads(json.dumps(states[0])) if states else None)


@pytest.mark.slow
@pytest.mark.parametrize("after", [(1, 3), (3, 0)])
def test_a_mixture_stopped_on_two_ranks_of_two_workers_resumes_exactly_with_another_shape(
    sources: tuple[rk.Dataset, rk.Dataset], after: tuple[int, int]
) -> None:
    mixture = rk.mix({sources[0]: 0.6, sources[1]: 0.4}, samples_per_epoch=90)
    whole = [r["name"] for r in mixture.torch_iterable(**OPTIONS, tensors=False)]
    before, state = read(mixture, 2, 2, stop=3)
    assert state is not None
    assert state["position"] == 3 * 2 * 4
    rest, _ = read(mixture, *after, start=state)
    assert before + rest == whole  # every remaining sample once, in the canonical order


def test_a_state_of_another_mixture_or_of_a_single_dataset_is_refused(
    sources: tuple[rk.Dataset, rk.Dataset],
) -> None:
    a, b = sources
    stream = rk.mix({a: 0.7, b: 0.3}).torch_iterable(**OPTIONS)
    iterator = iter(stream)
    next(iterator)
    state = stream.state_dict()
    with pytest.raises(rk.errors.ResumeStateError, match=r"mixture=\{.*'weights': \[0\.7, 0\.3\].*\} saved"):
        rk.mix({a: 0.5, b: 0.5}).torch_iterable(**OPTIONS, start=state)
    single = a.torch_iterable(**OPTIONS).state_dict()
    with pytest.raises(rk.errors.ResumeStateError, match=r"this reader is 'mixture stream'"):
        rk.mix({a: 0.7, b: 0.3}).torch_iterable(**OPTIONS, start=single)


def test_sources_that_read_other_fields_or_bad_weights_are_refused(
    sources: tuple[rk.Dataset, rk.Dataset], tmp_path: Path
) -> None:
    a, b = sources
    other = rk.Schema(
        name="numbers", fields={"name": rk.FieldSpec(codec="label", options={"names": ["x", "y"]})}
    )
    rk.write_dataset([{"name": 1}], other, tmp_path / "c", progress=False)
    with pytest.raises(rk.errors.IncompatibleSchemaError, match="'name' differ"):
        rk.mix([a, rk.open(tmp_path / "c", "train")])
    with pytest.raises(ValueError, match="weight 1 must be a positive number, not -1"):
        rk.mix([a, b], weights=[1, -1])
    with pytest.raises(ValueError, match="got 2 sources and 1 weights"):
        rk.mix([a, b], weights=[1])
    with pytest.raises(TypeError, match="source 1 is str"):
        rk.mix([a, "b"])  # type: ignore[list-item]


def read_batches(
    mixture: rk.Mixture, world: int, workers: int, *, start: Any = None, stop: int | None = None
) -> tuple[list[str], dict[str, Any] | None]:
    """The mixture's whole batches (``torch_batches``) read by ``world`` ranks'
    DataLoaders of ``workers`` worker processes (0: a ThreadLoader of 2 threads in
    this process), each stopped after ``stop`` batches; the samples in global batch
    order and the state at the stop (the same on every rank)."""
    per_rank, states = [], []
    for rank in range(world):
        stream = mixture.torch_batches(4, **OPTIONS, rank=rank, world_size=world, start=start)
        if workers:
            loader: Any = DataLoader(stream, batch_size=None, num_workers=workers)
        else:
            loader = ThreadLoader(stream, num_workers=1, threads=2)
        batches: list[list[str]] = []
        iterator = iter(loader)
        for batch in iterator:
            if stop is not None and len(batches) == stop:
                break
            batches.append(list(batch["name"]))
        if workers:
            del iterator, loader  # the workers end here
            if stop is not None:
                states.append(stream.batches_state(stop, workers))
        else:
            iterator.close()  # the threads end here, before any DataLoader forks
            if stop is not None:
                states.append(loader.state_dict())
        per_rank.append(batches)
    assert all(state == states[0] for state in states)
    steps = max(len(b) for b in per_rank)
    names = [n for step in range(steps) for b in per_rank if step < len(b) for n in b[step]]
    return names, (json.loads(json.dumps(states[0])) if states else None)


@pytest.mark.slow
def test_a_mixture_read_in_whole_batches_resumes_exactly_on_any_shape(
    sources: tuple[rk.Dataset, rk.Dataset],
) -> None:
    mixture = rk.mix({sources[0]: 0.6, sources[1]: 0.4}, samples_per_epoch=90)
    whole = [r["name"] for r in mixture.torch_iterable(**OPTIONS, tensors=False)]
    before, state = read_batches(mixture, 4, 2, stop=2)
    assert state is not None
    assert state["position"] == 2 * 4 * 4
    middle, second = read_batches(mixture, 2, 3, start=state, stop=3)
    assert second is not None
    assert second["position"] == 32 + 3 * 2 * 4
    rest, _ = read_batches(mixture, 1, 0, start=second)
    assert before + middle + rest == whole  # every sample once, in the canonical order


def test_a_thread_loader_state_of_a_mixture_resumes_the_record_stream(
    sources: tuple[rk.Dataset, rk.Dataset],
) -> None:
    mixture = rk.mix({sources[0]: 0.6, sources[1]: 0.4}, samples_per_epoch=90)
    whole = [r["name"] for r in mixture.torch_iterable(**OPTIONS, tensors=False)]
    threads = ThreadLoader(mixture.torch_batches(4, **OPTIONS), num_workers=2, threads=2)
    iterator = iter(threads)
    head = [name for _ in range(5) for name in next(iterator)["name"]]
    iterator.close()
    state = threads.state_dict()
    assert state["reader"] == "mixture stream"
    assert state["position"] == 20
    rest = [r["name"] for r in mixture.torch_iterable(**OPTIONS, tensors=False, start=state)]
    assert head + rest == whole
    with pytest.raises(rk.errors.ResumeStateError, match="state of 'mixture stream'; this reader is 'split"):
        sources[0].torch_batches(4, **OPTIONS, start=state)


def test_a_damaged_record_in_a_source_stops_the_mixture_after_every_sample_before_it_and_is_not_counted(
    sources: tuple[rk.Dataset, rk.Dataset], tmp_path: Path
) -> None:
    a, b = sources
    copy = Path(shutil.copytree(b.path, tmp_path / "b"))
    shard = rk.Manifest.load(copy).splits["train"].shards[2]
    assert shard.index is not None
    offsets = np.frombuffer((copy / shard.index.file).read_bytes()[16:], "<u8")
    data = bytearray((copy / shard.file).read_bytes())
    data[int(offsets[1]) + 12] ^= 0xFF  # inside record 1 of shard 2: b13
    (copy / shard.file).write_bytes(bytes(data))
    whole = [r["name"] for r in rk.mix({a: 0.6, b: 0.4}).torch_iterable(**OPTIONS, tensors=False)]
    mixture = rk.mix({a: 0.6, rk.open(copy, "train"): 0.4})
    damaged = mixture.torch_iterable(**OPTIONS, tensors=False)
    read_: list[str] = []
    with pytest.raises(CorruptRecordError) as info:
        read_.extend(record["name"] for record in damaged)
    assert info.value.context.shard == shard.file
    assert read_ == whole[: whole.index("b13")]  # every sample before it, in its place
    state = damaged.state_dict()
    assert state["position"] == len(read_)  # the damaged one is not counted as read
    with pytest.raises(CorruptRecordError):  # resumed, it is the first record read
        next(iter(mixture.torch_iterable(**OPTIONS, tensors=False, start=state)))


def test_an_epoch_in_which_a_source_has_no_samples_reads_the_other_sources(
    sources: tuple[rk.Dataset, rk.Dataset],
) -> None:
    a, b = sources
    mixture = rk.mix({a: 0.95, b: 0.05}, samples_per_epoch=4)  # b's share rounds to none
    for shuffle in (False, True):
        stream = mixture.torch_iterable(shuffle=shuffle, seed=3, tensors=False)
        for epoch in range(3):
            stream.set_epoch(epoch)
            names = [r["name"] for r in stream]
            assert len(names) == 4
            assert all(n.startswith("a") for n in names)
