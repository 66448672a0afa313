"""recordkit.torch's batch-first readers (sdk/recordkit/read/_batch_loader.py and
_batch_assemble.py): the same values as today's readers for every built-in codec, the
same batches and resume from DataLoader workers and from threads, over real shards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import EVERY_CODEC, every_codec_records, make_records, write

import recordkit as rk

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

from recordkit.read._batch_assemble import assemble_batch, batch_layout  # noqa: E402
from recordkit.read._shared_ring import RingArrays, SharedRing  # noqa: E402
from recordkit.read._torch import to_tensors  # noqa: E402
from recordkit.torch import MapDataset, ThreadLoader, collate, pad_values  # noqa: E402

N = 22
BATCH = 4


@pytest.fixture(scope="module")
def every_codec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("batches") / "every"
    rk.write_dataset(every_codec_records(9), EVERY_CODEC, path, progress=False, shard_records=4)
    return path


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("batches") / "data"
    write(path, make_records(N, seed=3), shard_records=3)
    return path


def assert_same(want: Any, got: Any, where: str = "batch") -> None:
    """Equal values, kinds and shapes, through dicts, lists, tensors and arrays."""
    if isinstance(want, dict):
        assert isinstance(got, dict), where
        assert set(got) == set(want), where
        for key in want:
            assert_same(want[key], got[key], f"{where}[{key!r}]")
    elif isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), where
        assert got.dtype == want.dtype, where
        assert got.shape == want.shape, where
        assert torch.equal(got, want), where
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), where
        np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, list):
        assert isinstance(got, list), where
        assert len(got) == len(want), where
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            assert_same(w, g, f"{where}[{i}]")
    else:
        assert got == want, where


def test_batches_hold_what_collate_gives_today_for_every_built_in_codec(every_codec: Path) -> None:
    ds = rk.open(every_codec, "train")
    records = list(rk.iter_records(every_codec))
    pads = pad_values(ds.torch().records)
    want = [collate(records[i : i + BATCH], pads) for i in range(0, len(records), BATCH)]
    got = list(ds.torch_batches(BATCH))
    assert len(got) == len(want) == 3
    for expected, batch in zip(want, got, strict=True):
        assert_same(expected, batch)


def test_concat_joins_ragged_fields_with_their_lengths(every_codec: Path) -> None:
    records = list(rk.iter_records(every_codec))
    stream = rk.open(every_codec, "train").torch_batches(BATCH, concat=["speech", "regions"])
    for begin, batch in zip(range(0, len(records), BATCH), stream, strict=True):
        chunk = records[begin : begin + BATCH]
        for name in ("speech", "regions"):
            np.testing.assert_array_equal(batch[name].numpy(), np.concatenate([r[name] for r in chunk]))
            assert batch[f"{name}/lengths"].tolist() == [len(r[name]) for r in chunk]
            assert f"{name}/shape" not in batch
        assert batch["speech"].dtype == torch.float32
        assert batch["regions"].shape[1:] == (4,)
    images = rk.open(every_codec, "train").torch_batches(BATCH, concat=["image"])
    with pytest.raises(ValueError, match="'image' cannot be laid out 'concat': its arrays differ beyond"):
        next(iter(images))  # images of several widths


def test_images_stay_uint8_and_can_be_laid_out_channels_first(dataset: Path) -> None:
    ds = rk.open(dataset, "train").select(["image", "caption"])
    nhwc = next(iter(ds.torch_batches(BATCH)))
    nchw = next(iter(ds.torch_batches(BATCH, channels_first=["image"])))
    assert nhwc["image"].dtype == torch.uint8
    assert torch.equal(nchw["image"], nhwc["image"].permute(0, 3, 1, 2))
    assert nchw["image/shape"].tolist() == [[c, h, w] for h, w, c in nhwc["image/shape"].tolist()]


def test_layout_options_naming_no_read_field_are_refused(dataset: Path) -> None:
    ds = rk.open(dataset, "train").select(["caption"])
    with pytest.raises(ValueError, match=r"concat names fields that are not read: \['image'\]"):
        ds.torch_batches(BATCH, concat=["image"])
    with pytest.raises(ValueError, match="batch_size must be at least 1, not 0"):
        ds.torch_batches(0)


@pytest.mark.slow
def test_dataloader_workers_and_the_thread_loader_give_the_same_batches_and_resume(dataset: Path) -> None:
    options: dict[str, Any] = {"shuffle": True, "seed": 7, "window": 5}
    ds = rk.open(dataset, "train").select(["caption", "image", "audio", "label"])
    stream = ds.torch_batches(BATCH, **options)
    from_workers = list(DataLoader(stream, batch_size=None, num_workers=2))
    threads = ThreadLoader(stream, num_workers=2, threads=2, prefetch=2)
    from_threads = list(threads)
    assert (
        len(from_threads) == len(threads) == len(from_workers) == 6
    )  # 12 and 10 records: 3 batches of 4 each
    for want, got in zip(from_workers, from_threads, strict=True):
        assert_same(want, got)
    written = sorted(r["caption"] for r in rk.iter_records(dataset, fields="caption"))
    assert sorted(c for b in from_threads for c in b["caption"]) == written
    taken = 4
    iterator = iter(threads)
    for _ in range(taken):
        next(iterator)
    state = threads.state_dict()
    assert state == stream.batches_state(taken, num_workers=2)
    resumed = ds.torch_batches(BATCH, start=state, **options)
    rest_workers = list(DataLoader(resumed, batch_size=None, num_workers=2))
    rest_threads = list(ThreadLoader(resumed, num_workers=2))
    for want, got in zip(from_workers[taken:], rest_workers, strict=True):
        assert_same(want, got)
    for want, got in zip(from_workers[taken:], rest_threads, strict=True):
        assert_same(want, got)
    assert len(rest_workers) == len(rest_threads) == 6 - taken


def test_a_stream_read_in_process_resumes_from_its_state(dataset: Path) -> None:
    ds = rk.open(dataset, "train").select("caption")
    everything = [b["caption"] for b in ds.torch_batches(5, drop_last=True)]
    stream = ds.torch_batches(5, drop_last=True)
    iterator = iter(stream)
    head = [next(iterator)["caption"], next(iterator)["caption"]]
    assert stream.state_dict()["position"] == 10
    rest = [b["caption"] for b in ds.torch_batches(5, drop_last=True, start=stream.state_dict())]
    assert head + rest == everything
    assert len(everything) == N // 5


@pytest.mark.slow
def test_the_map_style_batches_equal_collated_records_of_the_same_indices(dataset: Path) -> None:
    ds = rk.open(dataset, "train").select(["caption", "image", "mask", "audio", "objects", "label"])
    batched = ds.torch_batch_map()
    records = MapDataset.over(batched.records)
    sampler = torch.utils.data.RandomSampler(batched, generator=torch.Generator().manual_seed(3))
    indices = list(sampler)
    loader = DataLoader(
        batched, batch_size=BATCH, sampler=indices, num_workers=2, collate_fn=batched.collate_fn
    )
    for begin, batch in zip(range(0, N, BATCH), loader, strict=True):
        want = records.collate_fn([records[i] for i in indices[begin : begin + BATCH]])
        assert_same(want, batch)


def test_a_batch_laid_out_in_fresh_shared_memory_holds_the_values_of_an_ordinary_batch(
    every_codec: Path,
) -> None:
    """What a DataLoader worker hands over without a copy when its ring has no free
    buffer: each array allocated in fresh shared memory, every pad value written."""
    records = rk.RandomAccess(every_codec)
    layout = batch_layout(records)
    decoded = records.read_batch(list(range(9)))
    arrays = RingArrays(SharedRing(slots=0), None)
    shared = arrays.batch(assemble_batch(decoded, layout, arrays))
    assert type(shared) is dict
    assert_same(to_tensors(assemble_batch(decoded, layout)), shared)
    made = [v for v in shared.values() if isinstance(v, torch.Tensor)]
    assert made
    assert all(v.is_shared() for v in made)
    assert not to_tensors(assemble_batch(decoded, layout))["image"].is_shared()


_FIRST_BATCH_IMPORTS = """
import json, sys
import torch.utils.data
import recordkit as rk

class FirstBatchImports(torch.utils.data.IterableDataset):
    def __init__(self, stream):
        self.stream = stream

    def __iter__(self):
        before = set(sys.modules)
        next(iter(self.stream))
        yield sorted(set(sys.modules) - before)

stream = rk.open(sys.argv[1], "train").torch_batches(4, shuffle=True, seed=0)
loader = torch.utils.data.DataLoader(
    FirstBatchImports(stream), batch_size=None, num_workers=1, multiprocessing_context="fork"
)
print(json.dumps(next(iter(loader))))
"""


def test_a_forked_worker_inherits_the_decoders_imports_instead_of_importing_them_at_its_first_batch(
    dataset: Path,
) -> None:
    # a fresh interpreter, which has decoded nothing before the DataLoader forks
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_BATCH_IMPORTS, str(dataset)], capture_output=True, text=True, check=True
    )
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert not [name for name in imported if name.startswith(("google.protobuf", "numpy."))], imported
