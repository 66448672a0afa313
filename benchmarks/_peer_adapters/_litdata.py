"""LitData as its docs advise (https://lightning.ai/docs/litdata/quick-start, "Optimize the
data" and "Stream the data"; https://lightning.ai/docs/litdata/features/custom-data-transforms):
``optimize(fn, inputs, output_dir, chunk_bytes)`` writes the chunks (its worker processes
call ``fn`` per input), then a ``StreamingDataset`` subclass whose ``__getitem__`` decodes,
under ``StreamingDataLoader(batch_size=64, num_workers=...)``; random access is
``dataset[i]``. The JPEG and WAV are stored as ``bytes`` (a PIL image would be
re-encoded), decoded with Pillow to uint8 HWC and soundfile to int16.

``optimize`` sets the process's multiprocessing start method to ``spawn`` for good
(``multiprocessing.set_start_method(..., force=True)``, to run its own workers). A user
optimizes once and trains in another process, where a ``StreamingDataLoader``'s workers
are forked as usual; so :func:`write` puts the start method back as it was. Left at
``spawn``, every worker of the loaders timed after the write re-imported torch and
LitData: about 5 s of CPU a loader, 2,500 to 6,000 µs a record of the 1,500."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import litdata
import numpy as np

from benchmarks._data import MixedRecord
from benchmarks._peer_adapters._decode import field_lists, jpeg_pixels, wav_samples

DOC = "https://lightning.ai/docs/litdata/quick-start"


def _sample(r: MixedRecord) -> dict[str, Any]:
    return {
        "jpeg": r.jpeg,
        "wav": r.wav,
        "caption": r.caption,
        "boxes": r.boxes.astype(np.float32),
        "box_labels": r.box_labels.astype(np.int64),
        "label": int(r.label),
    }


def write(records: list[MixedRecord], folder: Path) -> int:
    start_method = multiprocessing.get_start_method(allow_none=True)
    litdata.optimize(  # its worker processes are spawned: the records go to them as inputs
        fn=_sample,
        inputs=records,
        output_dir=str(folder / "data"),
        chunk_bytes="64MB",
        num_workers=2,
        mode="overwrite",
    )
    multiprocessing.set_start_method(start_method, force=True)  # see the module docstring
    return len(records)


class DecodedDataset(litdata.StreamingDataset):  # type: ignore[misc]  # untyped (not in the dev venv)
    """The docs' subclass: ``__getitem__`` decodes the stored sample."""

    def __getitem__(self, index: Any) -> dict[str, Any]:
        sample = super().__getitem__(index)
        return {
            "image": jpeg_pixels(sample["jpeg"]),
            "audio": wav_samples(sample["wav"]),
            "caption": sample["caption"],
            "boxes": np.asarray(sample["boxes"]).reshape(-1, 4),
            "box_labels": sample["box_labels"],
            "label": sample["label"],
        }


def _dataset(folder: Path, shuffle: bool) -> DecodedDataset:
    return DecodedDataset(str(folder / "data"), shuffle=shuffle, seed=0)


def read(folder: Path) -> int:
    return sum(1 for _ in _dataset(folder, shuffle=False))


def own_loader(folder: Path, batch: int, workers: int) -> int:
    loader = litdata.StreamingDataLoader(
        _dataset(folder, shuffle=True), batch_size=batch, num_workers=workers, collate_fn=field_lists
    )
    return sum(len(b["caption"]) for b in loader)


def random(folder: Path, indices: list[int], batch: int) -> int:
    """``dataset[i]`` for each index: LitData has no call that reads a batch of indices."""
    dataset = _dataset(folder, shuffle=False)
    return sum(1 for i in indices if dataset[i] is not None)
