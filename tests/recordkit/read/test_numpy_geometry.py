"""The numpy reader's antialiased resize of a scaled picture: Pillow's core image, raw
decoder and encoder used directly give the pixels the public calls give."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from recordkit.read import _numpy_geometry

SHAPES = [(37, 53), (37, 53, 1), (37, 53, 3), (37, 53, 4), (160, 131, 3), (9, 200, 3)]


def _public(pixels: np.ndarray, size: tuple[int, int], box: tuple[float, float, float, float]) -> np.ndarray:
    """The resize through Image.fromarray, Image.resize and np.asarray, a plane at a
    time (the way the reader takes without Pillow's raw decoder and encoder)."""
    planes = pixels[..., None] if pixels.ndim == 2 else pixels
    resized = np.stack(
        [
            np.asarray(
                Image.fromarray(np.ascontiguousarray(planes[..., c]), "L").resize(
                    (size[1], size[0]), Image.Resampling.BILINEAR, box
                )
            )
            for c in range(planes.shape[2])
        ],
        axis=-1,
    )
    return resized[..., 0] if pixels.ndim == 2 else resized


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("contiguous", [True, False])
def test_the_direct_resize_gives_the_public_calls_pixels(shape: tuple[int, ...], contiguous: bool) -> None:
    rng = np.random.default_rng(len(shape) * 1000 + shape[0])
    pixels = rng.integers(0, 256, shape, dtype=np.uint8)
    if not contiguous:
        pixels = pixels[::-1]
    height, width = shape[0], shape[1]
    for size, box in [
        ((24, 30), (0.0, 0.0, width, height)),
        ((96, 96), (0.0, 0.0, width - 0.5, height - 0.5)),
        ((20, 17), (3.25, 1.5, width / 2 + 3.75, height / 2 + 1.5)),
        ((height * 2, width + 5), (0.0, 0.0, width, height)),
    ]:
        got = _numpy_geometry._antialiased(pixels, size, box)
        want = _public(pixels, size, box)
        assert got.shape == want.shape == (*size, *shape[2:])
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, want)


def test_three_channels_and_one_take_pillows_raw_decoder_and_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _numpy_geometry._PILLOW_RAW is not None  # this Pillow has them

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the public calls were taken")

    monkeypatch.setattr(Image, "fromarray", refused)
    rng = np.random.default_rng(7)
    for shape in [(50, 40, 3), (50, 40)]:
        pixels = rng.integers(0, 256, shape, dtype=np.uint8)
        assert _numpy_geometry._antialiased(pixels, (20, 16), (0.0, 0.0, 40.0, 50.0)).shape[:2] == (20, 16)


def test_without_the_raw_decoder_the_public_calls_give_the_same_pixels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(11)
    pixels = rng.integers(0, 256, (77, 64, 3), dtype=np.uint8)
    box = (0.0, 0.0, 63.5, 76.5)
    direct = _numpy_geometry._antialiased(pixels, (32, 32), box)
    monkeypatch.setattr(_numpy_geometry, "_PILLOW_RAW", None)
    np.testing.assert_array_equal(_numpy_geometry._antialiased(pixels, (32, 32), box), direct)
