"""The ``keypoints`` codec: K points per record, each ``(x, y)`` or ``(x, y, visibility)``.

A value is a ``K x 2`` array of ``x, y`` coordinates, or, with ``visibility: true``, a
``K x 3`` array whose last column is COCO's visibility flag (0: not labelled, 1:
labelled but hidden, 2: visible). COCO's flat list ``[x1, y1, v1, x2, y2, v2, ...]`` is
accepted too. ``num_keypoints`` (or ``names``) fixes K; without it each record may hold
any number of points.

On the wire the coordinates are one packed float list (``<field>``, shape ``(K, 2)``)
and the flags an int64 list (``<field>/visibility``, shape ``(K,)``; a flag is one byte
on the wire). Decoding gives float32 arrays of the input's shape: dense ``[B, K, w]`` in
TensorFlow when K is fixed, ragged ``[B, (K), w]`` when it varies.

``recordkit show`` draws the points on the record's image (:meth:`KeypointsCodec.draw`)
and ``recordkit stats`` counts them (:meth:`KeypointsCodec.summarize`): two of the
optional capabilities a codec may have.

This module imports only recordkit's public API, as every plugin should.
"""

from __future__ import annotations

# --8<-- [start:header]
from collections.abc import Mapping
from typing import Any

import numpy as np
import pydantic

import recordkit as rk

__all__ = [
    "COCO_PERSON_KEYPOINTS",
    "KeypointsCodec",
    "KeypointsOptions",
    "decode_keypoints_tf",
    "recordkit_register_codecs",
]

#: The 17 keypoints of COCO's person annotations, in COCO's order.
COCO_PERSON_KEYPOINTS = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear",
    "left_shoulder", "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist",
    "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle",
)  # fmt: skip

_VISIBILITY_FLAGS = (0, 1, 2)
_NOT_LABELLED, _VISIBLE = 0, 2
_FLOAT32_MAX = float(np.finfo(np.float32).max)
# --8<-- [end:header]


# --8<-- [start:options]
class KeypointsOptions(rk.CodecOptions):
    """Options of the ``keypoints`` codec."""

    num_keypoints: int | None = pydantic.Field(
        default=None, ge=1, description="Keypoints per record; unset: any number (ragged)."
    )
    names: tuple[str, ...] = pydantic.Field(
        default=(), description="A name per keypoint, in order; fixes num_keypoints to their count."
    )
    visibility: bool = pydantic.Field(
        default=False, description="Each keypoint carries a COCO visibility flag (values are K x 3)."
    )
    normalized: bool = pydantic.Field(
        default=False, description="Coordinates are fractions of the image size, checked to lie in [0, 1]."
    )
    image_field: str | None = pydantic.Field(
        default=None, description="The record's image field: the points move with it when readers fit it."
    )

    @pydantic.model_validator(mode="after")
    def _names_match_count(self) -> KeypointsOptions:
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"names must be unique, got {list(self.names)}")
        if self.names and self.num_keypoints is not None and self.num_keypoints != len(self.names):
            raise ValueError(f"num_keypoints is {self.num_keypoints} but {len(self.names)} names are given")
        return self

    @property
    def count(self) -> int | None:
        """K when every record holds the same number of keypoints, else None."""
        return self.num_keypoints if self.num_keypoints is not None else (len(self.names) or None)

    @property
    def width(self) -> int:
        """Values per keypoint: 2 (x, y) or 3 (x, y, visibility)."""
        return 3 if self.visibility else 2
# --8<-- [end:options]


# --8<-- [start:codec]
class KeypointsCodec(rk.Codec[KeypointsOptions]):
    """K keypoints per record as float32 ``(x, y)``, optionally with COCO visibility."""

    name = "keypoints"
    version = "1"
    options_model = KeypointsOptions
    summary = "K keypoints (x, y) per record, optionally with COCO visibility flags"

    def wire_spec(self) -> rk.WireSpec:
        count = self.options.count
        features = [rk.WireFeature("", rk.WireKind.FLOAT, (count, 2), "x, y of each keypoint")]
        if self.options.visibility:
            features.append(
                rk.WireFeature("visibility", rk.WireKind.INT64, (count,), "COCO visibility flag (0, 1, 2)")
            )
        return rk.WireSpec(tuple(features))
# --8<-- [end:codec]

    # -- encoding ----------------------------------------------------------------------

    # --8<-- [start:encode]
    def encode(self, value: Any) -> rk.WireValues:
        points = self._as_points(value)
        xy = points[:, :2]
        self._fail_at(~np.isfinite(xy), "has a coordinate that is not finite")
        self._fail_at(np.abs(xy) > _FLOAT32_MAX, "has a coordinate that overflows float32")
        if self.options.normalized:
            self._fail_at((xy < 0) | (xy > 1), "is outside [0, 1] (the codec's 'normalized' option is set)")
        wire: dict[str, Any] = {"": xy.astype(np.float32)}
        if self.options.visibility:
            flags = points[:, 2]
            self._fail_at(~np.isin(flags, _VISIBILITY_FLAGS), "has a visibility flag that is not 0, 1 or 2")
            wire["visibility"] = flags.astype(np.int64)
        return wire
    # --8<-- [end:encode]

    # --8<-- [start:helpers]
    def _as_points(self, value: Any) -> np.ndarray:
        """``value`` as a float64 ``K x width`` array, or InvalidValueError saying why not."""
        width = self.options.width
        layout = "x, y, visibility" if self.options.visibility else "x, y"
        if isinstance(value, (str, bytes, Mapping)):
            raise rk.errors.InvalidValueError(
                f"expected a K x {width} array of keypoints ({layout}), got {type(value).__name__}"
            )
        try:
            array = np.asarray(value)
        except ValueError as exc:  # ragged nested lists
            raise rk.errors.InvalidValueError(f"expected a K x {width} array of keypoints: {exc}") from None
        if array.size and array.dtype.kind not in "iuf":
            raise rk.errors.InvalidValueError(f"expected numbers, got an array of dtype {array.dtype}")
        if array.ndim == 1:
            if array.size % width:
                raise rk.errors.InvalidValueError(
                    f"a flat list of keypoints needs {width} numbers ({layout}) per keypoint, "
                    f"got {array.size} numbers"
                )
            array = array.reshape(-1, width)
        elif array.ndim != 2 or array.shape[1] != width:
            raise rk.errors.InvalidValueError(
                f"expected a K x {width} array of keypoints ({layout}), got shape {array.shape}"
            )
        count = self.options.count
        if count is not None and array.shape[0] != count:
            raise rk.errors.InvalidValueError(f"expected {count} keypoints, got {array.shape[0]}")
        return array.astype(np.float64)

    def _fail_at(self, bad: np.ndarray, problem: str) -> None:
        """Raise naming the first keypoint (index and name) where ``bad`` holds."""
        if not bad.any():
            return
        rows = np.flatnonzero(bad.reshape(len(bad), -1).any(axis=1))
        first = int(rows[0])
        label = f"keypoint {first}"
        if self.options.names:
            label += f" ({self.options.names[first]!r})"
        more = f" (and {len(rows) - 1} more)" if len(rows) > 1 else ""
        raise rk.errors.InvalidValueError(f"{label} {problem}{more}")
    # --8<-- [end:helpers]

    # -- decoding ----------------------------------------------------------------------

    # --8<-- [start:decode]
    def decode_numpy(self, wire: Mapping[str, Any]) -> np.ndarray:
        xy = np.asarray(wire[""], dtype=np.float32).reshape(-1, 2)
        if not self.options.visibility:
            return xy
        flags = np.asarray(wire["visibility"], dtype=np.float32).reshape(-1, 1)
        return np.concatenate([xy, flags], axis=1)

    def decode_tf_source(self) -> rk.DecodeSource:
        return rk.DecodeSource(decode_keypoints_tf, {"visibility": self.options.visibility})
    # --8<-- [end:decode]

    # -- showing and counting (optional capabilities) ----------------------------------

    # --8<-- [start:draw]
    def draw(self, canvas: rk.Canvas, value: Any) -> None:
        """Each labelled keypoint as a dot in its own colour (hidden ones as a ring),
        named in the legend when the codec has names (rk.Drawable)."""
        points = np.asarray(value, dtype=np.float64).reshape(-1, self.options.width)
        draw = canvas.draw
        radius = 2 + canvas.line_width
        for k, point in enumerate(points):
            flag = int(point[2]) if self.options.visibility else _VISIBLE
            if flag == _NOT_LABELLED:
                continue
            x, y = canvas.point(point[0], point[1], normalized=self.options.normalized)
            colour = canvas.color(k)
            box = (x - radius, y - radius, x + radius, y + radius)
            if flag == _VISIBLE:
                draw.ellipse(box, fill=colour, outline=colour)
            else:
                draw.ellipse(box, outline=colour, width=canvas.line_width)
            if self.options.names:
                canvas.legend[f"{canvas.label}: {self.options.names[k]}"] = colour
    # --8<-- [end:draw]

    # --8<-- [start:summarize]
    def summarize(self, value: Any) -> rk.Statistics:
        """Keypoints per record, and labelled keypoints by name (or index) and by
        visibility (rk.Summarized)."""
        points = np.asarray(value, dtype=np.float64).reshape(-1, self.options.width)
        flags = points[:, 2].astype(int) if self.options.visibility else np.full(len(points), _VISIBLE)
        labelled = [k for k in range(len(points)) if flags[k] != _NOT_LABELLED]
        names = self.options.names
        out: rk.Statistics = {
            "keypoints_per_record": [float(len(points))],
            "labelled": {(names[k] if names else str(k)): 1 for k in labelled},
        }
        if self.options.visibility:
            words = ("not labelled", "hidden", "visible")
            counts = np.bincount(flags, minlength=len(words))
            out["visibility"] = {words[f]: int(n) for f, n in enumerate(counts) if n}
        return out
    # --8<-- [end:summarize]

    # --8<-- [start:caption]
    def caption(self, value: Any) -> str:
        """How many keypoints, and how many are labelled (rk.Captioned)."""
        points = np.asarray(value).reshape(-1, self.options.width)
        if not self.options.visibility:
            return f"{len(points)} keypoints"
        return f"{len(points)} keypoints, {int((points[:, 2] != _NOT_LABELLED).sum())} labelled"
    # --8<-- [end:caption]

    # -- following the image (an optional capability) ---------------------------------

    # --8<-- [start:follow]
    def related_fields(self) -> tuple[str, ...]:
        return (self.options.image_field,) if self.options.image_field else ()

    def follow_numpy(self, value: Any, transform: rk.ImageTransform, geometry: rk.ImageGeometry) -> Any:
        """The points moved with their image (rk.FollowsImage): a point the fit leaves
        outside the picture keeps its coordinates and, with visibility, is marked not
        labelled (0). Left and right keep their names when the image is flipped."""
        points = np.array(value, dtype=np.float64).reshape(-1, self.options.width)
        xy = points[:, :2]
        if self.options.normalized:
            xy = xy * [transform.source_width, transform.source_height]
        x, y = transform.x(xy[:, 0]), transform.y(xy[:, 1])
        if self.options.visibility:
            outside = (x < 0) | (x > transform.width) | (y < 0) | (y > transform.height)
            points[:, 2] = np.where(outside, _NOT_LABELLED, points[:, 2])
        if self._normalized_out(geometry):
            x, y = x / transform.width, y / transform.height
        points[:, 0], points[:, 1] = x, y
        return points.astype(np.float32)

    def follow_tf(self, value: Any, transform: rk.ImageTransform, geometry: rk.ImageGeometry) -> Any:
        """:meth:`follow_numpy` in TensorFlow, on one record's points."""
        import tensorflow as tf

        points = tf.reshape(tf.cast(value, tf.float32), [-1, self.options.width])
        x, y = points[:, 0], points[:, 1]
        if self.options.normalized:
            x, y = x * transform.source_width, y * transform.source_height
        x, y = transform.x(x), transform.y(y)
        columns = []
        if self.options.visibility:
            outside = (x < 0) | (x > transform.width) | (y < 0) | (y > transform.height)
            columns.append(tf.where(outside, tf.zeros_like(x), points[:, 2]))
        if self._normalized_out(geometry):
            x, y = x / transform.width, y / transform.height
        return tf.stack([x, y, *columns], axis=1)

    def _normalized_out(self, geometry: rk.ImageGeometry) -> bool:
        return self.options.normalized if geometry.normalized is None else geometry.normalized
    # --8<-- [end:follow]


# --8<-- [start:decode_function]
def decode_keypoints_tf(wire: Mapping[str, Any], visibility: bool) -> Any:
    """The batched TensorFlow decode, written once: ``decode_tf`` runs it, and parser
    modules generated by ``recordkit codegen`` carry a copy of it (TensorFlow only)."""
    import tensorflow as tf

    points = wire[""]
    if not visibility:
        return points
    flags = tf.cast(wire["visibility"], tf.float32)
    if isinstance(points, tf.RaggedTensor):
        # [B, (K), 2] and [B, (K)] share their row splits: join the flat values.
        xy = tf.reshape(points.flat_values, [-1, 2])
        v = tf.reshape(flags.flat_values, [-1, 1])
        joined = tf.concat([xy, v], axis=1)
        return tf.RaggedTensor.from_row_splits(joined, points.row_splits, validate=False)
    return tf.concat([points, flags[..., tf.newaxis]], axis=-1)
# --8<-- [end:decode_function]


# --8<-- [start:hook]
@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    """Register the ``keypoints`` codec."""
    registry.register(KeypointsCodec)
# --8<-- [end:hook]
