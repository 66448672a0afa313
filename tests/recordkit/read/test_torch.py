"""recordkit.torch (sdk/recordkit/read/_torch.py): real DataLoaders with 2 workers and 2
simulated ranks over a real dataset, exact resume, collate's padding, no TensorFlow."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import make_records, run_without_tensorflow, write

import recordkit as rk

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402

from recordkit.torch import IterableDataset, MapDataset, collate, to_tensors  # noqa: E402

N = 22


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N, seed=3)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("torch") / "data"
    write(path, records, shard_records=3)  # 8 shards: 2 per worker slot of 2 ranks x 2 workers
    return path


def captions(batches: Any) -> list[str]:
    return [caption for batch in batches for caption in batch["caption"]]


def check_values(batch: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Each record of a collated batch holds what was written (found by its caption)."""
    by_caption = {r["caption"]: r for r in records}
    for row, caption in enumerate(batch["caption"]):
        want = by_caption[caption]
        h, w = want["image"].shape[:2]
        assert batch["image/shape"][row].tolist() == [h, w, 3]
        assert torch.equal(batch["image"][row, :h, :w], torch.from_numpy(want["image"]))
        assert torch.equal(batch["mask"][row, :h, :w], torch.from_numpy(want["mask"]))
        n = len(want["audio"])
        assert torch.allclose(batch["audio"][row, :n, 0], torch.from_numpy(want["audio"] / np.float32(32768)))
        assert int(batch["label"][row]) == ["a", "b", "c"].index(want["label"])


@pytest.mark.slow
def test_map_dataset_with_distributed_sampler_reads_every_record_once(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    ds = MapDataset(dataset, fields=["caption", "image", "mask", "audio", "label"])
    seen: list[str] = []
    for rank in range(2):  # two simulated ranks, each with a DataLoader of 2 workers
        sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=5)
        loader = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=2, collate_fn=ds.collate_fn)
        for batch in loader:
            check_values(batch, records)
            seen += batch["caption"]
    assert Counter(seen) == Counter(r["caption"] for r in records)  # N is even: no padding


@pytest.mark.slow
def test_iterable_dataset_splits_shards_between_ranks_and_workers(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    epochs = []
    for epoch in range(2):
        seen: list[str] = []
        for rank in range(2):
            ds = IterableDataset(
                dataset,
                fields=["caption", "image", "mask", "audio", "label"],
                shuffle=True,
                seed=7,
                window=4,
                rank=rank,
                world_size=2,
            )
            ds.set_epoch(epoch)
            for batch in DataLoader(ds, batch_size=3, num_workers=2, collate_fn=ds.collate_fn):
                check_values(batch, records)
                seen += batch["caption"]
        assert sorted(seen) == sorted(r["caption"] for r in records)  # each exactly once
        epochs.append(seen)
    assert epochs[0] != epochs[1]  # set_epoch: another order


@pytest.mark.slow
@pytest.mark.parametrize("shuffle", [False, True])
def test_a_dataloader_resumes_with_exactly_the_remaining_batches(dataset: Path, shuffle: bool) -> None:
    def loader(ds: IterableDataset) -> DataLoader[Any]:
        return DataLoader(ds, batch_size=2, num_workers=2, collate_fn=ds.collate_fn)

    # batch_size: records dealt in blocks of a batch, so a resumed DataLoader's batches
    # are the batches the first one had left, whatever its number of workers.
    options: dict[str, Any] = {
        "fields": ["caption"],
        "shuffle": shuffle,
        "seed": 11,
        "window": 5,
        "batch_size": 2,
    }
    ds = IterableDataset(dataset, **options)
    full = [batch["caption"] for batch in loader(ds)]
    written = [r["caption"] for r in rk.iter_records(dataset, fields="caption")]
    assert sorted(c for batch in full for c in batch) == sorted(written)
    # Workers hold 12 and 10 records: after 9 batches only 2 batches are left.
    for taken in (3, 9):
        state = ds.loader_state(taken, batch_size=2, num_workers=2)
        assert state["position"] == 2 * taken
        resumed = IterableDataset(dataset, start=state, **options)
        assert [batch["caption"] for batch in loader(resumed)] == full[taken:]
    with pytest.raises(ValueError, match="saved with other options"):
        IterableDataset(dataset, **{**options, "seed": 12}, start=state)


def test_iterating_in_process_gives_a_state_to_resume_from(dataset: Path) -> None:
    ds = IterableDataset(dataset, fields=["caption"], shuffle=True, seed=2, window=3, tensors=False)
    everything = [r["caption"] for r in ds]
    iterator = iter(ds)
    head = [next(iterator)["caption"] for _ in range(7)]
    state = ds.state_dict()
    assert state["position"] == 7
    resumed = IterableDataset(dataset, fields=["caption"], shuffle=True, seed=2, window=3, start=state)
    assert head + [r["caption"] for r in resumed] == everything
    assert sorted(everything) == sorted(r["caption"] for r in rk.iter_records(dataset, fields="caption"))


def test_collate_pads_images_audio_boxes_and_masks_with_their_pad_values(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    ds = MapDataset(dataset, fields=["image", "mask", "audio", "objects", "caption", "note", "weight"])
    batch = ds.collate_fn([ds[i] for i in range(4)])
    sizes = [records[i]["image"].shape[:2] for i in range(4)]
    height, width = max(s[0] for s in sizes), max(s[1] for s in sizes)
    assert batch["image"].shape == (4, height, width, 3)
    assert batch["image/shape"].tolist() == [[h, w, 3] for h, w in sizes]
    assert batch["mask/shape"].tolist() == [[h, w] for h, w in sizes]
    for row, (h, w) in enumerate(sizes):
        assert bool((batch["image"][row, h:, :] == 0).all())
        # The mask codec pads with its ignore index (255 by default), as load_dataset does.
        pad = ds.records.dataset.bound["mask"].codec.pad_value()
        assert bool((batch["mask"][row, h:, :] == pad).all())
        assert bool((batch["mask"][row, :, w:] == pad).all())
    assert batch["audio/shape"][:, 0].tolist() == [len(records[i]["audio"]) for i in range(4)]
    boxes = [len(records[i]["objects"]["boxes"]) for i in range(4)]
    assert batch["objects"]["boxes"].shape == (4, max(boxes), 4)
    assert batch["objects/boxes/shape"][:, 0].tolist() == boxes
    assert batch["caption"] == [records[i]["caption"] for i in range(4)]
    assert batch["note"] == [records[i]["note"] for i in range(4)]  # None for absent optionals
    assert batch["weight"].dtype == torch.float64
    assert collate([]) == {}


def test_arrays_become_tensors_without_a_copy() -> None:
    array = np.arange(6, dtype=np.int16).reshape(2, 3)
    tensor = to_tensors({"a": array})["a"]
    array[0, 0] = 42
    assert int(tensor[0, 0]) == 42  # shares the memory
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    assert to_tensors(frozen).tolist() == [0.0, 1.0, 2.0]  # copied, without a warning
    assert to_tensors(["x", None]) == ["x", None]


@pytest.mark.slow
def test_the_torch_and_grain_paths_import_no_tensorflow(dataset: Path) -> None:
    out = run_without_tensorflow(
        f"""
        from torch.utils.data import DataLoader
        import recordkit.torch, recordkit.grain
        ds = recordkit.torch.IterableDataset({str(dataset)!r}, shuffle=True)
        total = sum(len(b["caption"]) for b in DataLoader(ds, batch_size=4, collate_fn=ds.collate_fn))
        m = recordkit.torch.MapDataset({str(dataset)!r})
        source = recordkit.grain.DataSource({str(dataset)!r})
        ra = rk.RandomAccess({str(dataset)!r})
        print(total, len(m), len(source), len(ra), m[3]["image"].shape[-1], "tensorflow" in sys.modules)
        """
    )
    assert out.split() == [str(N)] * 4 + ["3", "False"]


@pytest.mark.slow
def test_a_missing_extra_names_it() -> None:
    out = run_without_tensorflow(
        """
        import importlib.abc
        class NoTorch(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "torch":
                    raise ImportError("blocked")
        sys.meta_path.insert(0, NoTorch())
        try:
            import recordkit.torch
        except ImportError as exc:
            print(type(exc).__name__, exc)
        """
    )
    assert "MissingExtraError" in out
    assert "pip install 'recordkit[torch]'" in out
