"""A random resized crop of large JPEGs decodes at the scale its window allows: the
window is drawn from the stored size before the decode, the picture decodes at the
largest libjpeg scale at which the window still covers the size, and the window is
resized with antialiasing onto the full picture's geometry; boxes follow exactly as with
the full decode."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _photos import jpeg, photo, psnr
from PIL import Image

import recordkit as rk
from recordkit.read._numpy_geometry import record_draws, window_of, window_scale

TARGET = (64, 64)
#: Large pictures (windows of 1/2 to 1/8 scale) and one whose windows decode in full.
SIDES = [(1200, 1600), (1700, 1100), (2048, 2048), (300, 280)]
COLOURS = np.array([(255, 0, 0), (0, 255, 0), (0, 0, 255)], np.int64)
#: How far (output pixels) a box edge may lie from its rectangle's: the resize blends
#: a pixel at each edge.
TOLERANCE = 1.0


def _scene(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Three rectangles of three colours on black, side by side; their xyxy boxes."""
    picture = np.zeros((height, width, 3), np.uint8)
    boxes = []
    third = width // 3
    for k in range(3):
        x1, x2 = k * third + third // 8, (k + 1) * third - third // 8
        y1 = height // 6 + k * height // 10
        y2 = y1 + height // 3
        picture[y1:y2, x1:x2] = COLOURS[k]
        boxes.append((x1, y1, x2, y2))
    return picture, np.array(boxes, np.float64)


@pytest.fixture(scope="module")
def scenes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    schema = rk.Schema(
        name="scenes",
        fields={
            "image": rk.FieldSpec(codec="image", options={"format": "keep"}),
            "boxes": rk.FieldSpec(
                codec="bbox",
                options={
                    "format": "xyxy",
                    "normalized": False,
                    "labels": ["red", "green", "blue"],
                    "image_field": "image",
                },
            ),
        },
    )
    records = []
    for height, width in SIDES:
        picture, boxes = _scene(height, width)
        records.append(
            {"image": jpeg(picture, "4:4:4", quality=95), "boxes": {"boxes": boxes, "labels": [0, 1, 2]}}
        )
    root = tmp_path_factory.mktemp("scenes") / "data"
    rk.write_dataset(records, schema, root, progress=False)
    return root


def _read(root: Path, reader: str, jpeg_scale: str) -> list[dict[str, Any]]:
    geometry = rk.ImageGeometry(
        size=TARGET,
        fit="random_resized_crop",
        crop_scale=(0.3, 1.0),
        flip=0.5,
        seed=4,
        jpeg_scale=jpeg_scale,  # type: ignore[arg-type]
    )
    ds = rk.open(root)
    if reader == "numpy":
        return list(ds.records(geometry=geometry))
    return list(ds.tf(geometry=geometry, seed=4).as_numpy_iterator())


def _frame(picture: np.ndarray, k: int) -> np.ndarray | None:
    """The xyxy box of the pixels nearer colour k than black and the other colours."""
    pixels = picture.astype(np.int64)
    distances = np.stack([np.abs(pixels - c).sum(-1) for c in (*COLOURS, np.zeros(3, np.int64))])
    where = distances.argmin(0) == k
    rows, cols = np.flatnonzero(where.any(1)), np.flatnonzero(where.any(0))
    if not len(rows):
        return None
    return np.array([cols[0], rows[0], cols[-1] + 1, rows[-1] + 1], np.float64)


@pytest.mark.parametrize("reader", ["numpy", "tf"])
def test_a_random_resized_crop_decodes_large_jpegs_scaled_and_its_boxes_land_on_their_objects(
    scenes: Path, reader: str
) -> None:
    """Each box frames its rectangle in the scaled picture; the boxes are those of the
    full decode's crop (the same windows), and the pixels are not (a scale was taken)."""
    scaled, full = _read(scenes, reader, "auto"), _read(scenes, reader, "full")
    differs = 0
    for got, want in zip(scaled, full, strict=True):
        assert got["image"].shape == (*TARGET, 3)
        np.testing.assert_allclose(got["boxes"]["boxes"], want["boxes"]["boxes"], atol=1e-4)
        differs += not np.array_equal(got["image"], want["image"])
        boxes, labels = np.asarray(got["boxes"]["boxes"]), list(got["boxes"]["labels"])
        for k in range(3):
            shown = _frame(got["image"], k)
            if k not in labels:
                assert shown is None or min(shown[2] - shown[0], shown[3] - shown[1]) <= 1
                continue
            assert shown is not None
            np.testing.assert_allclose(boxes[labels.index(k)], shown, atol=TOLERANCE + 0.01, err_msg=str(k))
    assert differs >= 2


def test_the_numpy_readers_scaled_window_is_the_full_decodes_window_resized_with_antialiasing(
    tmp_path: Path,
) -> None:
    """Against the full decode's window resized with antialiasing (what a downscale of
    the window should give), the scaled decode of detailed photos is at least 40 dB; a
    window too small to scale reads exactly as with the full decode."""
    sides = [(1411, 1057), (2048, 1536), (1024, 1024)]
    pictures = [jpeg(photo(h, w, seed, detailed=True), "4:2:0") for seed, (h, w) in enumerate(sides)]
    schema = rk.Schema(
        name="photos", fields={"image": rk.FieldSpec(codec="image", options={"format": "keep"})}
    )
    root = tmp_path / "data"
    rk.write_dataset([{"image": data} for data in pictures], schema, root, progress=False)
    geometry = rk.ImageGeometry(size=(224, 224), fit="random_resized_crop", seed=9)
    scaled = list(rk.open(root).records(geometry=geometry))
    full = list(rk.open(root).records(geometry=dataclasses.replace(geometry, jpeg_scale="full")))
    scales = []
    for index, (data, got, plain) in enumerate(zip(pictures, scaled, full, strict=True)):
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            window = window_of((image.height, image.width), (224, 224), geometry, record_draws(9, index))
            top, left, height, width = window.crop
            ideal = np.asarray(
                image.resize((224, 224), Image.Resampling.BILINEAR, (left, top, left + width, top + height))
            )
        scales.append(window_scale(window.crop, (224, 224)))
        if scales[-1] == 1:
            np.testing.assert_array_equal(got["image"], plain["image"])
        else:
            assert psnr(got["image"], ideal) >= 40.0, index
    assert max(scales) > 1
