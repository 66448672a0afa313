"""docs/tutorials/arrays-and-shapes.md: the page's examples run and print what it shows;
the arrays it writes come back in their shapes, and what the page says of tensor fields
of varying shape (stored shape, ragged, padded, a named size) holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recordkit as rk


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "tutorials" / "arrays-and-shapes.md")
    page_examples.run_python_blocks(blocks)
    checked = [b for b in blocks if b.language == "text" and b.adjacent]
    assert len(checked) == len([b for b in blocks if b.language == "python"]), "each example shows its output"

    # The page's arrays, made again with its seed: every one comes back exactly, in shape.
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (64, 64, 64, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, 64)
    sizes = rng.integers(24, 64, (64, 2))
    pictures = [rng.integers(0, 256, (int(h), int(w), 3), dtype=np.uint8) for h, w in sizes]
    stored = list(rk.iter_records("data/random"))
    assert len(stored) == 64
    for record, image, label in zip(stored, images, labels, strict=True):
        np.testing.assert_array_equal(record["image"], image)
        assert record["label"] == label
    manifest = rk.Manifest.load("data/random")
    assert manifest.schema.fields["image"].options["shape"] == [64, 64, 3]
    for record, picture in zip(rk.iter_records("data/pictures"), pictures, strict=True):
        np.testing.assert_array_equal(record["image"], picture)


def test_tensor_fields_of_varying_shape_read_as_the_page_says(in_tmp_path: Path) -> None:
    """The page's paragraph on tensor fields with ``shape: [null, null, 3]``."""
    tf = pytest.importorskip("tensorflow")
    schema = rk.Schema.loads(
        "name: arrays\nfields:\n  pixels: {codec: tensor, options: {dtype: uint8, shape: [null, null, 3]}}\n"
    )
    rng = np.random.default_rng(1)
    arrays = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(5, 7), (9, 4), (6, 6)]]
    rk.write_dataset([{"pixels": a} for a in arrays], schema, "data/arrays")
    assert "pixels/shape" in rk.feature_spec(schema), "the shape is stored next to the bytes"

    ragged = next(iter(rk.load_dataset("data/arrays", batch_size=3)))["pixels"]
    assert isinstance(ragged, tf.RaggedTensor)
    for i, array in enumerate(arrays):
        np.testing.assert_array_equal(ragged[i].numpy(), array)

    padded = next(iter(rk.load_dataset("data/arrays", batch_size=3, pad=True)))
    assert padded["pixels"].shape == (3, 9, 7, 3)
    assert padded["pixels/shape"].numpy().tolist() == [[5, 7, 3], [9, 4, 3], [6, 6, 3]]
    np.testing.assert_array_equal(padded["pixels"][1, :9, :4].numpy(), arrays[1])
    assert not padded["pixels"][1, :, 4:].numpy().any(), "padded with zeros on the right"

    size = {"pixels": (6, 6)}
    fixed = next(iter(rk.load_dataset("data/arrays", batch_size=3, image_size=size, image_fit="crop_or_pad")))
    assert fixed["pixels"].shape == (3, 6, 6, 3)
    np.testing.assert_array_equal(fixed["pixels"][2].numpy(), arrays[2])
