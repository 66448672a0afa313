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
    source: Any, hosts: int, workers: int, *, start: Any = None, stop: int | None = None
) -> tuple[list[str], Any]:
    """What ``hosts`` Grain DataLoaders of ``workers`` workers read (each host stopped
    after ``stop`` records), in global index order, and recordkit's state at the stop."""
    per_host = []
    sampler = EpochSampler(source, **OPTIONS, start=start)
    for host in range(hosts):
        shard = grain.ShardOptions(shard_index=host, shard_count=hosts, drop_remainder=False)
        loader = grain.DataLoader(
            data_source=source, sampler=sampler, worker_count=workers, shard_options=shard
        )
        names = []
        for record in loader:
            if len(names) == stop:
                break
            names.append(record["name"])
        per_host.append(names)
    longest = max(len(names) for names in per_host)
    ordered = [names[i] for i in range(longest) for names in per_host if i < len(names)]
    state = sampler.state_after(stop, shard_count=hosts) if stop is not None else None
    return ordered, (json.loads(json.dumps(state)) if state is not None else None)


@pytest.mark.slow
def test_grain_hosts_and_workers_read_the_canonical_order_once_and_resume_with_another_shape(
    dataset: Path,
) -> None:
    source = rk.open(dataset, "train").grain()
    whole, _ = read(source, 1, 0)
    assert Counter(whole) == Counter(f"n{i}" for i in range(N))
    # Grain's DataLoader gives each host len(sampler) // hosts records: hosts that divide
    # what is left read every record.
    before, state = read(source, 3, 2, stop=5)
    assert state["position"] == 15
    rest, _ = read(source, 5, 0, start=state)
    assert before + rest == whole  # every record once, in the canonical order


def test_a_grain_checkpoint_still_resumes_the_same_shape(dataset: Path) -> None:
    source = rk.open(dataset, "train").grain()
    sampler = EpochSampler(source, **OPTIONS)
    loader = grain.DataLoader(
        data_source=source, sampler=sampler, worker_count=0, shard_options=grain.NoSharding()
    )
    iterator = iter(loader)
    head = [next(iterator)["name"] for _ in range(5)]
    state = iterator.get_state()
    resumed = iter(
        grain.DataLoader(
            data_source=source,
            sampler=EpochSampler(source, **OPTIONS),
            worker_count=0,
            shard_options=grain.NoSharding(),
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
