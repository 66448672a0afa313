"""How ``recordkit show`` lays out a record (sdk/recordkit/tools/_render.py): pictures with
the drawable values that belong on them, by the codecs' capabilities, never their names."""

from __future__ import annotations

from typing import Any

import numpy as np

import recordkit as rk
from recordkit.tools._render import render_record, scale_of

GREY = (90, 90, 90)


def _fields(**specs: rk.FieldSpec) -> list[rk.BoundField]:
    return list(rk.Schema(name="drawn", fields=specs).bind(rk.default_registry()).fields)


def _grey(height: int, width: int) -> np.ndarray:
    return np.full((height, width, 3), GREY, np.uint8)


def test_a_value_is_drawn_on_the_picture_its_codec_relates_it_to() -> None:
    fields = _fields(
        left=rk.FieldSpec(codec="image"),
        right=rk.FieldSpec(codec="image"),
        boxes=rk.FieldSpec(codec="bbox", options={"image_field": "right"}),
    )
    record: dict[str, Any] = {
        "left": _grey(32, 32),
        "right": _grey(32, 32),
        "boxes": np.array([[0.25, 0.25, 0.75, 0.75]], np.float32),
    }
    picture = np.asarray(render_record(fields, record).picture)
    side = 32 * scale_of(32, 32)
    edge, middle = side // 4, side // 2
    assert tuple(picture[middle, edge]) == GREY  # the left image: no box
    assert tuple(picture[side + middle, edge]) == rk.Canvas.color(0)  # the right one: its left edge


def test_a_record_with_masks_and_no_image_is_drawn_on_black() -> None:
    fields = _fields(mask=rk.FieldSpec(codec="mask"))
    mask = np.zeros((8, 8), np.uint8)
    mask[:, :4] = 1
    picture = np.asarray(render_record(fields, {"mask": mask}).picture)
    side = 8 * scale_of(8, 8)
    tinted = picture[side // 2, side // 4]
    assert tuple(picture[side // 2, 3 * side // 4]) == (0, 0, 0)  # background: black, untinted
    assert tinted.any()
    assert picture.shape[0] > side  # the legend under it names the class


def test_boxes_without_a_picture_are_captioned_not_lost() -> None:
    fields = _fields(boxes=rk.FieldSpec(codec="bbox", options={"labels": ["cat", "dog"]}))
    record = {"boxes": {"boxes": np.array([[0.1, 0.1, 0.5, 0.5]], np.float32), "labels": np.array([1])}}
    picture = np.asarray(render_record(fields, record).picture)
    assert picture.shape[0] == 20  # one caption line: "boxes: 1 box: dog"
    assert (picture != 255).any()
    codec = fields[0].codec
    assert isinstance(codec, rk.Captioned)
    assert codec.caption(record["boxes"]) == "1 box: dog"
