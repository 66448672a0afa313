"""tf.data parses and decodes fields of one fixed shape (a field group's embeddings and
labels, say) a chunk of batches at a time and rebatches the decoded values
(sdk/recordkit/read/_load_dataset.py, ``parse_chunk``): the batches, values, dtypes and
shapes are those of the batch-by-batch read, whatever the batch options (with
``drop_remainder``, the batch dimension is known for every field)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

import recordkit as rk
from recordkit.read import _load_dataset  # private: the chunk size, and the chunk each read used

NUMBERS = {"stored": "numbers"}
FIXED = rk.Schema(
    name="fixed",
    fields={
        "embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [4, 3]}),
        "counts": rk.FieldSpec(codec="tensor", options={"dtype": "int16", "shape": [5], **NUMBERS}),
        "scores": rk.FieldSpec(codec="tensor", options={"dtype": "float64", "shape": [2], **NUMBERS}),
        "flags": rk.FieldSpec(codec="tensor", options={"dtype": "bool", "shape": [3]}),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 1000}),
        "count": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
        "ratio": rk.FieldSpec(codec="scalar", options={"dtype": "float64"}),
        "code": rk.FieldSpec(codec="text"),
        "tags": rk.FieldSpec(codec="label", options={"num_classes": 5, "multi": True}),
        "extra": rk.FieldSpec(codec="tensor", options={"dtype": "uint8", "shape": [2]}, optional=True),
    },
)
GROUP = rk.Schema(
    name="predictions",
    fields={
        "vector": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [6]}),
        "predicted": rk.FieldSpec(codec="label", options={"num_classes": 300}),
    },
)
RECORDS = 203


def _records() -> list[dict[str, Any]]:
    rng = np.random.default_rng(11)
    return [
        {
            "embedding": rng.normal(size=(4, 3)).astype(np.float32),
            "counts": rng.integers(-300, 300, size=5).astype(np.int16),
            "scores": rng.normal(size=2).astype(np.float32).astype(np.float64),
            "flags": rng.integers(0, 2, size=3).astype(bool),
            "label": int(rng.integers(0, 1000)),
            "count": int(rng.integers(-(2**40), 2**40)),
            "ratio": float(rng.normal()),
            "code": f"c{i % 7}" * (1 + i % 3),
            "tags": [int(t) for t in rng.permutation(5)[: 1 + i % 3]],
            "extra": None if i % 4 == 0 else np.array([i % 256, 7], np.uint8),
        }
        for i in range(RECORDS)
    ]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chunks") / "data"
    rk.write_dataset(_records(), FIXED, path, shard_records=40, progress=False)
    rng = np.random.default_rng(12)
    added = [
        {"vector": rng.normal(size=6).astype(np.float32), "predicted": int(rng.integers(0, 300))}
        for _ in range(RECORDS)
    ]
    rk.add_fields(path, "train", GROUP, added, name="predictions")
    return path


def _read(
    path: Path, fields: list[str], monkeypatch: pytest.MonkeyPatch, chunked: bool, **options: Any
) -> Any:
    """Every batch of the read, its element spec, and the chunk it parsed (None: batch by batch)."""
    used: list[int | None] = []
    serialized = _load_dataset._serialized_batches

    def spied(*args: Any) -> Any:
        used.append(args[-1])
        return serialized(*args)

    with monkeypatch.context() as patched:
        patched.setattr(_load_dataset, "_serialized_batches", spied)
        patched.setattr(_load_dataset, "CHUNKED_FROM_RECORDS", 0)  # this split's 203 records are few
        if not chunked:
            patched.setattr(_load_dataset, "PARSE_CHUNK", 0)
        ds = rk.open(path, fields=fields).tf(**options)
    return [tf.nest.map_structure(lambda t: t.numpy(), batch) for batch in ds], ds.element_spec, used[0]


OPTIONS = [
    {"batch_size": 16},
    {"batch_size": 16, "drop_remainder": True},
    {"batch_size": 50, "repeat": 2},
    {"batch_size": 32, "shuffle_buffer": 64, "seed": 5},
    {"batch_size": 16, "shuffle_files": True, "seed": 5, "drop_remainder": True},
]
FIXED_FIELDS = ["embedding", "counts", "scores", "flags", "label", "count", "ratio", "code"]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("fields", [FIXED_FIELDS, ["vector", "predicted"], ["vector", "label"]], ids=len)
def test_fields_of_one_shape_read_in_chunks_give_the_batches_of_the_batch_by_batch_read(
    dataset: Path, fields: list[str], options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    chunked, chunked_spec, chunk = _read(dataset, fields, monkeypatch, True, **options)
    plain, plain_spec, none = _read(dataset, fields, monkeypatch, False, **options)
    assert chunk == _load_dataset.PARSE_CHUNK // options["batch_size"] * options["batch_size"]
    assert none is None
    # The same specs, but that with drop_remainder every batch dimension is known (the
    # batch-by-batch read leaves it unknown where a codec's decode reshapes).
    assert list(chunked_spec) == list(plain_spec)
    for key, spec in plain_spec.items():
        assert chunked_spec[key].dtype == spec.dtype, key
        assert chunked_spec[key].shape[1:] == spec.shape[1:], key
        assert spec.shape.is_compatible_with(chunked_spec[key].shape), key
        if options.get("drop_remainder"):
            assert chunked_spec[key].shape[0] == options["batch_size"], key
    assert len(chunked) == len(plain) > 1
    for got, want in zip(chunked, plain, strict=True):
        assert list(got) == list(want)
        for key in want:
            assert got[key].dtype == want[key].dtype, key
            assert got[key].shape == want[key].shape, key
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)


@pytest.mark.parametrize("fields", [["embedding", "tags"], ["extra", "label"]], ids=["a list", "an optional"])
def test_a_field_of_varying_shape_or_presence_is_parsed_batch_by_batch(
    dataset: Path, fields: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    chunked, _, chunk = _read(dataset, fields, monkeypatch, True, batch_size=16)
    plain, _, _ = _read(dataset, fields, monkeypatch, False, batch_size=16)
    assert chunk is None
    assert len(chunked) == len(plain) == -(-RECORDS // 16)


def test_large_records_are_parsed_batch_by_batch_whatever_their_fields(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1,600 bytes hold fewer than two batches of these records (over 100 bytes each).
    monkeypatch.setattr(_load_dataset, "_CHUNK_BYTES", 1600)
    chunked, _, chunk = _read(dataset, ["embedding", "label"], monkeypatch, True, batch_size=16)
    assert chunk is None
    assert len(chunked) == -(-RECORDS // 16)


def test_a_read_of_few_records_parses_batch_by_batch(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``CHUNKED_FROM_RECORDS`` records the chunks would cost more at each
    iterator's start than they save: the same batches, parsed batch by batch."""
    used: list[int | None] = []
    serialized = _load_dataset._serialized_batches

    def spied(*args: Any) -> Any:
        used.append(args[-1])
        return serialized(*args)

    monkeypatch.setattr(_load_dataset, "_serialized_batches", spied)
    batches = list(rk.open(dataset, fields=["vector", "predicted"]).tf(batch_size=16))
    assert RECORDS < _load_dataset.CHUNKED_FROM_RECORDS
    assert used == [None]
    assert sum(int(batch["predicted"].shape[0]) for batch in batches) == RECORDS
