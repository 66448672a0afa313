"""Make the data the tutorials in docs/tutorials/ use: small stand-ins for the classic
datasets, in the layout of the real ones, so that every tutorial runs on any machine.

From the repository's root, in the folder where you will follow a tutorial::

    python examples/make_tutorial_data.py flowers     # flower_photos/ (image-folder.md)
    python examples/make_tutorial_data.py images      # images/ (where-the-bytes-go.md)
    python examples/make_tutorial_data.py voc         # VOCdevkit/VOC2012/ (segmentation.md)
    python examples/make_tutorial_data.py scenes      # scenes/ (multimodal.md)

``--into DIR`` makes them elsewhere than the current folder. The data is generated (no
download) and the same on every run: the outputs the tutorials show are from it. The
tests that run the tutorials call the same functions. The real datasets, when you want
them, are named on each tutorial page.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import soundfile
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sample_sources, beside this file
import sample_sources

__all__ = ["make_flower_photos", "make_images", "make_scenes", "make_voc", "voc_palette"]


# -- flowers: a folder of photos, one subfolder per class (image-folder.md) ----------------

FLOWER_CLASSES = {"daisy": (235, 235, 200), "roses": (200, 40, 60), "tulips": (230, 150, 40)}

FLOWERS_PER_CLASS = 8


def _flower_photo(
    rng: np.random.Generator, height: int, width: int, tint: tuple[int, int, int]
) -> np.ndarray:
    """Photo-like pixels: smooth colour waves around a tint, with a little sensor noise."""
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    waves = np.stack(
        [np.sin(rng.uniform(3, 9) * x + rng.uniform(2, 6) * y + rng.uniform(0, 6)) for _ in range(3)], -1
    )
    pixels = np.asarray(tint) + 50 * waves + rng.normal(0, 4, (height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8)


def make_flower_photos(root: Path) -> list[Path]:
    """``root/<class>/<class>_NN.jpg``: FLOWERS_PER_CLASS JPEGs per class, each its own size."""
    rng = np.random.default_rng(7)
    paths = []
    for name, tint in FLOWER_CLASSES.items():
        folder = root / name
        folder.mkdir(parents=True)
        for i in range(FLOWERS_PER_CLASS):
            height, width = (int(v) for v in rng.integers(40, 120, 2))
            path = folder / f"{name}_{i:02d}.jpg"
            Image.fromarray(_flower_photo(rng, height, width, tint)).save(path, "JPEG", quality=90)
            paths.append(path)
    return paths


# -- images: ten JPEG and PNG files (where-the-bytes-go.md) ------------------------------


def _textured_photo(rng: np.random.Generator, height: int, width: int, noise: float) -> np.ndarray:
    """Photo-like pixels: smooth colour waves and soft detail, with some sensor noise."""
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    waves = np.stack(
        [np.sin(rng.uniform(3, 12) * x + rng.uniform(2, 8) * y + rng.uniform(0, 6)) for _ in range(3)], -1
    )
    coarse = rng.integers(0, 256, (height // 16 + 1, width // 16 + 1, 3), dtype=np.uint8)
    soft = Image.fromarray(coarse).resize((width, height), Image.Resampling.BICUBIC)
    detail = (np.asarray(soft, np.float64) - 128) / 4
    pixels = rng.integers(60, 200, 3) + 50 * waves + detail + rng.normal(0, noise, (height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8)


def make_images(root: Path) -> list[Path]:
    """Six JPEG photos (quality 90), two PNG photos, and two PNG cut-outs whose corners
    are transparent (an opaque ellipse on a transparent ground)."""
    rng = np.random.default_rng(18)
    root.mkdir()
    paths = []
    for i in range(10):
        height, width = (int(v) for v in rng.integers(240, 400, 2))
        pixels = _textured_photo(rng, height, width, noise=1.0)
        if i < 6:
            path = root / f"photo-{i}.jpg"
            Image.fromarray(pixels).save(path, "JPEG", quality=90)
        elif i < 8:
            path = root / f"scan-{i}.png"
            Image.fromarray(pixels).save(path)
        else:
            y, x = np.mgrid[0:height, 0:width]
            inside = ((x - width / 2) / (width / 2)) ** 2 + ((y - height / 2) / (height / 2)) ** 2 < 1
            path = root / f"cutout-{i}.png"
            Image.fromarray(np.dstack([pixels, (inside * 255).astype(np.uint8)])).save(path)
        paths.append(path)
    return paths


# -- voc: a miniature Pascal VOC 2012 segmentation set (segmentation.md) -----------------

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


# -- scenes: frames, sounds, captions, boxes and labels (multimodal.md) -------------------

SPLITS = {"train": 256, "validation": 32}

LABELS = ["person", "animal", "vehicle"]

SCENES = ["indoor", "outdoor", "underwater"]

BACKGROUNDS = [(200, 190, 170), (120, 180, 240), (20, 60, 140)]

ARTICLES = {"person": "a person", "animal": "an animal", "vehicle": "a vehicle"}

WHERE = {"indoor": "indoors", "outdoor": "outdoors", "underwater": "under water"}

RATE = 16_000


def make_scenes(root: Path, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """``scenes/``: per split an annotation file (JSON lines) and, for each scene, a
    frame (PNG: a gradient with 0 to 3 coloured boxes) and a one-second sine tone (WAV)
    whose pitch depends on the scene label. Every fourth scene has no caption."""
    rng = np.random.default_rng(seed)
    folder = root / "scenes"
    (folder / "frames").mkdir(parents=True)
    (folder / "sounds").mkdir()
    time = np.arange(RATE) / RATE
    written: dict[str, list[dict[str, Any]]] = {}
    number = 0
    for split, count in SPLITS.items():
        lines = []
        for _ in range(count):
            name = f"scene-{number:04d}"
            width, height = (int(v) for v in rng.integers(48, 97, 2))
            scene = int(rng.integers(0, len(SCENES)))
            shade = np.linspace(0.7, 1.0, height)[:, None, None] * np.array(BACKGROUNDS[scene])
            frame = Image.fromarray(np.broadcast_to(shade, (height, width, 3)).astype(np.uint8))
            draw = ImageDraw.Draw(frame)
            objects = []
            for _ in range(int(rng.integers(0, 4))):
                x0, y0 = int(rng.integers(0, width - 16)), int(rng.integers(0, height - 16))
                box = [x0, y0, x0 + int(rng.integers(8, 17)), y0 + int(rng.integers(8, 17))]
                draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=tuple(rng.integers(0, 256, 3)))
                objects.append({"box": box, "label": LABELS[int(rng.integers(0, len(LABELS)))]})
            frame.save(folder / "frames" / f"{name}.png")
            tone = 0.5 * np.sin(2 * math.pi * 220.0 * 2 ** (scene / 2) * time)
            soundfile.write(folder / "sounds" / f"{name}.wav", tone, RATE, subtype="PCM_16")
            line: dict[str, Any] = {
                "id": name,
                "frame": f"frames/{name}.png",
                "sound": f"sounds/{name}.wav",
                "objects": objects,
                "scene": SCENES[scene],
            }
            if number % 4:
                things = " and ".join(ARTICLES[o["label"]] for o in objects) or "nothing"
                line["caption"] = f"{things} {WHERE[SCENES[scene]]}"
            lines.append(line)
            number += 1
        (folder / f"{split}.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
        )
        written[split] = lines
    return written


# -- the command ---------------------------------------------------------------------------

#: Each subcommand: the function that makes the data, the folder it makes, the tutorial.
COMMANDS: dict[str, tuple[Callable[[Path], Any], str, str]] = {
    "flowers": (lambda into: make_flower_photos(into / "flower_photos"), "flower_photos", "image-folder.md"),
    "images": (lambda into: make_images(into / "images"), "images", "where-the-bytes-go.md"),
    "voc": (make_voc, "VOCdevkit/VOC2012", "segmentation.md"),
    "scenes": (make_scenes, "scenes", "multimodal.md"),
    "coco": (sample_sources.coco, "coco", "coco-detection.md"),
    "speech": (sample_sources.audio_folder, "speech", "speech-folder.md"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", choices=sorted(COMMANDS), help="which tutorial's data to make")
    parser.add_argument("--into", type=Path, default=Path("."), help="folder to make it in (default: here)")
    args = parser.parse_args(argv)
    make, folder, page = COMMANDS[args.data]
    target = args.into / folder
    if target.exists():
        print(f"{target} exists already; remove it to make it again", file=sys.stderr)
        return 1
    args.into.mkdir(parents=True, exist_ok=True)
    make(args.into)
    files = sum(1 for path in target.rglob("*") if path.is_file())
    print(f"made {target}: {files} files, for docs/tutorials/{page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
