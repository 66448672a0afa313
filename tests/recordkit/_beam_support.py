"""Helpers of the Beam writer's tests (tests/recordkit/write/test_beam*.py): a schema
with an image, records, and pipelines run on the DirectRunner."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import apache_beam as beam
import numpy as np
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
