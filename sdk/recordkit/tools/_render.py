"""Records drawn as pictures with Pillow, for ``recordkit show``.

A record becomes one RGB picture, top to bottom: each picture of the record (the value
of a field whose codec is :class:`~recordkit.codec._capabilities.Pictured`, scaled up by
a whole factor when small, so drawings stay on exact pixels) with the values of every
:class:`~recordkit.codec._capabilities.Drawable` field drawn on it by their codecs (boxes
labelled with their class, masks tinted with a legend, points); each sound (an
:class:`~recordkit.codec._capabilities.Audible` field) as its waveform above its
spectrogram; then the other fields as caption lines, each codec's own
(:class:`~recordkit.codec._capabilities.Captioned`) or a description of the value. A
record with drawable values but no picture is drawn on a black picture the size of the
first value that covers one (:class:`~recordkit.codec._capabilities.Backdrop`).
Nothing here knows a codec by its name. Pictures are drawn with Pillow's ``ImageDraw``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from recordkit.codec._capabilities import (
    PALETTE,
    Audible,
    Backdrop,
    Canvas,
    Captioned,
    Drawable,
    Pictured,
    class_color,
)
from recordkit.schema._bound import BoundField
from recordkit.tools._codec_calls import calling

__all__ = [
    "BOX_WIDTH",
    "MIN_SIDE",
    "PALETTE",
    "Rendered",
    "box_color",
    "caption_line",
    "contact_sheet",
    "render_record",
    "scale_of",
]

#: Images smaller than this (their longer side) are scaled up by a whole factor.
MIN_SIDE = 256
#: Width in pixels of a box's outline (after scaling).
BOX_WIDTH = Canvas.line_width
#: The colour boxes and masks of a class are drawn in.
box_color = class_color
_TEXT = (20, 20, 20)
_BACKGROUND = (255, 255, 255)
_LINE = 14  # pixels per caption line (Pillow's default font)
_CAPTION = 120  # characters of a caption line at most


def scale_of(height: int, width: int) -> int:
    """The whole factor an image of this size is drawn at."""
    return max(1, MIN_SIDE // max(height, width, 1))


@dataclasses.dataclass
class Rendered:
    """A drawn record, and the audio it holds (field name to samples and rate) for WAVs."""

    picture: Image.Image
    audio: dict[str, tuple[np.ndarray, int]]


def _as_rgb(pixels: np.ndarray) -> Image.Image:
    array = np.asarray(pixels)
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.dtype != np.uint8:
        array = np.clip(array * (255 if array.max() <= 1 else 1), 0, 255).astype(np.uint8)
    return Image.fromarray(array).convert("RGB")


def _legend(entries: Sequence[tuple[str, tuple[int, int, int]]], width: int) -> Image.Image:
    picture = Image.new("RGB", (width, _LINE * len(entries) + 4), _BACKGROUND)
    draw = ImageDraw.Draw(picture)
    for i, (name, rgb) in enumerate(entries):
        y = 2 + i * _LINE
        draw.rectangle((4, y + 2, 14, y + 11), fill=rgb)
        draw.text((20, y), name, fill=_TEXT)
    return picture


def _audio_panel(samples: np.ndarray, rate: int, width: int = 512) -> Image.Image:
    """The waveform (top) and a log-magnitude spectrogram (bottom) of mono ``samples``."""
    mono = np.asarray(samples, dtype=np.float32)
    mono = mono.mean(axis=1) if mono.ndim == 2 else mono
    wave = Image.new("RGB", (width, 80), _BACKGROUND)
    draw = ImageDraw.Draw(wave)
    if mono.size:
        columns = (
            np.array_split(mono, width) if mono.size >= width else [mono[i : i + 1] for i in range(mono.size)]
        )
        step = width / len(columns)
        for x, chunk in enumerate(columns):
            low, high = float(chunk.min()), float(chunk.max())
            draw.line((x * step, 40 - high * 38, x * step, 40 - low * 38), fill=(0, 90, 180))
    draw.text((4, 2), f"{mono.size / rate:.2f} s at {rate} Hz", fill=_TEXT)
    frame = 256
    hop = max(1, frame // 2)
    frames = [mono[i : i + frame] for i in range(0, max(mono.size - frame, 0) + 1, hop)] or [mono]
    window = np.hanning(frame)
    spectra = [np.abs(np.fft.rfft(np.pad(f, (0, frame - f.size)) * window)) for f in frames]
    db = 20 * np.log10(np.stack(spectra, axis=1) + 1e-6)
    db = np.clip((db - db.max() + 80) / 80, 0, 1)[::-1]
    spectrogram = Image.fromarray((db * 255).astype(np.uint8)).resize((width, 120), Image.Resampling.BILINEAR)
    panel = Image.new("RGB", (width, 200), _BACKGROUND)
    panel.paste(wave, (0, 0))
    panel.paste(
        Image.merge(
            "RGB", (spectrogram, spectrogram.point(lambda v: v // 2), Image.new("L", spectrogram.size, 60))
        ),
        (0, 80),
    )
    return panel


def _describe(value: Any) -> str:
    """A value of a codec without a caption of its own: a large array by its shape, type
    and range; anything else as text."""
    if isinstance(value, np.ndarray) and value.size > 8:
        return f"array {value.shape} {value.dtype} min {value.min():.3g} max {value.max():.3g}"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value.tolist() if isinstance(value, np.ndarray) else value)


def caption_line(field: BoundField, value: Any) -> str:
    """One caption line for ``field``'s value: its codec's caption, a description of the
    value, or ``(absent)``; cut to a line's length."""
    if value is None:
        return f"{field.name}: (absent)"
    codec = field.codec
    if isinstance(codec, Captioned):
        values = value if field.spec.sequence else [value]
        with calling(field, "caption"):
            text = ", ".join(codec.caption(one) for one in values)
        text = f"[{text}]" if field.spec.sequence else text
    else:
        text = _describe(value)
    return f"{field.name}: {text if len(text) <= _CAPTION else text[: _CAPTION - 3] + '...'}"


def _draw_on(canvas: Canvas, field: BoundField, value: Any) -> None:
    """Draw ``field``'s value on ``canvas`` through its codec, each value of a sequence
    with its position."""
    codec = field.codec
    assert isinstance(codec, Drawable)
    with calling(field, "draw"):
        if field.spec.sequence:
            for i, one in enumerate(value):
                canvas.label, canvas.item = f"{field.name}[{i}]", i
                codec.draw(canvas, one)
        else:
            canvas.label, canvas.item = field.name, None
            codec.draw(canvas, value)


def _belongs_to(field: BoundField, picture: str, record: dict[str, Any]) -> bool:
    """Whether ``field``'s value is drawn on the picture of field ``picture``: on the
    pictures its codec relates it to when the record holds one, else on every picture."""
    related = [name for name in field.codec.related_fields() if record.get(name) is not None]
    return not related or picture in related


def _picture(field: BoundField, value: Any) -> np.ndarray:
    codec = field.codec
    assert isinstance(codec, Pictured)
    with calling(field, "picture"):
        return np.asarray(codec.picture(value))


def _backdrop(field: BoundField, value: Any) -> np.ndarray:
    codec = field.codec
    assert isinstance(codec, Backdrop)
    first = value[0] if field.spec.sequence else value
    with calling(field, "backdrop_size"):
        height, width = codec.backdrop_size(first)
    return np.zeros((height, width, 3), np.uint8)


def render_record(fields: Sequence[BoundField], record: dict[str, Any]) -> Rendered:
    """Draw ``record`` (decoded with ``fields``) as the module docs say."""
    present = [f for f in fields if record.get(f.name) is not None]
    pictures: list[tuple[str, np.ndarray]] = [
        (f.name, _picture(f, record[f.name]))
        for f in present
        if isinstance(f.codec, Pictured) and not f.spec.sequence
    ]
    drawables = [f for f in present if isinstance(f.codec, Drawable)]
    sounds_of = [f for f in present if isinstance(f.codec, Audible)]
    if not pictures:
        pictures = [
            ("", _backdrop(f, record[f.name]))
            for f in drawables
            if isinstance(f.codec, Backdrop) and (not f.spec.sequence or len(record[f.name]))
        ][:1]
    drawn = {name for name, _ in pictures} | {f.name for f in sounds_of}
    if pictures:
        drawn |= {f.name for f in drawables}
    panels: list[Image.Image] = []
    legend: dict[str, tuple[int, int, int]] = {}
    for name, pixels in pictures:
        height, width = pixels.shape[:2]
        scale = scale_of(height, width)
        base = _as_rgb(pixels).resize((width * scale, height * scale), Image.Resampling.NEAREST)
        canvas = Canvas(base, height=height, width=width, scale=scale)
        for field in drawables:
            if _belongs_to(field, name, record):
                _draw_on(canvas, field, record[field.name])
        legend.update(canvas.legend)
        panels.append(canvas.picture())
    sounds: dict[str, tuple[np.ndarray, int]] = {}
    for field in sounds_of:
        codec = field.codec
        assert isinstance(codec, Audible)
        with calling(field, "sound"):
            samples, rate = codec.sound(record[field.name])
        sounds[field.name] = (np.asarray(samples), rate)
        panels.append(_audio_panel(samples, rate))
    width = max([p.width for p in panels] + [320])
    if legend:
        panels.append(_legend(list(legend.items()), width))
    lines = [caption_line(f, record.get(f.name)) for f in fields if f.name not in drawn]
    if lines:
        caption = Image.new("RGB", (width, _LINE * len(lines) + 6), _BACKGROUND)
        draw = ImageDraw.Draw(caption)
        for i, line in enumerate(lines):
            draw.text((4, 3 + i * _LINE), line, fill=_TEXT)
        panels.append(caption)
    picture = Image.new("RGB", (width, sum(p.height for p in panels) or 1), _BACKGROUND)
    y = 0
    for panel in panels:
        picture.paste(panel, (0, y))
        y += panel.height
    return Rendered(picture, sounds)


def contact_sheet(pictures: Sequence[tuple[str, Image.Image]], cell: int = 200) -> Image.Image:
    """``pictures`` as thumbnails in a grid, each titled."""
    columns = max(1, min(len(pictures), math.ceil(math.sqrt(len(pictures)))))
    rows = max(1, math.ceil(len(pictures) / columns))
    sheet = Image.new("RGB", (columns * cell, rows * (cell + _LINE)), _BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    for i, (title, picture) in enumerate(pictures):
        thumb = picture.copy()
        thumb.thumbnail((cell - 4, cell - 4))
        x, y = (i % columns) * cell, (i // columns) * (cell + _LINE)
        draw.text((x + 2, y), title, fill=_TEXT)
        sheet.paste(thumb, (x + 2, y + _LINE))
    return sheet
