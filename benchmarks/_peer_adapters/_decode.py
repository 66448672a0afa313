"""What every peer adapter decodes the same way: the JPEG to uint8 HWC RGB with Pillow
(as WebDataset's ``"rgb8"`` does), the WAV to its stored int16 samples with soundfile,
and a batch of records of differing image sizes as one list per field."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import soundfile
from PIL import Image


def jpeg_pixels(data: bytes) -> np.ndarray:
    """A JPEG's pixels, uint8 height x width x 3."""
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def wav_samples(data: bytes) -> np.ndarray:
    """A WAV's samples as stored (int16)."""
    samples: np.ndarray
    samples, _ = soundfile.read(io.BytesIO(data), dtype="int16")
    return samples


def field_lists(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """A batch as one list per field (the images differ in size: nothing to stack)."""
    return {key: [r[key] for r in records] for key in records[0]}
