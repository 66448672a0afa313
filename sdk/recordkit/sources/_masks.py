"""Instance masks from COCO's two encodings, as ``uint8`` arrays of 0 and 1.

* Polygons (``[[x1, y1, x2, y2, ...], ...]`` in pixels) are filled with Pillow's
  ``ImageDraw.polygon``; the polygons of one object are united.
* Run-length encoding (``{"size": [h, w], "counts": ...}``), used for crowds: counts
  alternate runs of 0 and 1, starting with 0, over the pixels in column-major order
  (down each column, then the next column). ``counts`` is a list of ints
  ("uncompressed RLE") or a string in COCO's compact form: each count, after the third,
  stored as the difference from the count two before it, in 5-bit groups with a
  continuation bit and a sign bit, offset by 48 to printable characters (the format of
  pycocotools' ``maskApi.c``, decoded here without it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

__all__ = ["decode_rle", "polygons_mask", "rle_counts", "segmentation_mask"]

#: Longest count of a compact RLE string, in bits (13 characters): far above any
#: image's pixel count, and a bound on the big numbers a hostile string could build.
_MAX_COUNT_BITS = 64


def rle_counts(counts: str | bytes) -> list[int]:
    """The run lengths that COCO's compact RLE string spells."""
    text = counts.encode("ascii") if isinstance(counts, str) else counts
    out: list[int] = []
    pos = 0
    while pos < len(text):
        value = 0
        shift = 0
        more = True
        while more:
            if pos >= len(text):
                raise ValueError("the RLE string ends inside a count")
            if shift > _MAX_COUNT_BITS:
                raise ValueError(f"a count at {pos} runs over {_MAX_COUNT_BITS // 5} characters")
            char = text[pos] - 48
            if not 0 <= char < 64:
                raise ValueError(f"character {chr(text[pos])!r} at {pos} is not of COCO's RLE alphabet")
            value |= (char & 0x1F) << shift
            more = bool(char & 0x20)
            pos += 1
            shift += 5
            if not more and char & 0x10:
                value |= -1 << shift
        if len(out) > 2:
            value += out[-2]
        out.append(value)
    return out


def decode_rle(counts: str | bytes | Sequence[int], height: int, width: int) -> np.ndarray:
    """The ``(height, width)`` 0/1 mask of an RLE (see the module docs)."""
    runs = rle_counts(counts) if isinstance(counts, (str, bytes)) else [int(c) for c in counts]
    if any(run < 0 for run in runs):
        raise ValueError("a run length is negative")
    if sum(runs) != height * width:
        raise ValueError(
            f"the runs cover {sum(runs)} pixels, the mask has {height} x {width} = {height * width}"
        )
    values = np.arange(len(runs), dtype=np.uint8) % 2
    flat = np.repeat(values, runs)
    return np.ascontiguousarray(flat.reshape(width, height).T)


def polygons_mask(polygons: Sequence[Sequence[float]], height: int, width: int) -> np.ndarray:
    """The ``(height, width)`` 0/1 mask of the union of ``polygons`` (pixel coordinates)."""
    canvas = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(canvas)
    for polygon in polygons:
        points = [float(v) for v in polygon]
        if len(points) < 6 or len(points) % 2:
            raise ValueError(f"a polygon needs at least 3 (x, y) points, got {len(points)} numbers")
        if not all(math.isfinite(v) for v in points):
            raise ValueError("a polygon's coordinates must be finite numbers")
        draw.polygon(list(zip(points[0::2], points[1::2], strict=True)), fill=1, outline=1)
    return np.asarray(canvas, dtype=np.uint8)


def segmentation_mask(segmentation: Any, height: int, width: int) -> np.ndarray:
    """An annotation's ``segmentation`` (polygons or RLE) as a 0/1 mask."""
    if isinstance(segmentation, list):
        return polygons_mask(segmentation, height, width)
    if isinstance(segmentation, dict) and "counts" in segmentation:
        size = segmentation.get("size", [height, width])
        if list(size) != [height, width]:
            raise ValueError(f"the RLE's size {list(size)} is not the image's [{height}, {width}]")
        return decode_rle(segmentation["counts"], height, width)
    raise ValueError("segmentation must be a list of polygons or an RLE {'size', 'counts'}")
