"""Grain in recordkit's canonical epochs (sdk/recordkit/read/_grain_epochs.py): Grain's own
DataLoader, with its worker processes and host sharding, reads an epoch once, stops, and
resumes from recordkit's state with another number of hosts and workers."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import recordkit as rk

grain = pytest.importorskip("grain.python")

from recordkit.grain import EpochSampler  # noqa: E402

N = 45
SCHEMA = rk.Schema(name="names", fields={"name": rk.FieldSpec(codec="text")})
OPTIONS: dict[str, Any] = {"shuffle": True, "seed": 4, "window": 8}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("grain-epochs") / "names"
    rk.write_dataset([{"name": f"n{i}"} for i in range(N)], SCHEMA, path, shard_records=6, progress=False)
    return path


def read(
    source: Any,
    hosts: int,
    workers: int,
    *,
    start: Any = None,
    stop: int | None = None,
    drop_remainder: bool = False,
) -> tuple[list[str], Any]:
    """What ``hosts`` Grain DataLoaders of ``workers`` workers read (each host stopped
    after ``stop`` records), in global index order, and recordkit's state at the stop.
    Each host's sampler holds its ``ShardOptions``; the DataLoader takes them from it."""
    per_host = []
    for host in range(hosts):
        shard = grain.ShardOptions(shard_index=host, shard_count=hosts, drop_remainder=drop_remainder)
        sampler = EpochSampler(source, **OPTIONS, start=start, shard_options=shard)
        loader = grain.DataLoader(data_source=source, sampler=sampler, worker_count=workers)
        names = []
        for record in loader:
            if len(names) == stop:
                break
            names.append(record["name"])
        per_host.append(names)
    longest = max(len(names) for names in per_host)
    ordered = [names[i] for i in range(longest) for names in per_host if i < len(names)]
    state = sampler.state_after(stop) if stop is not None else None
    return ordered, (json.loads(json.dumps(state)) if state is not None else None)


@pytest.mark.slow
def test_grain_hosts_and_workers_read_the_canonical_order_once_and_resume_with_another_shape(
    dataset: Path,
) -> None:
    source = rk.open(dataset, "train").grain()
    whole, _ = read(source, 1, 0)
    assert Counter(whole) == Counter(f"n{i}" for i in range(N))
    before, state = read(source, 3, 2, stop=5)
    assert state["position"] == 15
    rest, _ = read(source, 5, 0, start=state)
    assert before + rest == whole  # every record once, in the canonical order


def test_a_grain_checkpoint_still_resumes_the_same_shape(dataset: Path) -> None:
    source = rk.open(dataset, "train").grain()
    loader = EpochSampler(source, **OPTIONS).loader(worker_count=0)
    iterator = iter(loader)
    head = [next(iterator)["name"] for _ in range(5)]
    state = iterator.get_state()
    resumed = iter(
        grain.DataLoader(
            data_source=source,
            sampler=EpochSampler(source, **OPTIONS, shard_options=grain.NoSharding()),
            worker_count=0,
        )
    )
    resumed.set_state(state)
    assert head + [r["name"] for r in resumed] == [r["name"] for r in loader]


def test_a_mixture_reads_through_grain_and_resumes_exactly(dataset: Path, tmp_path: Path) -> None:
    rk.write_dataset(
        [{"name": f"m{i}"} for i in range(20)], SCHEMA, tmp_path / "m", shard_records=6, progress=False
    )
    mixture = rk.mix({rk.open(dataset, "train"): 0.75, rk.open(tmp_path / "m", "train"): 0.25})
    source = mixture.grain()
    whole, _ = read(source, 1, 0)
    assert len(whole) == len(mixture) == 60  # 45 / 0.75
    assert sum(name.startswith("n") for name in whole) == 45
    before, state = read(source, 3, 0, stop=4)
    rest, _ = read(source, 2, 0, start=state)
    assert before + rest == whole
    with pytest.raises(rk.errors.ResumeStateError, match="mixture="):
        EpochSampler(rk.open(dataset, "train").grain(), **OPTIONS, start=state)


def test_hosts_that_cannot_share_what_is_left_evenly_are_refused_naming_the_counts(dataset: Path) -> None:
    source = rk.open(dataset, "train").grain()
    with pytest.raises(
        rk.errors.ShardingError,
        match=r"45 records are left of epoch 0, which 2 hosts cannot share evenly: .* each host 22 "
        r"and would silently skip the last 1\. .*drop_remainder=True",
    ):
        EpochSampler(source, **OPTIONS, shard_options=grain.ShardOptions(0, 2, drop_remainder=False))
    # A sampler that was not told the hosts refuses a state for hosts that skipped records.
    with pytest.raises(rk.errors.ShardingError, match=r"2 hosts cannot share the 45 records"):
        EpochSampler(source, **OPTIONS).state_after(3, shard_count=2)


@pytest.mark.slow
def test_drop_remainder_skips_exactly_the_named_tail_which_the_state_keeps_unread(dataset: Path) -> None:
    source = rk.open(dataset, "train").grain()
    whole, _ = read(source, 1, 0)
    sampler = EpochSampler(source, **OPTIONS, shard_options=grain.ShardOptions(0, 4, drop_remainder=True))
    assert (len(sampler), sampler.dropped) == (44, 1)
    read_all, state = read(source, 4, 2, stop=11, drop_remainder=True)
    assert read_all == whole[:44]  # every other record once, in the canonical order
    rest, _ = read(source, 1, 0, start=state)
    assert rest == whole[44:]  # the dropped record, and only it, is still to read
    # Stopped mid-epoch: the state counts what the 4 hosts read, not the dropped tail.
    before, state = read(source, 4, 0, stop=3, drop_remainder=True)
    assert state["position"] == 12
    rest, _ = read(source, 3, 2, start=state)
    assert before + rest == whole


def test_hosts_that_divide_the_epoch_read_each_record_once(dataset: Path) -> None:
    source = rk.open(dataset, "train").grain()
    whole, _ = read(source, 1, 0)
    shared, _ = read(source, 5, 0)
    assert Counter(whole) == Counter(f"n{i}" for i in range(N))
    assert shared == whole  # each record once, the hosts' i-th records in the canonical order


def test_the_samplers_loader_divides_the_epoch_by_the_samplers_shard_options_and_sets_them_itself(
    dataset: Path,
) -> None:
    source = rk.open(dataset, "train").grain()
    whole, _ = read(source, 1, 0)
    per_host = []
    for host in range(3):
        sampler = EpochSampler(source, **OPTIONS, shard_options=grain.ShardOptions(host, 3))
        per_host.append([record["name"] for record in sampler.loader(worker_count=0)])
    assert [name for step in zip(*per_host, strict=True) for name in step] == whole
    assert [r["name"] for r in EpochSampler(source, **OPTIONS).loader()] == whole  # none: one host
    with pytest.raises(TypeError, match=r"EpochSampler\.loader sets shard_options itself"):
        EpochSampler(source, **OPTIONS).loader(shard_options=grain.ShardOptions(0, 3))


def test_shard_options_given_to_the_dataloader_alone_are_refused_when_it_is_made_naming_the_fix(
    dataset: Path,
) -> None:
    source = rk.open(dataset, "train").grain()
    sampler = EpochSampler(source, **OPTIONS)
    with pytest.raises(
        rk.errors.ShardingError,
        match=r"this EpochSampler was given no shard_options, so a Grain DataLoader .* could skip "
        r"records silently\. Build the loader with sampler\.loader\(\.\.\.\)",
    ):
        grain.DataLoader(
            data_source=source, sampler=sampler, worker_count=0, shard_options=grain.ShardOptions(0, 2)
        )


def test_a_dataloader_given_other_shard_options_than_its_sampler_is_refused_at_its_first_record_naming_both(
    dataset: Path,
) -> None:
    source = rk.open(dataset, "train").grain()
    sampler = EpochSampler(source, **OPTIONS, shard_options=grain.ShardOptions(shard_index=0, shard_count=3))
    other = grain.DataLoader(
        data_source=source, sampler=sampler, worker_count=0, shard_options=grain.ShardOptions(1, 5)
    )
    with pytest.raises(
        rk.errors.ShardingError,
        match=r"the DataLoader asked for global index 1, which the EpochSampler's shard_options "
        r"\(shard_index=0, shard_count=3\) give to another host",
    ):
        list(other)
    same = grain.DataLoader(
        data_source=source, sampler=sampler, worker_count=0, shard_options=grain.ShardOptions(0, 3)
    )
    assert len(list(same)) == 15
