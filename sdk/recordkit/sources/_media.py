"""What the sources need to know about media files: which suffixes are images and
audio, whether a file really is an image (its header, not its name), its real size
(from the header, to check the size an annotation declares before anything of that
size is allocated), and the audio field a sample file calls for."""

from __future__ import annotations

import warnings
from pathlib import Path

import soundfile
from PIL import Image, UnidentifiedImageError

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec

__all__ = ["AUDIO_SUFFIXES", "IMAGE_SUFFIXES", "audio_field", "audio_info", "check_declared_size", "is_image"]

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff"})
AUDIO_SUFFIXES = frozenset({".wav", ".flac", ".ogg", ".aiff", ".aif"})


def is_image(path: Path) -> bool:
    """Whether Pillow recognises the file's header as an image (nothing is decoded)."""
    try:
        with Image.open(path) as image:
            return bool(image.format)
    except (UnidentifiedImageError, OSError, ValueError):
        return False


def check_declared_size(path: Path, width: object, height: object) -> tuple[int, int]:
    """Check the ``width`` and ``height`` an annotation declares for the image at ``path``
    against the image's own header (read without decoding a pixel) and against Pillow's
    ``Image.MAX_IMAGE_PIXELS``: ``(width, height)``, or ValueError saying what is wrong. Masks and boxes are
    built from the declared size only once it passes, so a file of a few bytes that
    declares gigapixels never makes a source allocate them. A declared ``0 x 0`` means
    "not recorded" (annotation tools that never opened the image write it): the
    header's size is used."""
    unrecorded = width == 0 and height == 0 and not isinstance(width, bool) and not isinstance(height, bool)
    if not unrecorded and not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (width, height)
    ):
        raise ValueError(
            f"the width and height must be positive integers, not {width!r:.40} x {height!r:.40}"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                real = (int(image.width), int(image.height))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ValueError(
            f"{path} holds more pixels than PIL.Image.MAX_IMAGE_PIXELS ({Image.MAX_IMAGE_PIXELS}): "
            "refused as a decompression bomb"
        ) from None
    except (UnidentifiedImageError, OSError, ValueError):
        raise ValueError(f"{path} is not an image Pillow reads") from None
    if not unrecorded and real != (width, height):
        raise ValueError(f"declares {width} x {height} pixels, but {path} is {real[0]} x {real[1]}")
    return real


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
