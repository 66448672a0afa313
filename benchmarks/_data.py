"""The benchmark workloads, generated deterministically from a seed.

Every contender gets the same records. Images are synthetic but photo-like (smooth
gradients, shapes, mild noise) so JPEG and PNG sizes and encode times resemble real
photos rather than noise or flat colour.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from typing import TypedDict

import numpy as np
import soundfile
from PIL import Image

__all__ = [
    "BOX_LABELS",
    "NUM_CLASSES",
    "SAMPLE_RATE",
    "MixedRecord",
    "StreamRecord",
    "mixed_records",
    "photo_like",
    "raw_image_records",
    "stream_record",
    "stream_records",
]

SAMPLE_RATE = 16_000
NUM_CLASSES = 10
BOX_LABELS = ["person", "dog", "cat", "car", "bicycle"]
#: Smallest and largest side of the mixed workload's JPEG images.
IMAGE_SIDES = (96, 384)
MAX_BOXES = 6

_VOCABULARY = (
    "a the small large red blue green dog cat person car bike tree house street park runs sits near "
    "under over beside with holding looking sunny rainy evening morning photo of two three"
)
_WORDS = _VOCABULARY.split()


@dataclasses.dataclass(frozen=True)
class MixedRecord:
    """One record of the mixed multimodal workload, in neutral form.

    ``boxes`` are normalised ``[x_min, y_min, x_max, y_max]`` rows; ``box_labels`` index
    :data:`BOX_LABELS`. Each contender turns this into what its API takes.
    """

    jpeg: bytes
    wav: bytes
    caption: str
    boxes: np.ndarray
    box_labels: np.ndarray
    label: int

    @property
    def height_width(self) -> tuple[int, int]:
        width, height = Image.open(io.BytesIO(self.jpeg)).size
        return height, width


def photo_like(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A uint8 ``[height, width, 3]`` image with the statistics of a simple photo."""
    y = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None, None]
    x = np.linspace(0.0, 1.0, width, dtype=np.float32)[None, :, None]
    base = rng.uniform(40, 200, size=3).astype(np.float32)
    slope = rng.uniform(-60, 60, size=(2, 3)).astype(np.float32)
    image = base + slope[0] * y + slope[1] * x
    image = np.broadcast_to(image, (height, width, 3)).copy()
    for _ in range(4):
        cy, cx = rng.uniform(0, 1, size=2)
        ry, rx = rng.uniform(0.05, 0.3, size=2)
        inside = ((y[:, :, 0] - cy) / ry) ** 2 + ((x[:, :, 0] - cx) / rx) ** 2 <= 1.0
        image[inside] = rng.uniform(0, 255, size=3)
    image += rng.normal(0.0, 6.0, size=image.shape).astype(np.float32)
    clipped: np.ndarray = np.clip(image, 0, 255).astype(np.uint8)
    return clipped


def _jpeg(image: np.ndarray, quality: int = 90) -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, format="JPEG", quality=quality)
    return out.getvalue()


def _wav(rng: np.random.Generator, seconds: float = 1.0) -> bytes:
    t = np.arange(int(SAMPLE_RATE * seconds), dtype=np.float32) / SAMPLE_RATE
    tones = sum(rng.uniform(0.05, 0.2) * np.sin(2 * np.pi * rng.uniform(100, 2000) * t) for _ in range(3))
    signal = tones + rng.normal(0.0, 0.02, size=t.shape)
    out = io.BytesIO()
    soundfile.write(
        out, np.clip(signal, -1, 1).astype(np.float32), SAMPLE_RATE, format="WAV", subtype="PCM_16"
    )
    return out.getvalue()


def _boxes(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    count = int(rng.integers(0, MAX_BOXES + 1))
    corners = rng.uniform(0.0, 1.0, size=(count, 2, 2)).astype(np.float32)
    low, high = corners.min(axis=1), corners.max(axis=1)
    boxes = np.concatenate([low, high], axis=1)  # x_min, y_min, x_max, y_max
    return boxes, rng.integers(0, len(BOX_LABELS), size=count).astype(np.int64)


def mixed_records(
    count: int,
    seed: int = 0,
    sides: tuple[int, int] = IMAGE_SIDES,
    caption_words: tuple[int, int] = (5, 20),
) -> list[MixedRecord]:
    """``count`` mixed multimodal records: a JPEG of varying size (sides from
    ``sides[0]`` to ``sides[1]`` pixels), 1 s of 16 kHz WAV, a caption of
    ``caption_words[0]`` to ``caption_words[1]`` words, 0 to 6 labelled boxes and a class
    label, all already encoded."""
    rng = np.random.default_rng(seed)
    records = []
    for _ in range(count):
        height, width = (int(v) for v in rng.integers(sides[0], sides[1] + 1, size=2))
        boxes, box_labels = _boxes(rng)
        words = rng.choice(_WORDS, size=int(rng.integers(caption_words[0], caption_words[1] + 1)))
        records.append(
            MixedRecord(
                jpeg=_jpeg(photo_like(rng, height, width)),
                wav=_wav(rng),
                caption=" ".join(words).capitalize() + ".",
                boxes=boxes,
                box_labels=box_labels,
                label=int(rng.integers(0, NUM_CLASSES)),
            )
        )
    return records


def raw_image_records(count: int, side: int, seed: int = 1) -> list[tuple[np.ndarray, int]]:
    """``count`` raw ``[side, side, 3]`` uint8 images with a class label, to be encoded."""
    rng = np.random.default_rng(seed)
    return [(photo_like(rng, side, side), int(rng.integers(0, NUM_CLASSES))) for _ in range(count)]


class StreamRecord(TypedDict):
    """One small record of the long stream, as the writers take it."""

    id: int
    caption: str
    label: int
    score: float


def stream_record(index: int) -> StreamRecord:
    """The ``index``-th small record of the long stream (computed, not stored, so the
    generator itself uses no memory that grows with the stream)."""
    return {
        "id": index,
        "caption": f"record {index}: {_WORDS[index % len(_WORDS)]} {_WORDS[(index * 7) % len(_WORDS)]}",
        "label": index % NUM_CLASSES,
        "score": (index % 1000) / 1000.0,
    }


def stream_records(count: int) -> Iterator[StreamRecord]:
    """The long stream: ``count`` small records, generated lazily."""
    return (stream_record(i) for i in range(count))
