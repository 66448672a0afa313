"""Make ``docs/img/geometry-fits.png``: one record of the how-to's shapes dataset before
and after each fit of ``rk.ImageGeometry``, its boxes drawn by the bbox codec itself (the
numpy reader's output, drawn as ``recordkit show`` draws it).

Run from the repository's root: ``python docs/img/geometry_fits.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

import recordkit as rk

OUT = Path(__file__).with_name("geometry-fits.png")
SIZE = (96, 96)
SCALE = 2
FITS = [
    ("stored (120 x 160)", None),
    ("resize", rk.ImageGeometry(size=SIZE)),
    ("resize_with_pad", rk.ImageGeometry(size=SIZE, fit="resize_with_pad")),
    ("crop_or_pad", rk.ImageGeometry(size=SIZE, fit="crop_or_pad")),
    ("random_crop_or_pad", rk.ImageGeometry(size=SIZE, fit="random_crop_or_pad", seed=1)),
    ("random_resized_crop + flip", rk.ImageGeometry(size=SIZE, fit="random_resized_crop", flip=1.0, seed=4)),
]


def dataset(root: Path) -> rk.Dataset:
    """The how-to's first record: a red, a green and a blue rectangle with pixel boxes."""
    schema = rk.Schema.loads(
        """
name: shapes
fields:
  image: {codec: image, options: {format: png}}
  objects:
    codec: bbox
    options: {format: xyxy, normalized: false, labels: [red, green, blue], image_field: image}
"""
    )
    height, width = 120, 160
    image = np.full((height, width, 3), 40, np.uint8)
    boxes = []
    for k, colour in enumerate([(255, 0, 0), (0, 255, 0), (0, 0, 255)]):
        x1, y1 = k * width // 3 + 2, height // 4 + 3 * k
        x2, y2 = (k + 1) * width // 3 - 2, height // 2 + 5 * k
        image[y1:y2, x1:x2] = colour
        boxes.append([x1, y1, x2, y2])
    record = {"image": image, "objects": {"boxes": boxes, "labels": [0, 1, 2]}}
    rk.write_dataset([record], root / "shapes", schema, progress=False)
    return rk.open(root / "shapes", "train")


def tile(ds: rk.Dataset, title: str, geometry: rk.ImageGeometry | None) -> Image.Image:
    """The record through ``geometry``, its boxes drawn by their codec, titled."""
    record = next(iter(ds.records(geometry=geometry)))
    image = record["image"]
    picture = Image.fromarray(image).resize((image.shape[1] * SCALE, image.shape[0] * SCALE), Image.NEAREST)
    canvas = rk.Canvas(picture, height=image.shape[0], width=image.shape[1], scale=SCALE)
    codec = rk.default_registry().create("bbox", ds.schema.fields["objects"].options)
    codec.draw(canvas, record["objects"])
    drawn = canvas.picture()
    out = Image.new("RGB", (max(drawn.width, 200), drawn.height + 20), "white")
    out.paste(drawn, (0, 20))
    ImageDraw.Draw(out).text((2, 4), title, fill="black")
    return out


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        ds = dataset(Path(tmp))
        tiles = [tile(ds, title, geometry) for title, geometry in FITS]
    width = sum(t.width for t in tiles) + 8 * (len(tiles) - 1)
    sheet = Image.new("RGB", (width, max(t.height for t in tiles)), "white")
    left = 0
    for each in tiles:
        sheet.paste(each, (left, 0))
        left += each.width + 8
    sheet.save(OUT, optimize=True)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
