"""Records drawn as pictures with Pillow, for ``recordkit show``.

A record becomes one RGB picture, top to bottom: each image field (scaled up by a whole
factor when small, so boxes stay on exact pixels), with the record's boxes drawn on
the image their bbox field names (or the first image) in one colour per class and
labelled with the class name, and masks laid over it, half transparent, with a legend
of the classes present; each audio field as its waveform above its spectrogram; then
the other fields (text, labels by name, scalars, tensor summaries) as caption lines.
Pictures are drawn with Pillow's ``ImageDraw``; no pixel is set by hand.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from recordkit.schema._bound import BoundField

__all__ = [
    "BOX_WIDTH",
    "MIN_SIDE",
    "PALETTE",
    "Rendered",
    "box_color",
    "contact_sheet",
    "render_record",
    "scale_of",
]

#: Images smaller than this (their longer side) are scaled up by a whole factor.
MIN_SIDE = 256
#: Width in pixels of a box's outline (after scaling).
BOX_WIDTH = 2
#: Class colours, by class id (cycled).
PALETTE: tuple[tuple[int, int, int], ...] = (
    (230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
    (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212), (0, 128, 128), (220, 190, 255),
    (170, 110, 40), (255, 250, 200), (128, 0, 0), (170, 255, 195), (128, 128, 0), (255, 215, 180),
    (0, 0, 128), (128, 128, 128),
)  # fmt: skip
_TEXT = (20, 20, 20)
_BACKGROUND = (255, 255, 255)
_LINE = 14  # pixels per caption line (Pillow's default font)


def box_color(class_id: int) -> tuple[int, int, int]:
    """The colour boxes and masks of class ``class_id`` are drawn in."""
    return PALETTE[class_id % len(PALETTE)]


def scale_of(height: int, width: int) -> int:
    """The whole factor an image of this size is drawn at."""
    return max(1, MIN_SIDE // max(height, width, 1))


@dataclasses.dataclass
class Rendered:
    """A drawn record, and the audio it holds (field name to samples and rate) for WAVs."""

    picture: Image.Image
    audio: dict[str, tuple[np.ndarray, int]]


def _xyxy(boxes: np.ndarray, fmt: str) -> np.ndarray:
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    a, b, c, d = boxes.T
    if fmt == "xywh":
        return np.stack([a, b, a + c, b + d], axis=1)
    if fmt == "yxyx":
        return np.stack([b, a, d, c], axis=1)
    if fmt == "cxcywh":
        return np.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], axis=1)
    return boxes


def _boxes_of(field: BoundField, value: Any) -> tuple[np.ndarray, list[int], list[str]]:
    """A bbox field's decoded value as xyxy (in the stored units), class ids and names."""
    options = field.spec.options
    if isinstance(value, dict):
        boxes, ids = value["boxes"], [int(i) for i in value.get("labels", [])]
    else:
        boxes, ids = value, []
    names = options.get("labels") or []
    return (
        _xyxy(boxes, options.get("format", "xyxy")),
        ids,
        [names[i] if i < len(names) else str(i) for i in ids],
    )


def _as_rgb(pixels: np.ndarray) -> Image.Image:
    array = np.asarray(pixels)
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.dtype != np.uint8:
        array = np.clip(array * (255 if array.max() <= 1 else 1), 0, 255).astype(np.uint8)
    return Image.fromarray(array).convert("RGB")


def _overlay(base: Image.Image, mask: np.ndarray, colors: dict[int, tuple[int, int, int]]) -> Image.Image:
    """``base`` with each class of ``mask`` (resized to it, nearest) tinted in its colour."""
    index = Image.fromarray(np.asarray(mask, dtype=np.uint8)).resize(base.size, Image.Resampling.NEAREST)
    colour = Image.new("RGB", base.size)
    alpha = Image.new("L", base.size, 0)
    draw_c, draw_a = ImageDraw.Draw(colour), ImageDraw.Draw(alpha)
    values = np.asarray(index)
    for class_id, rgb in colors.items():
        region = Image.fromarray((values == class_id).astype(np.uint8) * 255)
        draw_c.bitmap((0, 0), region, fill=rgb)
        draw_a.bitmap((0, 0), region, fill=128)
    return Image.composite(colour, base, alpha)


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


def _caption(field: BoundField, value: Any) -> str:
    codec = field.spec.codec
    if value is None:
        return f"{field.name}: (absent)"
    if codec == "label":
        names = field.spec.options.get("names") or []
        ids = [int(v) for v in np.atleast_1d(value)]
        shown = [names[i] if i < len(names) else str(i) for i in ids]
        return f"{field.name}: {', '.join(shown)}"
    if isinstance(value, np.ndarray) and value.size > 8:
        return f"{field.name}: array {value.shape} {value.dtype} min {value.min():.3g} max {value.max():.3g}"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = str(value.tolist() if isinstance(value, np.ndarray) else value)
    return f"{field.name}: {text if len(text) <= 120 else text[:117] + '...'}"


def render_record(fields: Sequence[BoundField], record: dict[str, Any]) -> Rendered:
    """Draw ``record`` (decoded with ``fields``) as the module docs say."""
    pictures = [
        f
        for f in fields
        if f.codec.raster == "pixels" and not f.spec.sequence and record.get(f.name) is not None
    ]
    masks = [f for f in fields if f.codec.raster == "indices" and record.get(f.name) is not None]
    boxes = [f for f in fields if f.spec.codec == "bbox" and record.get(f.name) is not None]
    audio = [f for f in fields if f.spec.codec == "audio" and record.get(f.name) is not None]
    drawn = {f.name for f in pictures + masks + boxes + audio}
    panels: list[Image.Image] = []
    legend: dict[str, tuple[int, int, int]] = {}
    for picture_field in pictures or masks[:1]:
        value = record[picture_field.name]
        base = _as_rgb(
            value if picture_field in pictures else np.zeros((*np.asarray(value).shape[:2], 3), np.uint8)
        )
        height, width = np.asarray(value).shape[:2]
        scale = scale_of(height, width)
        base = base.resize((width * scale, height * scale), Image.Resampling.NEAREST)
        for mask_field in masks:
            values = record[mask_field.name]
            instances = list(values) if mask_field.spec.sequence else [values]
            for i, mask in enumerate(instances):
                ignore = mask_field.spec.options.get("ignore_index", 255)
                if mask_field.spec.sequence:
                    colors = {1: box_color(i)}
                    legend[f"{mask_field.name}[{i}]"] = box_color(i)
                else:
                    present = sorted(int(c) for c in np.unique(mask) if int(c) not in (0, ignore))
                    colors = {c: box_color(c) for c in present}
                    legend.update({f"{mask_field.name} class {c}": box_color(c) for c in present})
                    if ignore is not None and (np.asarray(mask) == ignore).any():
                        colors[ignore] = (255, 255, 255)
                        legend[f"{mask_field.name} ignore ({ignore})"] = (255, 255, 255)
                base = _overlay(base, mask, colors)
        draw = ImageDraw.Draw(base)
        for box_field in boxes:
            target = box_field.spec.options.get("image_field")
            if target not in (None, picture_field.name) and target in record:
                continue
            xyxy, ids, names = _boxes_of(box_field, record[box_field.name])
            factor = (width, height) if box_field.spec.options.get("normalized", True) else (1, 1)
            for j, (x0, y0, x1, y1) in enumerate(xyxy):
                rgb = box_color(ids[j]) if ids else box_color(0)
                corners = [round(v * factor[k % 2] * scale) for k, v in enumerate((x0, y0, x1, y1))]
                draw.rectangle(corners, outline=rgb, width=BOX_WIDTH)
                if names:
                    draw.text((corners[0] + BOX_WIDTH + 1, corners[1] + BOX_WIDTH), names[j], fill=rgb)
        panels.append(base)
    sounds: dict[str, tuple[np.ndarray, int]] = {}
    for audio_field in audio:
        rate = int(audio_field.spec.options.get("sample_rate", 16000))
        sounds[audio_field.name] = (np.asarray(record[audio_field.name]), rate)
        panels.append(_audio_panel(record[audio_field.name], rate))
    width = max([p.width for p in panels] + [320])
    if legend:
        panels.append(_legend(list(legend.items()), width))
    lines = [_caption(f, record.get(f.name)) for f in fields if f.name not in drawn]
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
