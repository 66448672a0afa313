"""What the sources need to know about media files: which suffixes are images and
audio, whether a file really is an image (its header, not its name), and the audio
field a sample file calls for."""

from __future__ import annotations

from pathlib import Path

import soundfile
from PIL import Image, UnidentifiedImageError

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec

__all__ = ["AUDIO_SUFFIXES", "IMAGE_SUFFIXES", "audio_field", "audio_info", "image_size", "is_image"]

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff"})
AUDIO_SUFFIXES = frozenset({".wav", ".flac", ".ogg", ".aiff", ".aif"})


def is_image(path: Path) -> bool:
    """Whether Pillow recognises the file's header as an image (nothing is decoded)."""
    try:
        with Image.open(path) as image:
            return bool(image.format)
    except (UnidentifiedImageError, OSError, ValueError):
        return False


def image_size(path: Path) -> tuple[int, int]:
    """``(width, height)`` from the image's header."""
    with Image.open(path) as image:
        width, height = image.size
        return int(width), int(height)


def audio_info(path: Path) -> tuple[int, int, int]:
    """``(sample_rate, channels, frames)`` of an audio file, from its header; an
    unreadable file is an InputError naming it."""
    try:
        info = soundfile.info(str(path))
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        raise InputError(f"not a readable audio file: {exc}", file=str(path)) from None
    return int(info.samplerate), int(info.channels), int(info.frames)


def audio_field(sample: Path) -> FieldSpec:
    """An ``audio`` field with the sample rate and channels of ``sample``."""
    rate, channels, _ = audio_info(sample)
    return FieldSpec(codec="audio", options={"sample_rate": rate, "channels": channels})
