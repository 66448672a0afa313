"""Helpers of the Beam writer's tests (tests/recordkit/write/test_beam*.py): a schema
with an image, records, pipelines run on the DirectRunner, and the one pipeline those
tests run on the DirectRunner's worker processes (:func:`write_on_worker_processes`)."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import apache_beam as beam
import numpy as np
from _photos import jpeg, photo
from _writer_support import make_records
from apache_beam.options.pipeline_options import PipelineOptions
from PIL import Image

import recordkit as rk

SCHEMA = rk.Schema(
    name="beam-test",
    fields={
        "id": rk.FieldSpec(codec="scalar"),
        "payload": rk.FieldSpec(codec="scalar", options={"dtype": "str"}),
        "image": rk.FieldSpec(codec="image"),
    },
)


def _png(i: int) -> bytes:
    pixels = np.full((6 + i % 5, 7, 3), i % 251, dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def records(n: int, *, start: int = 0, bad: frozenset[int] = frozenset()) -> list[dict[str, Any]]:
    """``n`` records with ids from ``start``: a text payload and a real PNG each; the ids
    in ``bad`` get an int payload, which the ``str`` scalar codec refuses."""
    return [{**r, "id": r["id"] + start, "image": _png(r["id"])} for r in make_records(n, bad=bad)]


def run(
    pipeline_body: Any, *, workers: int = 1, processes: bool = False
) -> beam.runners.runner.PipelineResult:
    options = PipelineOptions(
        flags=[],
        direct_num_workers=workers,
        direct_running_mode="multi_processing" if processes else "in_memory",
    )
    pipeline = beam.Pipeline(runner="DirectRunner", options=options)
    pipeline_body(pipeline)
    result = pipeline.run()
    result.wait_until_finish()
    return result


def write_beam(root: Path, splits: dict[str, list[dict[str, Any]]], **kwargs: Any) -> Any:
    def body(p: beam.Pipeline) -> None:
        inputs = {name: p | f"Create[{name}]" >> beam.Create(items) for name, items in splits.items()}
        inputs | rk.beam.WriteDataset(SCHEMA, root, **kwargs)

    return body


def canonical(root: Path, split: str) -> dict[int, tuple[str, bytes]]:
    """A split's records by id (read without TensorFlow): payload and decoded pixels."""
    found: dict[int, tuple[str, bytes]] = {}
    for r in rk.iter_records(root, split):
        assert int(r["id"]) not in found, f"record {r['id']} twice"
        found[int(r["id"])] = (str(r["payload"]), np.asarray(r["image"]).tobytes())
    return found


def shard_hashes(root: Path) -> dict[str, list[str]]:
    manifest = rk.Manifest.load(root)
    return {name: [s.sha256 for s in split.shards] for name, split in manifest.splits.items()}


def write_to(
    url: str, splits: dict[str, list[dict[str, Any]]], storage_options: dict[str, Any], **kwargs: Any
) -> Any:
    """A pipeline body writing ``splits`` to a bucket's ``url`` (keyed by id)."""

    def body(p: beam.Pipeline) -> None:
        inputs = {name: p | f"Create[{name}]" >> beam.Create(items) for name, items in splits.items()}
        inputs | rk.beam.WriteDataset(SCHEMA, url, key="id", storage_options=storage_options, **kwargs)

    return body


def read_ids(
    root: Path | str, split: str = "train", storage_options: dict[str, Any] | None = None
) -> list[int]:
    """A split's record ids, sorted (a record there twice appears twice)."""
    return sorted(int(r["id"]) for r in rk.iter_records(root, split, storage_options=storage_options))


#: Large photos (1,024 to 2,048 px, every one covering 224 at 1/4) kept as their JPEG
#: bytes: the picture sizes' tests (test_beam_picture_sizes.py).
PHOTO = rk.Schema(name="photos", fields={"photo": rk.FieldSpec(codec="image", options={"format": "keep"})})
LARGE = [(1024, 1100), (2048, 1900), (1411, 1057), (1300, 1700)]


def photo_records() -> list[dict[str, bytes]]:
    """One record of :data:`PHOTO` a size of :data:`LARGE`, of four kinds of JPEG."""
    kinds = ["4:2:0", "4:4:4", "progressive", "4:2:2"]
    return [
        {"photo": jpeg(photo(h, w, i, detailed=i % 2 == 1), kinds[i % len(kinds)])}
        for i, (h, w) in enumerate(LARGE)
    ]


def keyed_splits() -> dict[str, list[dict[str, Any]]]:
    """The splits test_beam.py writes with one worker, two and the local writer."""
    return {"train": records(160), "test": records(40, start=1000)}


@dataclasses.dataclass(frozen=True)
class WorkerProcessesWrite:
    """What :func:`write_on_worker_processes` wrote: :func:`keyed_splits` keyed by id in
    shards of about 4,000 bytes (``keyed``), and :func:`photo_records` in 2 shards
    (``photos``)."""

    keyed: Path
    photos: Path


def write_on_worker_processes(root: Path) -> WorkerProcessesWrite:
    """Both datasets written by one pipeline on the DirectRunner's two worker processes
    (each starts Python and imports Beam and recordkit: about 4 s of CPU a pipeline, the
    cost of every pipeline run this way), so that what travels from worker processes to
    the commit (shards, picture sizes) is checked with one start of them."""
    done = WorkerProcessesWrite(keyed=root / "keyed", photos=root / "photos")

    def body(p: beam.Pipeline) -> None:
        splits = keyed_splits()
        inputs = {name: p | f"Create[{name}]" >> beam.Create(items) for name, items in splits.items()}
        inputs | "Keyed" >> rk.beam.WriteDataset(SCHEMA, done.keyed, key="id", shard_bytes=4000)
        photos = p | "CreatePhotos" >> beam.Create(photo_records())
        photos | "Photos" >> rk.beam.WriteDataset(PHOTO, done.photos, num_shards=2)

    run(body, workers=2, processes=True)
    return done
