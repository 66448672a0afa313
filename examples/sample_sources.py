"""Sample inputs for recordkit's sources, generated as real files (the source tests use
them, and ``make_tutorial_data.py coco`` / ``speech`` make the tutorials' data with them): a flowers-style
folder with nested class folders and a stray text file, a COCO JSON with several
images, crowd annotations, polygons and both RLE forms, a Pascal VOC tree with XML
and palette PNG masks, and a speech folder with a transcripts CSV."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import soundfile
from PIL import Image

#: The COCO fixture's images: file name, width, height.
COCO_IMAGES = [("000001.jpg", 64, 48), ("000002.jpg", 40, 40), ("000003.png", 32, 24)]
COCO_CATEGORIES = [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}, {"id": 18, "name": "dog"}]


def photo(width: int, height: int, seed: int, fmt: str = "JPEG") -> bytes:
    """An encoded photo-like image (noise on a gradient)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 255 // max(width, 1), y * 255 // max(height, 1), (x + y) % 256], axis=-1)
    pixels = np.clip(base + rng.integers(0, 40, (height, width, 3)), 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, fmt)
    return out.getvalue()


def image_folder(root: Path) -> Path:
    """``root/flowers``: roses (with a nested folder), tulips, daisy, a stray notes.txt in
    a class folder and a README at the top."""
    flowers = root / "flowers"
    files = {
        "roses/r1.jpg": photo(20, 16, 1),
        "roses/garden/r2.jpg": photo(16, 20, 2),
        "roses/notes.txt": b"these are roses\n",
        "tulips/t1.png": photo(12, 12, 3, "PNG"),
        "tulips/t2.jpg": photo(24, 18, 4),
        "daisy/d1.jpg": photo(10, 10, 5),
        "README.md": b"# flowers\n",
    }
    for name, data in files.items():
        path = flowers / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return flowers


def encode_rle_string(counts: Sequence[int]) -> str:
    """COCO's compact RLE string for ``counts`` (as pycocotools' rleToString writes it),
    written independently of the decoder under test."""
    out = []
    for i, count in enumerate(counts):
        value = int(count) - (int(counts[i - 2]) if i > 2 else 0)
        more = True
        while more:
            chunk = value & 0x1F
            value >>= 5
            more = value != -1 if chunk & 0x10 else value != 0
            if more:
                chunk |= 0x20
            out.append(chr(chunk + 48))
    return "".join(out)


def rle_counts_of(mask: np.ndarray) -> list[int]:
    """Run lengths of a 0/1 mask in column-major order, starting with a run of 0s."""
    flat = mask.T.reshape(-1)
    counts, current, run = [], 0, 0
    for value in flat:
        if value == current:
            run += 1
        else:
            counts.append(run)
            current, run = int(value), 1
    counts.append(run)
    return counts


def crowd_mask(height: int, width: int) -> np.ndarray:
    mask = np.zeros((height, width), np.uint8)
    mask[5:20, 3:30] = 1
    mask[10:12, 3:30] = 0  # two blobs: several runs per column
    return mask


def coco(
    root: Path,
    annotations: list[dict[str, Any]] | None = None,
    images: Sequence[tuple[str, int, int]] = COCO_IMAGES,
) -> Path:
    """``root/coco``: images/ and annotations.json; returns the JSON's path."""
    folder = root / "coco"
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for i, (name, width, height) in enumerate(images):
        fmt = "PNG" if name.endswith(".png") else "JPEG"
        (folder / "images" / name).write_bytes(photo(width, height, 10 + i, fmt))
    crowd = crowd_mask(40, 40)
    crowd_rle = {"size": [40, 40], "counts": encode_rle_string(rle_counts_of(crowd))}
    square_rle = {"size": [40, 40], "counts": rle_counts_of(_square(40, 40, 0, 0, 10))}
    if annotations is None:
        annotations = [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [4, 6, 20, 30], "area": 410.5, "iscrowd": 0,
             "segmentation": [[4, 6, 24, 6, 24, 36, 4, 36]]},
            {"id": 2, "image_id": 1, "category_id": 18, "bbox": [30.5, 10, 25, 12], "area": 300.0,
             "iscrowd": 0,
             "segmentation": [[30.5, 10, 55.5, 10, 55.5, 22, 30.5, 22], [40, 15, 45, 15, 45, 20]]},
            {"id": 3, "image_id": 2, "category_id": 3, "bbox": [3, 5, 27, 15], "area": float(crowd.sum()),
             "iscrowd": 1, "segmentation": crowd_rle},
            {"id": 4, "image_id": 2, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100.0, "iscrowd": 1,
             "segmentation": square_rle},
        ]  # fmt: skip
    data = {
        "info": {"description": "test"},
        "images": [
            {"id": i + 1, "file_name": name, "width": width, "height": height}
            for i, (name, width, height) in enumerate(images)
        ],
        "annotations": annotations,
        "categories": COCO_CATEGORIES,
    }
    path = folder / "annotations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _square(height: int, width: int, top: int, left: int, side: int) -> np.ndarray:
    mask = np.zeros((height, width), np.uint8)
    mask[top : top + side, left : left + side] = 1
    return mask


VOC_PALETTE = [0, 0, 0, 128, 0, 0, 0, 128, 0, 128, 128, 0] + [0, 0, 0] * 251 + [224, 224, 192]
VOC_IDS = ["2007_000001", "2007_000002", "2007_000003"]


def voc_xml(name: str, width: int, height: int, objects: list[tuple[str, list[int], int, int]]) -> str:
    parts = [f"<annotation><filename>{name}.jpg</filename><size><width>{width}</width>"
             f"<height>{height}</height><depth>3</depth></size>"]  # fmt: skip
    for label, (x0, y0, x1, y1), difficult, truncated in objects:
        parts.append(
            f"<object><name>{label}</name><pose>Left</pose><truncated>{truncated}</truncated>"
            f"<difficult>{difficult}</difficult><bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin>"
            f"<xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>"
        )
    return "".join(parts) + "</annotation>\n"


def voc_mask(height: int, width: int, seed: int) -> np.ndarray:
    """Class indices: background, two classes, and a void (255) border around them."""
    mask = np.zeros((height, width), np.uint8)
    mask[4:12, 4:14] = 1 + seed % 2
    mask[14:20, 2:8] = 3
    mask[3, 3:15] = 255
    return mask


def voc(root: Path) -> Path:
    """``root/VOC2012``: three images with XML annotations and palette PNG masks."""
    folder = root / "VOC2012"
    for sub in ("JPEGImages", "Annotations", "SegmentationClass", "ImageSets/Main", "ImageSets/Segmentation"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    objects = [
        [("cat", [3, 4, 18, 20], 0, 1), ("person", [1, 1, 10, 8], 1, 0)],
        [("dog", [5, 5, 24, 22], 0, 0)],
        [("car", [1, 2, 30, 24], 0, 1), ("car", [2, 2, 6, 6], 1, 1), ("bird", [10, 10, 12, 12], 0, 0)],
    ]
    for i, image_id in enumerate(VOC_IDS):
        width, height = 30 + i * 2, 24
        (folder / "JPEGImages" / f"{image_id}.jpg").write_bytes(photo(width, height, 20 + i))
        (folder / "Annotations" / f"{image_id}.xml").write_text(
            voc_xml(image_id, width, height, objects[i]), encoding="utf-8"
        )
        mask = Image.fromarray(voc_mask(height, width, i), mode="P")
        mask.putpalette(VOC_PALETTE)
        mask.save(folder / "SegmentationClass" / f"{image_id}.png")
    (folder / "ImageSets/Main/train.txt").write_text("\n".join(VOC_IDS[:2]) + "\n", encoding="utf-8")
    (folder / "ImageSets/Main/val.txt").write_text(VOC_IDS[2] + "\n", encoding="utf-8")
    (folder / "ImageSets/Segmentation/train.txt").write_text("\n".join(VOC_IDS) + "\n", encoding="utf-8")
    return folder


TRANSCRIPTS = {"a/one.wav": "hello world", "a/two.wav": "good morning", "b/three.wav": "yes"}


def tone(seconds: float, rate: int = 8000, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def audio_folder(root: Path) -> Path:
    """``root/speech``: three WAV files in two folders and ``metadata.csv`` with a
    transcript and a speaker per file."""
    folder = root / "speech"
    for i, name in enumerate(TRANSCRIPTS):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        soundfile.write(path, tone(0.25 + 0.25 * i, freq=300 + 100 * i), 8000, subtype="PCM_16")
    lines = ["file_name,transcript,speaker"]
    lines += [f"{name},{text},{i + 7}" for i, (name, text) in enumerate(TRANSCRIPTS.items())]
    (folder / "metadata.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder
