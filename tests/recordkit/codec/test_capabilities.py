"""The optional codec capabilities (sdk/recordkit/codec/_capabilities.py): the Canvas
codecs draw on, and the protocols a codec has by defining their methods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image

import recordkit as rk

GREY = (100, 100, 100)


def _canvas(height: int = 10, width: int = 20, scale: int = 3) -> rk.Canvas:
    return rk.Canvas(
        Image.new("RGB", (width * scale, height * scale), GREY), height=height, width=width, scale=scale
    )


def test_a_point_of_the_image_lands_on_its_canvas_pixel() -> None:
    canvas = _canvas()
    assert canvas.point(4, 2) == (12, 6)
    assert canvas.point(0.5, 0.25, normalized=True) == (30, 8)  # 10 x 20 image, 3 times larger
    assert canvas.size == (60, 30)


def test_a_point_far_outside_is_brought_to_just_beyond_the_edge() -> None:
    canvas = _canvas()  # 60 x 30 canvas pixels
    assert canvas.point(1e30, -1e30) == (120, -60)
    assert canvas.point(float("inf"), float("nan")) == (120, -60)
    assert canvas.point(-5, 15) == (-15, 45)  # nearer than the canvas's larger side: as it is


def test_tints_lie_under_outlines_whatever_the_order() -> None:
    red, blue = (255, 0, 0), (0, 0, 255)
    classes = np.zeros((10, 20), np.uint8)
    classes[:, :10] = 1
    outlined_first, tinted_first = _canvas(), _canvas()
    outlined_first.draw.line((0, 5, 59, 5), fill=red, width=1)
    outlined_first.tint(classes, {1: blue})
    tinted_first.tint(classes, {1: blue})
    tinted_first.draw.line((0, 5, 59, 5), fill=red, width=1)
    first, second = np.asarray(outlined_first.picture()), np.asarray(tinted_first.picture())
    assert np.array_equal(first, second)
    assert tuple(first[5, 3]) == red  # the outline, over the tint
    red_part, _, blue_part = (int(c) for c in first[20, 3])  # class 1: half blue, half the photo
    assert abs(red_part - 50) <= 1
    assert abs(blue_part - 178) <= 1
    assert tuple(first[20, 40]) == GREY  # class 0 has no colour: untouched


def test_a_tag_writes_light_text_on_a_dark_ground_at_its_size() -> None:
    """Class names are readable on any picture: light text on a dark tag at least
    ``tag_size`` pixels tall, not small text in the class colour."""
    for ground in ((128, 128, 128), (255, 255, 255), (0, 200, 0)):
        canvas = rk.Canvas(Image.new("RGB", (120, 60), ground), height=60, width=120)
        canvas.tag((5, 5), "dog")
        pixels = np.asarray(canvas.picture()).astype(int)
        dark = (pixels < 60).all(axis=2)
        light = (pixels > 180).all(axis=2) & ~(pixels == ground).all(axis=2)
        tag_rows = np.where(dark.any(axis=1))[0]
        text_rows = np.where(light[: tag_rows.max() + 1].any(axis=1))[0]
        assert tag_rows.max() - tag_rows.min() + 1 >= rk.Canvas.tag_size, ground
        assert text_rows.max() - text_rows.min() + 1 >= 9, ground
        assert tag_rows.min() <= text_rows.min(), ground
        assert text_rows.max() <= tag_rows.max(), ground


def test_a_class_has_one_colour_everywhere() -> None:
    assert rk.Canvas.color(3) == _canvas().color(3) != rk.Canvas.color(4)
    assert rk.Canvas.color(3) == rk.Canvas.color(3 + 20)  # the palette cycles


class _Plain(rk.Codec[rk.CodecOptions]):
    name = "plain"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": int(value)}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return int(wire[""])

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]


class _Counted(_Plain):
    def summarize(self, value: Any) -> rk.Statistics:
        return {"values": [float(value)]}


def test_a_codec_has_a_capability_by_defining_its_method() -> None:
    plain, counted = _Plain(), _Counted()
    assert not any(
        isinstance(plain, kind)
        for kind in (rk.Drawable, rk.Summarized, rk.Captioned, rk.Pictured, rk.Audible, rk.Convertible)
    )
    assert isinstance(counted, rk.Summarized)
    assert not isinstance(counted, rk.Drawable)
