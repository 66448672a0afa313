"""The conformance checks of a codec's optional capabilities (see
:mod:`recordkit.codec._capabilities`): each runs only when the codec has the capability,
on the example values decoded as the numpy reader gives them (what ``recordkit show`` and
``recordkit stats`` pass to the codec).

* ``picture``: 8-bit pixels, ``[H, W]`` or ``[H, W, 1|3|4]``.
* ``draw``: writes inside the picture's bounds: on a canvas of a picture (the value's
  :meth:`~recordkit.Backdrop.backdrop_size`, or 48 x 64 drawn twice as large), the draw
  raises nothing, leaves the picture its size, names colours in the legend as RGB
  triples, gives the same pixels every time, and leaves the value as it was.
* ``summarize``: stable and JSON-serializable: statistics by name, each a list of numbers
  or counts (str to int), that ``json.dumps`` writes, the same for the same value, and
  the value left as it was.
* ``caption``: one line of text. ``sound``: samples ``[N]`` or ``[N, C]`` and a positive rate.
* ``follow_numpy`` and ``follow_tf``: the same numbers (within 1e-3) for one transform
  (a picture halved, shifted and flipped), the same keys, and the value left as it was.
* ``tfds_features``: each TFDS feature reads a wire feature the codec has, of the kind
  and shape it declares (a ValueError, options TFDS cannot read, passes), so that
  :func:`recordkit.write_tfds_metadata` never describes bytes TFDS would misread.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from PIL import Image

from recordkit.codec._capabilities import (
    Audible,
    Backdrop,
    Canvas,
    Captioned,
    Drawable,
    Pictured,
    Summarized,
    TfdsDescribed,
)
from recordkit.codec._codec import Codec
from recordkit.codec._geometry import FollowsImage, ImageGeometry, ImageTransform
from recordkit.read._numpy_decode import decode_record_numpy
from recordkit.schema._encoder import RecordEncoder
from recordkit.schema._schema import BoundSchema

__all__ = ["CapabilityError", "check_capabilities"]

#: The name of the check of a codec's TFDS features (:class:`~recordkit.TfdsDescribed`).
TFDS_CHECK = "TFDS features read what the codec stores"
#: The picture values are drawn on when they cover none of their own: height, width, scale.
CANVAS = (48, 64, 2)
_GREY = (128, 128, 128)


class CapabilityError(AssertionError):
    """A capability that does not keep its promise: the check, the case and what went wrong."""

    def __init__(self, check: str, case: str, detail: str) -> None:
        super().__init__(f"{check} [{case}]: {detail}")
        self.check, self.case, self.detail = check, case, detail


def _decoded(bound: BoundSchema, values: Sequence[Any]) -> list[Any]:
    encoder = RecordEncoder(bound)
    field = bound.fields[0]
    return [
        decode_record_numpy(bound.fields, encoder.encode({field.name: value}, i), index=i)[field.name]
        for i, value in enumerate(values)
    ]


def _same(a: Any, b: Any) -> bool:
    return json.dumps(_jsonable(a), sort_keys=True) == json.dumps(_jsonable(b), sort_keys=True)


def _jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data, to compare values before and after a call."""
    if isinstance(value, np.ndarray):
        return [str(value.dtype), list(value.shape), value.tobytes().hex()]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return repr(value)


def _call(check: str, case: str, method: Callable[..., Any], *args: Any) -> Any:
    try:
        return method(*args)
    except Exception as exc:
        raise CapabilityError(check, case, f"raised {type(exc).__name__}: {exc}") from exc


def _drawn(codec: Drawable, value: Any, case: str) -> tuple[np.ndarray, dict[str, Any]]:
    height, width, scale = CANVAS
    if isinstance(codec, Backdrop):
        size = _call("draw", case, codec.backdrop_size, value)
        if not (len(size) == 2 and all(isinstance(s, int) and s > 0 for s in size)):
            raise CapabilityError("draw", case, f"backdrop_size gave {size!r}, not two positive ints")
        height, width = size
    picture = Image.new("RGB", (width * scale, height * scale), _GREY)
    canvas = Canvas(picture, height=height, width=width, scale=scale)
    canvas.label = "value"
    _call("draw", case, codec.draw, canvas, value)
    drawn = canvas.picture()
    if drawn.size != picture.size or drawn.mode != "RGB":
        raise CapabilityError(
            "draw", case, f"the picture became {drawn.mode} {drawn.size}, not RGB {picture.size}"
        )
    for name, colour in canvas.legend.items():
        triple = isinstance(colour, tuple) and len(colour) == 3
        if not (
            isinstance(name, str) and triple and all(isinstance(c, int) and 0 <= c <= 255 for c in colour)
        ):
            raise CapabilityError("draw", case, f"legend entry {name!r}: {colour!r} is not an RGB triple")
    return np.asarray(drawn), dict(canvas.legend)


def _check_draw(codec: Drawable, value: Any, case: str) -> None:
    before = copy.deepcopy(value)
    first, legend = _drawn(codec, value, case)
    second, again = _drawn(codec, value, case)
    if not np.array_equal(first, second) or legend != again:
        raise CapabilityError("draw", case, "drawing the same value twice gave different pictures")
    if not _same(before, value):
        raise CapabilityError("draw", case, "draw changed the value it was given")


def _check_summary(codec: Summarized, value: Any, case: str) -> None:
    before = copy.deepcopy(value)
    summary = _call("summarize", case, codec.summarize, value)
    if not isinstance(summary, dict):
        raise CapabilityError("summarize", case, f"gave {type(summary).__name__}, not a dict")
    for name, data in summary.items():
        numbers = isinstance(data, list) and all(
            isinstance(n, (int, float)) and not isinstance(n, bool) for n in data
        )
        counts = isinstance(data, dict) and all(
            isinstance(k, str) and isinstance(n, int) and not isinstance(n, bool) and n >= 0
            for k, n in data.items()
        )
        if not isinstance(name, str) or not (numbers or counts):
            raise CapabilityError(
                "summarize", case, f"{name!r}: {data!r} is neither a list of numbers nor counts (str to int)"
            )
    try:
        text = json.dumps(summary, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise CapabilityError("summarize", case, f"not JSON-serializable: {exc}") from None
    if json.dumps(_call("summarize", case, codec.summarize, value), sort_keys=True) != text:
        raise CapabilityError("summarize", case, "the same value gave other statistics the second time")
    if not _same(before, value):
        raise CapabilityError("summarize", case, "summarize changed the value it was given")


def _check_picture(codec: Pictured, value: Any, case: str) -> None:
    pixels = _call("picture", case, codec.picture, value)
    array = np.asarray(pixels)
    shape_ok = array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (1, 3, 4))
    if array.dtype != np.uint8 or not shape_ok:
        raise CapabilityError(
            "picture", case, f"gave {array.dtype} {array.shape}, not uint8 [H, W] or [H, W, 1|3|4]"
        )


def _check_caption(codec: Captioned, value: Any, case: str) -> None:
    text = _call("caption", case, codec.caption, value)
    if not isinstance(text, str) or "\n" in text:
        raise CapabilityError("caption", case, f"gave {text!r}, not one line of text")


def _check_sound(codec: Audible, value: Any, case: str) -> None:
    samples, rate = _call("sound", case, codec.sound, value)
    array = np.asarray(samples)
    if array.ndim not in (1, 2) or not isinstance(rate, int) or rate <= 0:
        raise CapabilityError(
            "sound", case, f"gave samples {array.shape} at {rate!r}, not [N] or [N, C] at a positive rate"
        )


#: The transform the follow check moves values by: a 96 x 128 picture halved, shifted, flipped.
_MOVE = {
    "source_height": 96.0,
    "source_width": 128.0,
    "height": 48.0,
    "width": 64.0,
    "scale_y": 0.5,
    "scale_x": 0.5,
    "shift_y": 3.0,
    "shift_x": -2.0,
    "flip": 1.0,
}


def _check_follow(codec: FollowsImage, value: Any, case: str) -> None:
    import tensorflow as tf

    if value is None:
        return
    before = copy.deepcopy(value)
    geometry = ImageGeometry()
    by_numpy = _call("follow", case, codec.follow_numpy, value, ImageTransform(**_MOVE), geometry)
    if not _same(before, value):
        raise CapabilityError("follow", case, "follow_numpy changed the value it was given")
    tensors = ImageTransform(**{key: tf.constant(number, tf.float32) for key, number in _MOVE.items()})
    given = tf.nest.map_structure(tf.constant, value)
    by_tf = _call("follow", case, codec.follow_tf, given, tensors, geometry)
    numpy_leaves, tf_leaves = tf.nest.flatten(by_numpy), tf.nest.flatten(by_tf)
    keys = sorted(by_numpy) if isinstance(by_numpy, dict) else None
    if keys != (sorted(by_tf) if isinstance(by_tf, dict) else None) or len(numpy_leaves) != len(tf_leaves):
        raise CapabilityError("follow", case, "follow_numpy and follow_tf gave values of other structures")
    for a, b in zip(numpy_leaves, tf_leaves, strict=True):
        left, right = np.asarray(a, np.float64), np.asarray(np.asarray(b), np.float64)
        if left.shape != right.shape or not np.allclose(left, right, rtol=1e-5, atol=1e-3):
            raise CapabilityError(
                "follow", case, f"follow_numpy gave {left.tolist()}, follow_tf {right.tolist()}"
            )


def _check_tfds(codec: Codec[Any]) -> None:
    if not isinstance(codec, TfdsDescribed):
        return
    try:
        features = codec.tfds_features()
    except ValueError:
        return  # these options have no TFDS feature, and say why
    stored = {feature.name: feature for feature in codec.wire_spec()}
    for feature in features:
        own = stored.get(feature.wire)
        if own is None:
            raise CapabilityError(
                "tfds",
                "options",
                f"a TFDS feature reads wire feature {feature.wire!r}, which the wire spec lacks",
            )
        if own.kind is not feature.kind or tuple(own.shape) != tuple(feature.shape):
            raise CapabilityError(
                "tfds",
                "options",
                f"the TFDS feature of wire feature {feature.wire!r} parses {feature.kind.value} of shape "
                f"{feature.shape}; the codec stores {own.kind.value} of shape {own.shape}",
            )


def check_capabilities(
    codec: Codec[Any], bound: BoundSchema, values: Sequence[Any], passed: Callable[[str], None]
) -> None:
    """Check each capability ``codec`` (the codec of ``bound``'s one field) has, on
    ``values`` written and read back; call ``passed`` with each check's name. Raise
    :class:`CapabilityError` on the first promise broken."""
    checks: list[tuple[str, type, Callable[[Any, Any, str], None]]] = [
        ("picture", Pictured, _check_picture),
        ("draw writes inside the picture's bounds", Drawable, _check_draw),
        ("summarize is stable and JSON-serializable", Summarized, _check_summary),
        ("caption", Captioned, _check_caption),
        ("sound", Audible, _check_sound),
        ("follow_numpy and follow_tf agree", FollowsImage, _check_follow),
    ]
    if isinstance(codec, TfdsDescribed):
        _check_tfds(codec)
        passed(TFDS_CHECK)
    present = [(name, check) for name, kind, check in checks if isinstance(codec, kind)]
    if not present:
        return
    decoded = _decoded(bound, values)
    for name, check in present:
        for i, value in enumerate(decoded):
            check(codec, value, f"case {i}")
        passed(name)
