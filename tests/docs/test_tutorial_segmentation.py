"""docs/tutorials/segmentation.md: on a miniature Pascal VOC (JPEG photos, palette PNG
masks with a void border, the VOC folder layout), the page's examples run and print what
it shows; what they read equals the files, and the random crop cuts image and mask at
the same place, padding the mask with the void index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

import recordkit as rk

PAGE = Path("docs") / "tutorials" / "segmentation.md"
#: (height, width) of each image: some smaller than the page's 64 x 64 crop in one or
#: both sides (padded), some larger (cropped); the last 4 are the validation split.
SIZES = [(48, 56), (96, 80), (64, 64), (50, 90), (88, 44), (72, 60), (40, 40), (80, 88)]
SIZES += [(60, 70), (90, 96), (56, 48), (72, 60)]
VOID = 255


def voc_palette() -> list[int]:
    """The Pascal VOC colour map: 256 RGB triples, index bits spread over the channels."""
    palette = []
    for index in range(256):
        red = green = blue = 0
        bits = index
        for shift in range(7, -1, -1):
            red |= (bits & 1) << shift
            green |= ((bits >> 1) & 1) << shift
            blue |= ((bits >> 2) & 1) << shift
            bits >>= 3
        palette += [red, green, blue]
    return palette


def make_voc(root: Path, seed: int = 0) -> list[str]:
    """A miniature VOCdevkit/VOC2012: photos (JPEG) of a noisy gradient with objects
    drawn in their class colour, masks (palette PNG) of the same objects in class
    indices 1..20 with a void (255) outline, and the train/val name lists."""
    rng = np.random.default_rng(seed)
    voc = root / "VOCdevkit" / "VOC2012"
    for folder in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (voc / folder).mkdir(parents=True)
    palette = voc_palette()
    names = []
    for i, (height, width) in enumerate(SIZES):
        name = f"2007_{i:06d}"
        ramp = np.add.outer(np.linspace(0, 120, height), np.linspace(0, 100, width))
        pixels = ramp[..., None] + rng.normal(0, 25, (height, width, 3)) + 60
        photo = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
        mask = Image.new("P", (width, height), 0)
        mask.putpalette(palette)
        draw_photo, draw_mask = ImageDraw.Draw(photo), ImageDraw.Draw(mask)
        for _ in range(int(rng.integers(1, 4))):
            label = int(rng.integers(1, 21))
            x0, y0 = int(rng.integers(0, width // 2)), int(rng.integers(0, height // 2))
            box = (x0, y0, x0 + int(rng.integers(10, width // 2)), y0 + int(rng.integers(10, height // 2)))
            colour = tuple(palette[3 * label : 3 * label + 3])
            shape = "ellipse" if i % 2 else "rectangle"
            getattr(draw_photo, shape)(box, fill=colour)
            getattr(draw_mask, shape)(box, fill=label, outline=VOID, width=2)
        photo.save(voc / "JPEGImages" / f"{name}.jpg", quality=90)
        mask.save(voc / "SegmentationClass" / f"{name}.png")
        names.append(name)
    lists = voc / "ImageSets" / "Segmentation"
    (lists / "train.txt").write_text("\n".join(names[:8]) + "\n")
    (lists / "val.txt").write_text("\n".join(names[8:]) + "\n")
    return names


def originals(root: Path, names: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    voc = root / "VOCdevkit" / "VOC2012"
    return [
        (
            np.asarray(Image.open(voc / "JPEGImages" / f"{name}.jpg")),
            np.asarray(Image.open(voc / "SegmentationClass" / f"{name}.png")),
        )
        for name in names
    ]


def crop_origin(
    crop_image: np.ndarray, crop_mask: np.ndarray, padded: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[int, int, int]:
    """Which padded original ``crop_image`` was cut from, and where (index, top, left);
    the mask must have been cut from the same original at the same place."""
    height, width = crop_mask.shape
    found = []
    for index, (image, _mask) in enumerate(padded):
        rows, cols = image.shape[0] - height + 1, image.shape[1] - width + 1
        if rows < 1 or cols < 1:
            continue
        # Candidates: where the crop's first pixel is (the photos are noisy: few places).
        corner = np.all(image[:rows, :cols] == crop_image[0, 0], axis=-1)
        for top, left in zip(*np.nonzero(corner), strict=True):
            if np.array_equal(image[top : top + height, left : left + width], crop_image):
                found.append((index, int(top), int(left)))
    assert len(found) == 1, f"the crop matches {len(found)} places of the originals"
    index, top, left = found[0]
    window = padded[index][1][top : top + height, left : left + width]
    assert np.array_equal(window, crop_mask), "the mask was not cut where the image was"
    return found[0]


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    names = make_voc(in_tmp_path)
    blocks = page_examples.code_blocks(page_examples.root / PAGE)
    schemas = [b for b in blocks if b.language == "yaml"]
    assert len(schemas) == 1
    (in_tmp_path / "voc.yaml").write_text(schemas[0].body, encoding="utf-8")

    seen = page_examples.run_python_blocks(blocks)

    # The dataset: both splits, every image once, listed in the manifest.
    manifest = rk.Manifest.load(in_tmp_path / "data" / "voc")
    assert {name: split.num_records for name, split in manifest.splits.items()} == {"train": 8, "val": 4}
    stored = [
        record["name"] for split in ("train", "val") for record in rk.iter_records("data/voc", split, "name")
    ]
    assert stored == names
    printed = [b for b in blocks if b.language == "text" and b.adjacent]
    assert len(printed) == 5, "every step shows what it prints"

    # The training batches: crops of the originals, image and mask cut at the same place,
    # padded with 0 (image) and 255 (mask) where an original is smaller than the crop.
    crop = seen["CROP"]
    train = originals(in_tmp_path, names[:8])
    padded = []
    for image, mask in train:
        rows, cols = max(crop[0] - image.shape[0], 0), max(crop[1] - image.shape[1], 0)
        padded.append(
            (
                np.pad(image, ((0, rows), (0, cols), (0, 0))),
                np.pad(mask, ((0, rows), (0, cols)), constant_values=VOID),
            )
        )
    sources = set()
    for images, masks in seen["train"].take(4):
        assert images.shape == (4, *crop, 3)
        assert masks.shape == (4, *crop)
        for image, mask in zip(images.numpy(), masks.numpy(), strict=True):
            sources.add(crop_origin(image, mask, padded)[0])
    assert len(sources) > 1, "the batches mix several images"
    padded_ones = {
        i for i, (image, _) in enumerate(train) if image.shape[0] < crop[0] or image.shape[1] < crop[1]
    }
    assert sources & padded_ones, "some crops hold padding (void in the mask)"
