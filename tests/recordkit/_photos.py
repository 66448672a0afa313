"""Photo-like JPEGs for the tests of decoding at a reduced scale: smooth gradients, the
sharp edges of a few rectangles, and sensor-like noise (more of it, and a fine texture,
in the detailed ones), saved with each kind of JPEG a camera or a library writes."""

from __future__ import annotations

import functools
import io

import numpy as np
from PIL import Image

__all__ = ["JPEG_KINDS", "jpeg", "photo", "psnr"]

#: The kinds of JPEG the tests save: Pillow's ``save`` arguments, and whether it is gray.
JPEG_KINDS: dict[str, tuple[dict[str, object], bool]] = {
    "4:2:0": ({"subsampling": 2}, False),
    "4:2:2": ({"subsampling": 1}, False),
    "4:4:4": ({"subsampling": 0}, False),
    "progressive": ({"subsampling": 2, "progressive": True}, False),
    "gray": ({}, True),
}


def photo(height: int, width: int, seed: int, *, detailed: bool = False) -> np.ndarray:
    """A uint8 ``[height, width, 3]`` photo-like picture (see the module docs): a copy of
    the one made for these arguments (made once a process, as the same large pictures
    serve several tests: each took 0.5 to 0.8 s of CPU)."""
    return _photo(height, width, seed, detailed).copy()


@functools.lru_cache(maxsize=16)
def _photo(height: int, width: int, seed: int, detailed: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # A row of x and a column of y, broadcast: each pixel's value is what the whole grid
    # (np.mgrid) gave, computed once a row or column rather than once a pixel.
    x = np.arange(width, dtype=np.float32)[None, :]
    y = np.arange(height, dtype=np.float32)[:, None]
    phases = rng.uniform(0, 6, 3)
    image = np.stack(
        [128 + 80 * np.sin(x / width * 3 + p) * np.cos(y / height * 2 + p) for p in phases], axis=-1
    )
    for _ in range(8):
        top, left = int(rng.integers(0, height - 16)), int(rng.integers(0, width - 16))
        rows, cols = int(rng.integers(8, height // 3)), int(rng.integers(8, width // 3))
        image[top : top + rows, left : left + cols] = rng.uniform(20, 235, 3)
    if detailed:
        image += (24 * np.sin(x / 3.1) * np.sin(y / 4.3))[..., None]
    image += rng.normal(0, 6 if detailed else 2, image.shape)
    clipped: np.ndarray = np.clip(image, 0, 255).astype(np.uint8)
    clipped.flags.writeable = False
    return clipped


def jpeg(picture: np.ndarray, kind: str, quality: int = 90) -> bytes:
    """``picture`` saved as a JPEG of ``kind`` (a key of :data:`JPEG_KINDS`)."""
    save, gray = JPEG_KINDS[kind]
    image = Image.fromarray(picture)
    if gray:
        image = image.convert("L")
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=quality, **save)
    return out.getvalue()


def psnr(got: np.ndarray, want: np.ndarray) -> float:
    """Peak signal-to-noise ratio of 8-bit pictures, in dB (inf when equal)."""
    error = np.mean((np.asarray(got, np.float64) - np.asarray(want, np.float64)) ** 2)
    return float("inf") if error == 0 else float(10 * np.log10(255.0**2 / error))
