"""A DataLoader worker's ring of reused shared-memory batch buffers
(sdk/recordkit/read/_shared_ring.py): the values of an ordinary batch whatever a buffer
held before, one shared-memory segment a batch, and a buffer reused only once the main
process has freed every tensor of the batch it held; over real shards and real
DataLoader workers."""

from __future__ import annotations

import gc
import platform
import subprocess
import sys
from multiprocessing.reduction import ForkingPickler  # torch's tensor reducers: registered by torch
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import EVERY_CODEC, every_codec_records, make_records, write

import recordkit as rk

torch = pytest.importorskip("torch")
from test_batch_loader import assert_same  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from recordkit.read._batch_assemble import assemble_batch, batch_layout  # noqa: E402
from recordkit.read._shared_ring import RingBatch, SharedRing  # noqa: E402
from recordkit.read._torch import to_tensors  # noqa: E402

BATCH = 4


@pytest.fixture(scope="module")
def every_codec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ring") / "every"
    rk.write_dataset(every_codec_records(12), EVERY_CODEC, path, progress=False, shard_records=4)
    return path


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ring") / "data"
    write(path, make_records(40, seed=5), shard_records=5)
    return path


def crossed(batch: Any) -> Any:
    """``batch`` as the main process receives it from a worker (the DataLoader's pickler)."""
    return ForkingPickler.loads(bytes(ForkingPickler.dumps(batch)))


def test_a_reused_buffer_gives_the_values_of_an_ordinary_batch_whatever_it_held_before(
    every_codec: Path,
) -> None:
    records = rk.RandomAccess(every_codec)
    layout = batch_layout(records)
    ring = SharedRing(slots=1)
    for begin in range(0, 12, BATCH):
        decoded = records.read_batch(list(range(begin, begin + BATCH)))
        arrays = ring.arrays(decoded)
        assert arrays.slot is not None
        arrays.slot.tensor[64:] = 0xA5  # what an earlier batch left: every byte is rewritten
        sent = arrays.batch(assemble_batch(decoded, layout, arrays))
        assert isinstance(sent, RingBatch)
        want = to_tensors(assemble_batch(decoded, layout))
        assert_same(want, dict(sent))
        received = crossed(sent)
        assert type(received) is dict
        assert_same(want, received)
        del sent, received
        gc.collect()
    assert len(ring.slots) == 1


def test_every_array_of_a_batch_crosses_in_one_shared_segment(every_codec: Path) -> None:
    records = rk.RandomAccess(every_codec)
    decoded = records.read_batch([0, 1, 2])
    arrays = SharedRing().arrays(decoded)
    batch = arrays.batch(assemble_batch(decoded, batch_layout(records), arrays))
    _, (slot, crossing) = batch.__reduce__()
    assert slot.is_shared()
    assert not _tensors(crossing)  # each array crosses as where it lies in the slot
    assert len(_tensors(batch)) == len(_tensors(crossed(batch))) > 5


@pytest.fixture(scope="module")
def pictures_and_sound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pictures of 48 to 96 px and 1 s of audio: batches that padding makes larger."""
    path = tmp_path_factory.mktemp("ring") / "pictures"
    rng = np.random.default_rng(3)
    schema = rk.Schema(
        name="ring-sizes",
        fields={
            "image": rk.FieldSpec(codec="image"),
            "audio": rk.FieldSpec(codec="audio", options={"sample_rate": 8000}),
            "caption": rk.FieldSpec(codec="text"),
        },
    )
    records = [
        {
            "image": rng.integers(0, 256, (*(int(s) for s in rng.integers(48, 97, 2)), 3), dtype=np.uint8),
            "audio": rng.integers(-3000, 3000, int(rng.integers(4000, 8001)), dtype=np.int16),
            "caption": f"record {i}",
        }
        for i in range(8)
    ]
    rk.write_dataset(records, schema, path, progress=False)
    return path


@pytest.mark.parametrize(
    ("concat", "room"),
    [((), 1.3), (("audio",), 1.4)],  # 1.25 for larger batches; joined audio takes less than padded
)
def test_a_workers_first_buffer_holds_its_batch_without_being_made_much_larger(
    pictures_and_sound: Path, concat: tuple[str, ...], room: float
) -> None:
    records = rk.RandomAccess(pictures_and_sound)
    decoded = records.read_batch(list(range(8)))
    arrays = SharedRing().arrays(decoded)
    arrays.batch(assemble_batch(decoded, batch_layout(records, concat=concat), arrays))
    assert arrays.slot is not None
    assert not arrays._fresh  # every array in the slot
    assert arrays.used <= arrays.slot.size <= room * arrays.used


def _tensors(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return [value] if isinstance(value, torch.Tensor) else []


def test_a_buffer_is_reused_only_after_every_tensor_of_its_batch_is_freed(dataset: Path) -> None:
    records = rk.RandomAccess(dataset)
    layout = batch_layout(records)
    ring = SharedRing(slots=2)

    def send(begin: int) -> tuple[Any, Any]:
        decoded = records.read_batch(list(range(begin, begin + BATCH)))
        arrays = ring.arrays(decoded)
        return arrays.slot, crossed(arrays.batch(assemble_batch(decoded, layout, arrays)))

    first_slot, first = send(0)
    assert first_slot is ring.slots[0]
    want = {key: value.clone() for key, value in first.items() if isinstance(value, torch.Tensor)}
    kept = first["image"][1:3]  # a slice of one field outlives the batch
    del first
    gc.collect()
    second_slot, second = send(4)
    assert second_slot is not first_slot  # the slice still holds the first buffer
    third_slot, third = send(8)
    assert third_slot is None  # both held: fresh memory
    assert not isinstance(third, RingBatch)
    held = [second]
    del second
    for begin in range(12, 40, BATCH):  # more batches while the slice is kept
        held.clear()
        gc.collect()
        held.append(send(begin)[1])
    assert torch.equal(kept, want["image"][1:3])
    del kept
    gc.collect()
    reused_slot, _ = send(0)
    assert reused_slot is ring.slots[0]  # the first place of the ring, free again (grown if short)


@pytest.mark.slow
def test_dataloader_workers_give_the_batches_of_one_process_whether_each_is_kept_or_freed(
    every_codec: Path,
) -> None:
    # frames (lists of read-only arrays) left out: the DataLoader's default_convert warns on them
    ds = rk.open(every_codec, "train").select([name for name in EVERY_CODEC.fields if name != "frames"])
    options: dict[str, Any] = {"concat": ["speech"], "shuffle": True, "seed": 2, "window": 4}
    want = list(ds.torch_batches(1, **options))
    assert len(want) == 12
    # one batch in flight per worker: each worker's 6 batches go round its first slots
    one_at_a_time = DataLoader(
        ds.torch_batches(1, **options), batch_size=None, num_workers=2, prefetch_factor=1
    )
    for expected, batch in zip(want, one_at_a_time, strict=True):
        assert_same(expected, batch)  # each freed before the next arrives
    kept = list(DataLoader(ds.torch_batches(1, **options), batch_size=None, num_workers=2))
    for expected, batch in zip(want, kept, strict=True):
        assert_same(expected, batch)  # every batch held: none overwritten


_REFAULTS = """
import resource, sys
import numpy as np
from recordkit.read._worker_malloc import keep_freed_memory

if sys.argv[1] == "keep":
    assert keep_freed_memory()


def batch():  # a batch's decoded pictures, made and freed
    pictures = [np.ones(300_000, np.uint8) for _ in range(64)]
    del pictures


batch()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    batch()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_a_worker_keeps_freed_memory_so_the_next_batch_reuses_its_pages() -> None:
    def page_faults(mode: str) -> int:
        done = subprocess.run(
            [sys.executable, "-c", _REFAULTS, mode], capture_output=True, text=True, check=True
        )
        return int(done.stdout)

    given_back = page_faults("default")
    kept = page_faults("keep")
    assert given_back > 5 * 64 * 50  # every picture's pages faulted in again, batch after batch
    assert kept < given_back // 10
