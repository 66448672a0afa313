"""The conformance kit's checks of the optional capabilities (sdk/recordkit/testing/
_capability_checks.py): run when a codec has a capability, passed by the built-in codecs,
and catching a capability that breaks its promise."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.testing import ConformanceError, check_codec
from recordkit_codecs.bbox import BBoxCodec
from recordkit_codecs.label import LabelCodec
from recordkit_codecs.mask import MaskCodec

DRAW = "draw writes inside the picture's bounds"
FOLLOW = "follow_numpy and follow_tf agree"
SUMMARIZE = "summarize is stable and JSON-serializable"
TFDS = "TFDS features read what the codec stores"


class _Point(rk.Codec[rk.CodecOptions]):
    """One x, y point in pixels: a codec with the contract's methods and nothing more."""

    name = "point"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.FLOAT, (2,)),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": np.asarray(value, dtype=np.float32).reshape(2)}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return np.asarray(wire[""], dtype=np.float32)

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]


POINTS = [[3.0, 4.0], [200.0, -7.5]]


def _check(codec: type[rk.Codec[Any]], tmp_path: Path) -> list[str]:
    return check_codec(codec, POINTS, tmp_path=tmp_path, optional=False, sequence=False).checks


def test_a_codec_with_no_capability_passes_without_their_checks(tmp_path: Path) -> None:
    checks = _check(_Point, tmp_path)
    assert "plain field: numpy decode" in checks
    assert DRAW not in checks
    assert SUMMARIZE not in checks


class _Drawn(_Point):
    def draw(self, canvas: rk.Canvas, value: Any) -> None:
        x, y = canvas.point(float(value[0]), float(value[1]))
        canvas.draw.ellipse((x - 2, y - 2, x + 2, y + 2), fill=canvas.color(0))
        canvas.legend[canvas.label] = canvas.color(0)

    def summarize(self, value: Any) -> rk.Statistics:
        return {"x": [float(value[0])], "quadrant": {f"{value[0] >= 0}-{value[1] >= 0}": 1}}

    def caption(self, value: Any) -> str:
        return f"({value[0]:g}, {value[1]:g})"


def test_each_capability_a_codec_has_is_checked(tmp_path: Path) -> None:
    checks = _check(_Drawn, tmp_path)
    assert {DRAW, SUMMARIZE, "caption"} <= set(checks)


@pytest.mark.parametrize(
    ("codec", "options", "values", "expected"),
    [
        (
            BBoxCodec,
            {"labels": ["cat", "dog"]},
            [{"boxes": [[0.25, 0.5, 0.5, 0.75]], "labels": [1]}],
            {DRAW},
        ),
        (
            BBoxCodec,
            {"labels": ["cat", "dog"], "normalized": False, "format": "cxcywh"},
            [{"boxes": [[30.0, 20.0, 10.0, 8.0], [120.0, 90.0, 4.0, 4.0]], "labels": [1, 0]}],
            {DRAW, FOLLOW},
        ),
        (MaskCodec, {}, [np.eye(6, dtype=np.uint8), np.full((3, 5), 255, np.uint8)], {DRAW, SUMMARIZE}),
        (LabelCodec, {"names": ["cat", "dog"]}, [1, 0], {"caption", SUMMARIZE, TFDS}),
        (
            BBoxCodec,
            {"labels": ["cat"], "extras": ["score"], "stored": "yxyx"},
            [{"boxes": [[0.25, 0.5, 0.5, 0.75]], "labels": [0], "score": [0.5]}],
            {TFDS},
        ),
    ],
)
def test_the_built_in_codecs_pass_the_checks_of_their_capabilities(
    codec: type[rk.Codec[Any]], options: dict[str, Any], values: list[Any], expected: set[str], tmp_path: Path
) -> None:
    report = check_codec(codec, values, options=options, tmp_path=tmp_path, optional=False, sequence=False)
    assert expected <= set(report.checks)


class _DrawsBackwards(_Point):
    """Draws a box from the point to the origin: Pillow refuses a box drawn backwards."""

    def draw(self, canvas: rk.Canvas, value: Any) -> None:
        canvas.draw.rectangle((*canvas.point(float(value[0]), float(value[1])), 0, 0))


_counter = itertools.count()


class _DrawsAtRandom(_Point):
    def draw(self, canvas: rk.Canvas, value: Any) -> None:
        canvas.draw.point((next(_counter) % 50, 3), fill=(255, 0, 0))


class _DrawsOnTheValue(_Point):
    def draw(self, canvas: rk.Canvas, value: Any) -> None:
        value += 1


class _NamesNoColour(_Point):
    def draw(self, canvas: rk.Canvas, value: Any) -> None:
        canvas.legend["point"] = "red"  # type: ignore[assignment]


class _NumpySummary(_Point):
    def summarize(self, value: Any) -> rk.Statistics:
        return {"x": value[:1]}


class _CountingSummary(_Point):
    def summarize(self, value: Any) -> rk.Statistics:
        return {"calls": [float(next(_counter))]}


class _Follows(_Point):
    """A point that moves with its picture: in numpy as it should, in TensorFlow forgetting the flip."""

    def follow_numpy(self, value: Any, transform: rk.ImageTransform, geometry: rk.ImageGeometry) -> Any:
        return np.array([transform.x(value[0]), transform.y(value[1])], np.float32)

    def follow_tf(self, value: Any, transform: rk.ImageTransform, geometry: rk.ImageGeometry) -> Any:
        import tensorflow as tf

        return tf.stack([value[0] * transform.scale_x + transform.shift_x, transform.y(value[1])])


class _MultiLineCaption(_Point):
    def caption(self, value: Any) -> str:
        return f"x {value[0]}\ny {value[1]}"


@pytest.mark.parametrize(
    ("codec", "message"),
    [
        (_DrawsBackwards, r"\[draw\] case 0: raised ValueError"),
        (_DrawsAtRandom, r"\[draw\] case 0: drawing the same value twice gave different pictures"),
        (_DrawsOnTheValue, r"\[draw\] case 0: draw changed the value it was given"),
        (_NamesNoColour, r"\[draw\] case 0: legend entry 'point': 'red' is not an RGB triple"),
        (_NumpySummary, r"\[summarize\] case 0: 'x': array\(\[3\.\], dtype=float32\) is neither"),
        (_CountingSummary, r"\[summarize\] case 0: the same value gave other statistics the second time"),
        (_MultiLineCaption, r"\[caption\] case 0: gave 'x 3.0\\ny 4.0', not one line of text"),
        (_Follows, r"\[follow\] case 0: follow_numpy gave \[64\.5, 5\.0\], follow_tf \[-0\.5, 5\.0\]"),
    ],
)
def test_a_capability_that_breaks_its_promise_is_caught(
    codec: type[rk.Codec[Any]], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConformanceError, match=message):
        _check(codec, tmp_path)


class _ClaimsTfdsReadsItsPointAsText(_Point):
    def tfds_features(self) -> tuple[rk.TfdsFeature, ...]:
        return (rk.TfdsFeature({"pythonClassName": "x.Text"}, rk.WireKind.BYTES),)


def test_a_tfds_feature_that_parses_other_values_than_the_codec_stores_fails_the_kit(tmp_path: Path) -> None:
    with pytest.raises(
        ConformanceError,
        match=r"wire feature '' parses bytes of shape \(\); the codec stores float of shape \(2,\)",
    ):
        _check(_ClaimsTfdsReadsItsPointAsText, tmp_path)
