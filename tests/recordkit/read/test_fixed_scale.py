"""Readers that resize choose, once per picture field, one decode for all its pictures
from the sizes the dataset records (``picture_sizes``): the plain decode when no picture
is large enough to scale, one libjpeg scale when every picture is a JPEG at least that
many times the target. tf.data then builds no branch in its per-record map; datasets
written before (no sizes) decode picture by picture as they always did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _photos import jpeg, photo, psnr

import recordkit as rk
from recordkit.read._wire_checks import CHECK_BRANCH

SIZE = (224, 224)
#: The ops TensorFlow's control flow becomes in a tf.data function.
CONTROL_FLOW = {"Case", "StatelessCase", "If", "StatelessIf", "While", "StatelessWhile"}
PHOTO = rk.Schema(name="photos", fields={"photo": rk.FieldSpec(codec="image", options={"format": "keep"})})
#: 200 to 320 px: no scale covers 224 (the plain decode).
SMALL = [(250, 300), (200, 320), (311, 207)]
#: 1,024 to 2,048 px: scale 4 covers 224 in each, scale 8 in the largest only.
LARGE = [(1024, 1100), (2048, 1900), (1411, 1057)]


def _jpegs(sides: list[tuple[int, int]]) -> list[bytes]:
    kinds = ["4:2:0", "4:4:4", "progressive"]
    return [
        jpeg(photo(h, w, i, detailed=i % 2 == 1), kinds[i % len(kinds)]) for i, (h, w) in enumerate(sides)
    ]


def _write(root: Path, sides: list[tuple[int, int]]) -> Path:
    rk.write_dataset([{"photo": data} for data in _jpegs(sides)], PHOTO, root, progress=False)
    return root


def _as_written_before(root: Path, copy: Path) -> Path:
    """The dataset as a recordkit before picture sizes wrote it (format 2, none)."""
    shutil.copytree(root, copy)
    data = json.loads((copy / "dataset.json").read_text())
    del data["splits"]["train"]["picture_sizes"]
    data["format"] = "recordkit.dataset/2"
    (copy / "dataset.json").write_text(json.dumps(data))
    return copy


def _control_flow(dataset: tf.data.Dataset) -> set[str]:
    """The control-flow ops in the graph of ``dataset`` and its functions (the maps'), but
    the batch parse's value-count check (one branch a batch, whose message is made only
    when a record fails: :data:`~recordkit.read._wire_checks.CHECK_BRANCH`)."""
    serialized = tf.raw_ops.DatasetToGraphV2(input_dataset=dataset._variant_tensor).numpy()
    graph = tf.compat.v1.GraphDef.FromString(serialized)
    nodes = list(graph.node)
    for function in graph.library.function:
        nodes += function.node_def
    return {node.op for node in nodes if CHECK_BRANCH not in node.name} & CONTROL_FLOW


def _tf(root: Path, **layout: Any) -> list[np.ndarray]:
    return [
        record["photo"] for record in rk.load_dataset(root, image_size=SIZE, **layout).as_numpy_iterator()
    ]


def _numpy(root: Path, **geometry: Any) -> list[np.ndarray]:
    plan = rk.ImageGeometry(size=SIZE, **geometry)
    return [record["photo"] for record in rk.open(root).records(geometry=plan)]


@pytest.mark.parametrize("sides", [SMALL, LARGE], ids=["small", "large"])
@pytest.mark.parametrize("batch_size", [None, 2])
def test_tf_data_builds_no_branch_for_pictures_that_share_one_decode(
    tmp_path: Path, sides: list[tuple[int, int]], batch_size: int | None
) -> None:
    """Small pictures (plain decode) and large ones (one scale for all) read with no
    control flow in the pipeline's functions; the same dataset without recorded sizes
    chooses record by record (a switch over the scales), as before."""
    root = _write(tmp_path / "data", sides)
    assert _control_flow(rk.load_dataset(root, image_size=SIZE, batch_size=batch_size)) == set()
    before = _as_written_before(root, tmp_path / "before")
    assert _control_flow(rk.load_dataset(before, image_size=SIZE, batch_size=batch_size)) & {
        "Case",
        "StatelessCase",
    }


def test_small_pictures_read_with_the_very_pixels_of_the_full_decode_in_both_readers(tmp_path: Path) -> None:
    """tf.data gives the full decode's pixels exactly, the numpy reader its own full
    decode's exactly (and tf.data's within a level, float rounding apart)."""
    root = _write(tmp_path / "data", SMALL)
    before = _as_written_before(root, tmp_path / "before")
    full, numpy_full = _tf(root, jpeg_scale="full"), _numpy(root, jpeg_scale="full")
    for got, want in zip(_tf(root), full, strict=True):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(_tf(before), full, strict=True):
        np.testing.assert_array_equal(got, want)
    for got, want, other in zip(_numpy(root), numpy_full, full, strict=True):
        np.testing.assert_array_equal(got, want)
        assert np.abs(got.astype(int) - other).max() <= 1


@pytest.mark.parametrize("fit", ["resize", "resize_with_pad"])
def test_large_pictures_decode_at_the_smallest_pictures_scale_in_both_readers(
    tmp_path: Path, fit: str
) -> None:
    """Every picture decodes at 1/4, the 2,048 px one too (alone it would take 1/8):
    tf.data and the numpy reader agree within a level; the pictures whose own scale is 4
    read exactly as a dataset without sizes reads them; each is at least as close to the
    full decode resized with antialiasing as the full decode's own resize is."""
    root = _write(tmp_path / "data", LARGE)
    before = _as_written_before(root, tmp_path / "before")
    mine, theirs = _tf(root, image_fit=fit), _tf(before, image_fit=fit)
    full = _tf(root, image_fit=fit, jpeg_scale="full")
    for index, (got, other) in enumerate(zip(mine, _numpy(root, fit=fit), strict=True)):
        assert np.abs(got.astype(int) - other).max() <= 1, index
    np.testing.assert_array_equal(mine[0], theirs[0])
    np.testing.assert_array_equal(mine[2], theirs[2])
    assert not np.array_equal(mine[1], theirs[1])
    for index, data in enumerate(_jpegs(LARGE)):
        decoded = tf.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE")
        if fit == "resize":
            ideal = tf.image.resize(decoded, SIZE, antialias=True)
        else:
            ideal = tf.image.resize_with_pad(decoded, *SIZE, antialias=True)
        ideal = np.asarray(tf.saturate_cast(tf.round(ideal), tf.uint8))
        assert psnr(mine[index], ideal) >= psnr(full[index], ideal), index


def test_resize_with_pad_places_a_2048_px_picture_as_tf_image_does_in_the_numpy_reader(
    tmp_path: Path,
) -> None:
    """tf.image.resize_with_pad computes in float32: 2,048 px to 224 fills 223 pixels
    there (2048 / 9.142858), where float64 gives 224; the numpy reader follows float32."""
    root = _write(tmp_path / "data", [(2048, 1900)])
    (mine,) = _numpy(root, fit="resize_with_pad", jpeg_scale="full")
    (theirs,) = _tf(root, image_fit="resize_with_pad", jpeg_scale="full")
    assert np.abs(mine.astype(int) - theirs).max() <= 1
