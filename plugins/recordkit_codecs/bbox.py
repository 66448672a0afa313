"""The ``bbox`` codec: a variable number of bounding boxes per record.

Records give boxes in the schema's declared ``format`` (``xyxy``, ``xywh``, ``yxyx`` or
``cxcywh``), in ``[0, 1]`` image coordinates (``normalized: true``) or in pixels.
Whatever the declared format, boxes are stored in one canonical form: float32
``x_min, y_min, x_max, y_max`` under the field's main key, so the format is not part of
the schema's fingerprint (it is a *decode option*). With ``labels`` each box has a class
id (under ``<field>/labels``) and each name of ``extras`` adds a float32 value per box
(under ``<field>/<name>``, e.g. scores).

How they are stored is the ``layout``: ``packed`` (version 2's default for what recordkit
writes) stores each record's boxes, ids and extras as one little-endian bytes value
each, ids in the narrowest integer type for the schema's labels; ``lists`` stores float
and int64 lists of shape ``(None, 4)`` and ``(None,)``, as version 1 did and other tools
do (the layout of fields with ``stored: yxyx`` or mapped keys, unless they set one).
Datasets written by version 1 are read as lists (:meth:`BBoxCodec.for_stored_version`).

Validation on write: coordinates are finite, ``min <= max`` on both axes, normalized
boxes lie inside ``[0, 1]`` and pixel boxes are non-negative, all within ``tolerance``
(values just outside by floating-point noise, such as ``1.0000000000000002``, are
clamped, not rejected). When ``image_field`` names the record's image field, pixel
boxes are checked against that image's stored height and width.

Readers get the boxes in the format of the schema they read with (the dataset's own,
or the one passed as ``schema=``: ``format`` is a decode option, so a reader may ask for
another format than the writer declared): a ragged float32 tensor ``[B, (n), 4]`` in
TensorFlow, a float32 ``(n, 4)`` array in numpy, or with labels or extras a dict
``{"boxes", "labels", <extras>...}``. :func:`convert_boxes` converts between formats
(numpy arrays, tensors and ragged tensors) inside users' own pipelines.
"""

from __future__ import annotations

import itertools
import math
import numbers
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, get_args

import numpy as np
import pydantic

import recordkit as rk
from recordkit_codecs._box_geometry import moved_boxes_numpy, moved_boxes_tf
from recordkit_codecs._foreign import LABEL_HINT, TEXT_HINT
from recordkit_codecs._show import class_counts, class_names
from recordkit_codecs._tfds import bbox_entry, class_label, tensor_entry

__all__ = ["BOX_FORMATS", "BBoxCodec", "BBoxOptions", "BoxFormat", "convert_boxes"]

BoxFormat = Literal["xyxy", "xywh", "yxyx", "cxcywh"]
#: The box formats, by name: the order of the four numbers of a box.
BOX_FORMATS: tuple[str, ...] = get_args(BoxFormat)

_EXTRA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = frozenset({"boxes", "box", "labels", "label", "present", "lengths"})
_AXES = ("x_min", "y_min", "x_max", "y_max")
_FLOAT32_MAX = float(np.finfo(np.float32).max)


class BBoxOptions(rk.CodecOptions):
    """Options of the ``bbox`` codec."""

    format: BoxFormat = pydantic.Field(default="xyxy", description="The order of a box's four numbers.")
    stored: Literal["xyxy", "yxyx"] = pydantic.Field(
        default="xyxy",
        description=(
            "The order boxes are stored in on the wire: xyxy (recordkit's), or yxyx to read "
            "boxes written by TensorFlow Datasets (BBoxFeature) as they are."
        ),
    )
    layout: Literal["packed", "lists"] | None = pydantic.Field(
        default=None,
        description=(
            "How a record's boxes, labels and extras are stored: packed (one little-endian "
            "bytes value each, cheaper to parse), or lists (float and int64 lists: bbox "
            "version 1's layout, and other tools'). Unset: packed, but lists for other "
            "tools' records (stored: yxyx, or keys mapped in the schema)."
        ),
    )
    normalized: bool = pydantic.Field(
        default=True, description="Coordinates are in [0, 1] of the image (false: in pixels)."
    )
    labels: list[str] | None = pydantic.Field(
        default=None, description="Class names; each box then has a label (a name or an id)."
    )
    extras: list[str] = pydantic.Field(
        default_factory=list, description="Names of per-box float values (e.g. score)."
    )
    image_field: str | None = pydantic.Field(
        default=None, description="The record's image field; pixel boxes must fit in its height and width."
    )
    tolerance: float = pydantic.Field(
        default=1e-6, ge=0.0, description="How far outside its bounds a coordinate may be (it is clamped)."
    )

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> BBoxOptions:
        if self.labels is not None:
            if not self.labels or any(not isinstance(n, str) or not n for n in self.labels):
                raise ValueError("labels must list at least one non-empty class name")
            if len(set(self.labels)) != len(self.labels):
                raise ValueError("labels lists a class name twice")
        for extra in self.extras:
            if not _EXTRA_NAME.match(extra) or extra in _RESERVED:
                raise ValueError(
                    f"invalid extra name {extra!r}: use letters, digits and _, not one of {sorted(_RESERVED)}"
                )
        if len(set(self.extras)) != len(self.extras):
            raise ValueError("extras lists a name twice")
        if not math.isfinite(self.tolerance):
            raise ValueError("tolerance must be finite")
        return self


class BBoxCodec(rk.Codec[BBoxOptions]):
    """Bounding boxes, optionally with labels and per-box extras."""

    name = "bbox"
    #: 2: the packed layout, and the ``layout`` option (version 1 stored lists).

    def data_type(self) -> str:
        """The Croissant data type of its values (:class:`recordkit.DataTyped`)."""
        return "cr:BoundingBox"

    version = "2"
    options_model = BBoxOptions
    summary = "a variable number of bounding boxes per record, with optional labels and extras"
    # Boxes are stored as xyxy whatever the format: it says how records give boxes and
    # how readers get them, so a reader's schema may ask for another one.
    decode_options = frozenset({"format"})

    def __init__(self, options: BBoxOptions | Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        self._label_ids = {n: i for i, n in enumerate(self.options.labels or ())}
        #: The keys besides ``boxes`` of a record's dict (labels, then the extras), and
        #: all of them: looked up once here, not per record.
        self._wanted = (["labels"] if self.options.labels is not None else []) + list(self.options.extras)
        self._column_keys = frozenset(("boxes", *self._wanted))
        #: Whether boxes are stored packed: the ``layout`` option, and when it is unset,
        #: packed but for TensorFlow Datasets' yxyx float lists.
        self._packed = self.options.layout == "packed" or (
            self.options.layout is None and self.options.stored == "xyxy"
        )
        #: The narrowest little-endian integer that holds every class id (packed layout).
        self._label_dtype = _label_dtype(len(self.options.labels or ()))

    @property
    def _has_dict(self) -> bool:
        return self.options.labels is not None or bool(self.options.extras)

    adopt_order = 100

    @classmethod
    def adopt(cls, records: rk.ForeignRecords) -> Iterator[rk.Adoption | rk.LeftOut]:
        """Foreign boxes stored as four float lists ``<prefix>xmin, ymin, xmax, ymax`` of
        equal lengths (the object detection API's layout), with the int64 class ids
        beside them (``.../class/label``) and the class names from the text beside those
        (``.../class/text``) where there are such keys."""
        for stats in records.unclaimed():
            key = stats.key
            if not key.endswith("xmin") or stats.kind is not rk.WireKind.FLOAT or records.claimed(key):
                continue
            prefix = key[: -len("xmin")]
            columns = [prefix + c for c in _COORDS]
            found = [records.get(c) for c in columns]
            if any(f is None or f.kind not in (rk.WireKind.FLOAT, None) for f in found):
                continue
            if any(f.lengths != stats.lengths for f in found if f is not None):
                continue
            low = min(f.low for f in found if f is not None)
            high = max(f.high for f in found if f is not None)
            normalized = not math.isfinite(high) or (low >= -1e-6 and high <= 1.0 + 1e-6)
            options: dict[str, Any] = {"format": "xyxy", "normalized": normalized}
            keys: dict[str, Any] = {"": columns}
            root = prefix.rstrip("/_")
            root = root.rsplit("/", 1)[0] if "/" in root else root
            label_key = _beside(records, root, stats.lengths, rk.WireKind.INT64, LABEL_HINT)
            claims = list(columns)
            evidence = f"float lists {prefix}{{xmin,ymin,xmax,ymax}}"
            if label_key is not None:
                text_key = _beside(records, root, stats.lengths, rk.WireKind.BYTES, TEXT_HINT)
                options["labels"] = _label_names(records, label_key, text_key)
                keys["labels"] = label_key
                claims.append(label_key)
                evidence += f", class ids {label_key}"
                if text_key is not None:
                    claims.append(text_key)
                    evidence += f" named by {text_key}"
            unit = "normalized" if normalized else "pixel"
            yield rk.Adoption(
                claims=tuple(claims),
                name="objects" if label_key else "boxes",
                options=options,
                keys=keys,
                description=f"{evidence} ({unit} coordinates)",
            )

    def wire_spec(self) -> rk.WireSpec:
        unit = "in [0, 1]" if self.options.normalized else "in pixels"
        order = (
            "y_min, x_min, y_max, x_max" if self.options.stored == "yxyx" else "x_min, y_min, x_max, y_max"
        )
        if self._packed:
            packed = [
                rk.WireFeature("", rk.WireKind.BYTES, (), f"boxes as little-endian float32 {order} {unit}")
            ]
            if self.options.labels is not None:
                what = f"class id of each box, little-endian {self._label_dtype.name}"
                packed.append(rk.WireFeature("labels", rk.WireKind.BYTES, (), what))
            for extra in self.options.extras:
                what = f"{extra} of each box, little-endian float32"
                packed.append(rk.WireFeature(extra, rk.WireKind.BYTES, (), what))
            return rk.WireSpec(tuple(packed))
        features = [rk.WireFeature("", rk.WireKind.FLOAT, (None, 4), f"boxes as {order} {unit}")]
        if self.options.labels is not None:
            features.append(rk.WireFeature("labels", rk.WireKind.INT64, (None,), "class id of each box"))
        for extra in self.options.extras:
            features.append(rk.WireFeature(extra, rk.WireKind.FLOAT, (None,), f"{extra} of each box"))
        return rk.WireSpec(tuple(features))

    def for_mapped_keys(self, keys: Mapping[str, Any]) -> rk.Codec[Any]:
        """Keys mapped in the schema describe records another tool wrote: their boxes are
        float lists, unless the schema's ``layout`` says packed."""
        if self.options.layout is None and any(name != "present" for name in keys):
            return self._as_lists()
        return self

    def for_stored_version(self, version: str) -> rk.Codec[Any]:
        """Version 1 stored every dataset's boxes, labels and extras as lists: it is read
        (and described) as ``layout: lists``, whatever the schema's layout says."""
        if version == "1":
            return self._as_lists()
        return super().for_stored_version(version)

    def _as_lists(self) -> BBoxCodec:
        """This codec with its boxes, labels and extras stored as lists."""
        return BBoxCodec(self.options.model_copy(update={"layout": "lists"}))

    def related_fields(self) -> tuple[str, ...]:
        return (self.options.image_field,) if self.options.image_field else ()

    # -- following the picture's geometry (rk.FollowsImage) ------------------------

    def follow_numpy(self, value: Any, transform: rk.ImageTransform, geometry: rk.ImageGeometry) -> Any:
        """The record's boxes moved with its picture (``image_field``): scaled, shifted,
        flipped and clipped to the output picture; those left without area dropped with
        their labels and extras (unless ``keep_empty_boxes``); in the format and units
        ``geometry`` asks for (default: the schema's)."""
        boxes = value["boxes"] if isinstance(value, Mapping) else value
        xyxy = convert_boxes(np.asarray(boxes, dtype=np.float64).reshape(-1, 4), self.options.format, "xyxy")
        moved, keep = moved_boxes_numpy(xyxy, transform, **self._units(geometry))
        out_boxes = convert_boxes(moved, "xyxy", geometry.box_format or self.options.format)
        if not isinstance(value, Mapping):
            return out_boxes
        return {key: out_boxes if key == "boxes" else np.asarray(item)[keep] for key, item in value.items()}

    def follow_tf(self, value: Any, transform: rk.ImageTransform, geometry: rk.ImageGeometry) -> Any:
        """:meth:`follow_numpy` in TensorFlow, on one record's boxes."""
        import tensorflow as tf

        boxes = value["boxes"] if isinstance(value, Mapping) else value
        xyxy = _convert_dense_tf(tf.reshape(boxes, [-1, 4]), self.options.format, "xyxy")
        moved, keep = moved_boxes_tf(xyxy, transform, **self._units(geometry))
        out_boxes = _convert_dense_tf(moved, "xyxy", geometry.box_format or self.options.format)
        if not isinstance(value, Mapping):
            return out_boxes
        return {
            key: out_boxes if key == "boxes" else tf.boolean_mask(item, keep) for key, item in value.items()
        }

    def _units(self, geometry: rk.ImageGeometry) -> dict[str, bool]:
        normalized = self.options.normalized
        out = normalized if geometry.normalized is None else geometry.normalized
        return {"normalized": normalized, "out_normalized": out, "keep_empty": geometry.keep_empty_boxes}

    # -- encoding -------------------------------------------------------------------

    # -- showing, counting and converting (optional capabilities) ------------------

    def _xyxy_and_ids(self, value: Any) -> tuple[np.ndarray, list[int]]:
        """A decoded value's boxes as xyxy (float64, in its units) and their class ids."""
        boxes = value["boxes"] if isinstance(value, Mapping) else value
        ids = value.get("labels", []) if isinstance(value, Mapping) else []
        xyxy = convert_boxes(np.asarray(boxes, dtype=np.float64).reshape(-1, 4), self.options.format, "xyxy")
        return xyxy, [int(i) for i in np.asarray(ids).reshape(-1)]

    def draw(self, canvas: rk.Canvas, value: Any) -> None:
        """Each box outlined in its class's colour, its class name on a tag inside its
        top left corner (rk.Drawable)."""
        xyxy, ids = self._xyxy_and_ids(value)
        names = class_names(self.options.labels, ids)
        draw, width = canvas.draw, canvas.line_width
        normalized = self.options.normalized
        for j, (x0, y0, x1, y1) in enumerate(xyxy.tolist()):
            rgb = canvas.color(ids[j]) if ids else canvas.color(0)
            left, top = canvas.point(x0, y0, normalized=normalized)
            right, bottom = canvas.point(x1, y1, normalized=normalized)
            corners = (min(left, right), min(top, bottom), max(left, right), max(top, bottom))
            draw.rectangle(corners, outline=rgb, width=width)
            if names:
                canvas.tag((corners[0] + width + 2, corners[1] + width + 1), names[j])

    def caption(self, value: Any) -> str:
        """How many boxes, and their classes (rk.Captioned)."""
        xyxy, ids = self._xyxy_and_ids(value)
        shown = f": {', '.join(class_names(self.options.labels, ids))}" if ids else ""
        return f"{len(xyxy)} box{'es' * (len(xyxy) != 1)}{shown}"

    def summarize(self, value: Any) -> rk.Statistics:
        """Boxes per record, box width and height (in the boxes' units) and boxes per
        class (rk.Summarized)."""
        xyxy, ids = self._xyxy_and_ids(value)
        out: rk.Statistics = {
            "boxes_per_record": [float(len(xyxy))],
            "box_width": (xyxy[:, 2] - xyxy[:, 0]).tolist(),
            "box_height": (xyxy[:, 3] - xyxy[:, 1]).tolist(),
        }
        if isinstance(value, Mapping) and "labels" in value:
            out["box_classes"] = class_counts(self.options.labels, ids)
        return out

    def tfds_features(self) -> tuple[rk.TfdsFeature, ...]:
        """TFDS's ``BBoxFeature`` in a ``Sequence`` reads boxes stored as TFDS stores
        them: normalized ``ymin, xmin, ymax, xmax`` float lists (``stored: yxyx``,
        ``layout: lists``), with a ``ClassLabel`` of the class ids and a float32 ``Tensor``
        per extra beside them (rk.TfdsDescribed)."""
        options = self.options
        changes = [
            *(["layout: lists (they are stored packed)"] if self._packed else []),
            *([] if options.stored == "yxyx" else [f"stored: yxyx (they are stored {options.stored})"]),
            *([] if options.normalized else ["normalized: true (they are in pixels)"]),
        ]
        if changes:
            raise ValueError(
                "TFDS's BBoxFeature reads normalized ymin, xmin, ymax, xmax float lists: the field "
                f"needs {', '.join(changes)}; schemas/layouts/tfds-detection.yaml is such a layout"
            )
        boxes = rk.TfdsFeature(bbox_entry(), rk.WireKind.FLOAT, (None, 4), "", sequence=True)
        labels = options.labels
        described = [
            boxes,
            *([class_label(labels, len(labels), wire="labels", sequence=True)] if labels else []),
        ]
        for extra in options.extras:
            described.append(rk.TfdsFeature(tensor_entry("float32"), rk.WireKind.FLOAT, (None,), extra, True))
        return tuple(described)

    def to_native(self, request: rk.NativeRequest) -> rk.NativeField:
        """Boxes are stored in recordkit's canonical order, packed (rk.Convertible)."""
        options = dict(request.options)
        options.pop("stored", None)
        return rk.NativeField(options)

    def encode(self, value: Any) -> rk.WireValues:
        boxes, labels, extras = self._split(value)
        # Plainly valid boxes (the common record: an array, or a few boxes of Python
        # numbers) take a short path of a few vectorised steps; anything else, or any
        # doubt, takes the full numpy path, which clamps and explains errors.
        canonical = _plain_boxes(boxes, self.options.format, self.options.normalized)
        if canonical is None:
            canonical = self._canonical(_as_boxes(boxes))
        count = len(canonical)
        if self.options.stored == "yxyx":
            canonical = np.asarray(canonical, dtype=np.float32).reshape(-1, 4)[:, [1, 0, 3, 2]]
        wire: dict[str, Any] = {"": canonical}
        if self.options.labels is not None:
            wire["labels"] = self._label_ids_of(labels, count)
        for name in self.options.extras:
            wire[name] = _as_extra(name, extras[name], count)
        if self._packed:
            return _pack_record(wire, self._label_dtype)
        return wire

    def _split(self, value: Any) -> tuple[Any, Any, dict[str, Any]]:
        """The boxes, labels and extras of a record, from any accepted input form."""
        wanted = self._wanted
        if type(value) is dict and value.keys() == self._column_keys:  # the common record
            return value["boxes"], value.get("labels"), {name: value[name] for name in self.options.extras}
        if isinstance(value, Mapping):
            return self._split_columns(value, wanted)
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, Mapping) for v in value):
            return self._split_rows(value)
        if isinstance(value, (list, tuple)) and value and any(isinstance(v, Mapping) for v in value):
            raise rk.errors.InvalidValueError("mixes per-box dicts with other values")
        if self._has_dict and _is_empty(value):
            return value, [], {name: [] for name in self.options.extras}
        if self._has_dict:
            raise rk.errors.InvalidValueError(
                f"this field has {' and '.join(wanted)} for each box: give "
                f"{{'boxes': [[...], ...], {', '.join(repr(w) + ': [...]' for w in wanted)}}}"
            )
        return value, None, {}

    def _split_columns(self, value: Mapping[str, Any], wanted: list[str]) -> tuple[Any, Any, dict[str, Any]]:
        allowed = {"boxes", *wanted}
        unknown = sorted(str(k) for k in value if k not in allowed)
        if unknown:
            raise rk.errors.InvalidValueError(f"unknown keys {unknown} (expected {sorted(allowed)})")
        missing = [k for k in ("boxes", *wanted) if k not in value]
        if missing:
            raise rk.errors.InvalidValueError(f"missing keys {missing}")
        return value["boxes"], value.get("labels"), {name: value[name] for name in self.options.extras}

    def _split_rows(self, rows: Sequence[Mapping[str, Any]]) -> tuple[Any, Any, dict[str, Any]]:
        keys = ["box", *(("label",) if self.options.labels is not None else ()), *self.options.extras]
        for i, row in enumerate(rows):
            if set(row) != set(keys):
                raise rk.errors.InvalidValueError(
                    f"box {i}: has keys {sorted(str(k) for k in row)}, expected {sorted(keys)}"
                )
        boxes = [row["box"] for row in rows]
        labels = [row["label"] for row in rows] if self.options.labels is not None else None
        return boxes, labels, {name: [row[name] for row in rows] for name in self.options.extras}

    def _canonical(self, given: np.ndarray) -> np.ndarray:
        """Validate boxes given in the declared format; return them as float32 xyxy."""
        fmt = self.options.format
        upper = 1.0 if self.options.normalized else _FLOAT32_MAX
        if fmt == "xyxy" and given.size and _plainly_valid(given, upper):
            plain = _positive_zeros(given.astype(np.float32))
            assert plain is not None
            return plain
        tol = self.options.tolerance
        bad = ~np.isfinite(given).all(axis=1)
        if bad.any():
            i = int(np.argmax(bad))
            raise rk.errors.InvalidValueError(f"{_describe(i, given, fmt)} has a non-finite coordinate")
        xyxy = np.stack(_convert((given[:, 0], given[:, 1], given[:, 2], given[:, 3]), fmt, "xyxy"), axis=1)
        for low, high in ((0, 2), (1, 3)):
            gap = xyxy[:, low] - xyxy[:, high]
            if (gap > tol).any():
                i = int(np.argmax(gap > tol))
                raise rk.errors.InvalidValueError(
                    f"{_describe(i, given, fmt)}: {_AXES[low]} {xyxy[i, low]:.9g} > {_AXES[high]} "
                    f"{xyxy[i, high]:.9g}"
                )
            xyxy[:, high] = np.maximum(xyxy[:, high], xyxy[:, low])
        if self.options.normalized:
            outside = (xyxy < -tol) | (xyxy > 1.0 + tol)
            if outside.any():
                i, k = (int(n) for n in np.argwhere(outside)[0])
                raise rk.errors.InvalidValueError(
                    f"{_describe(i, given, fmt)}: {_AXES[k]} {xyxy[i, k]:.9g} is outside [0, 1] "
                    f"(tolerance {tol:g}); are the boxes in pixels? (then set normalized: false)"
                )
            xyxy = np.clip(xyxy, 0.0, 1.0)
        else:
            negative = xyxy < -tol
            if negative.any():
                i, k = (int(n) for n in np.argwhere(negative)[0])
                raise rk.errors.InvalidValueError(
                    f"{_describe(i, given, fmt)}: {_AXES[k]} {xyxy[i, k]:.9g} is negative"
                )
            too_big = np.abs(xyxy) > _FLOAT32_MAX
            if too_big.any():
                i = int(np.argwhere(too_big)[0][0])
                raise rk.errors.InvalidValueError(f"{_describe(i, given, fmt)} overflows float32")
            xyxy = np.maximum(xyxy, 0.0)
        return np.asarray(xyxy, dtype=np.float32)

    def _label_ids_of(self, labels: Any, count: int) -> np.ndarray:
        names_count = len(self.options.labels or [])
        # Integer ids in an array take one range check (out of range: the loop below says
        # which); min and max of a record's few ids are cheaper on a list than in numpy.
        if type(labels) is np.ndarray and labels.dtype.kind in "iu" and labels.shape == (count,):
            values = labels.tolist()
            if count == 0 or (min(values) >= 0 and max(values) < names_count):
                ids: np.ndarray = labels.astype(np.int64, copy=False)
                return ids
        if type(labels) in (list, tuple) and len(labels) == count:
            # All names, or all ids in range (the common records): no per-label checks.
            if all(type(label) is str for label in labels):
                try:
                    return np.array([self._label_ids[label] for label in labels], dtype=np.int64)
                except KeyError:
                    pass  # an unknown name: the loop below says which
            elif all(type(label) is int for label in labels) and (
                count == 0 or (min(labels) >= 0 and max(labels) < names_count)
            ):
                return np.array(labels, dtype=np.int64)
        items = _as_list("labels", labels)
        if len(items) != count:
            raise rk.errors.InvalidValueError(f"{count} boxes but {len(items)} labels")
        names = self.options.labels or []
        ids = np.empty(count, dtype=np.int64)
        for i, label in enumerate(items):
            if isinstance(label, np.generic):
                label = label.item()
            if isinstance(label, str):
                if label not in self._label_ids:
                    raise rk.errors.InvalidValueError(
                        f"box {i}: unknown label {label!r} (labels: {', '.join(map(repr, names[:10]))}"
                        f"{' ...' if len(names) > 10 else ''})"
                    )
                ids[i] = self._label_ids[label]
            elif isinstance(label, numbers.Integral) and not isinstance(label, bool):
                if not 0 <= int(label) < len(names):
                    raise rk.errors.InvalidValueError(
                        f"box {i}: label id {int(label)} is out of range (ids are [0, {len(names)}))"
                    )
                ids[i] = int(label)
            else:
                raise rk.errors.InvalidValueError(
                    f"box {i}: a label is a class name or an integer id, got {type(label).__name__} {label!r}"
                )
        return ids

    def check_related(self, wire: rk.WireValues, related: Mapping[str, rk.WireValues]) -> None:
        image_field = self.options.image_field
        if image_field is None or self.options.normalized or image_field not in related or "" not in wire:
            return
        image = related[image_field]
        size = {}
        for key in ("height", "width"):
            if key not in image:
                raise rk.errors.InvalidValueError(
                    f"image_field {image_field!r} stores no {key!r} (is it an image field?)"
                )
            size[key] = float(np.asarray(image[key]).reshape(-1)[0])
        stored = _unpacked(wire[""], _BOX_DTYPE) if self._packed else wire[""]
        boxes = np.asarray(stored, np.float64).reshape(-1, 4)
        tol = self.options.tolerance
        for k, key in ((2, "width"), (3, "height")):
            over = boxes[:, k] > size[key] + tol
            if over.any():
                i = int(np.argmax(over))
                raise rk.errors.InvalidValueError(
                    f"box {i}: {_AXES[k]} {boxes[i, k]:.9g} is outside the {key} {size[key]:g} "
                    f"of image field {image_field!r}"
                )

    # -- decoding -------------------------------------------------------------------

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        if self._packed:
            wire = _unpacked_record(wire, self._label_dtype)
        stored = np.asarray(wire[""], dtype=np.float32).reshape(-1, 4)
        boxes = convert_boxes(stored, self.options.stored, self.options.format)
        if not self._has_dict:
            return boxes
        out: dict[str, Any] = {"boxes": boxes}
        if self.options.labels is not None:
            out["labels"] = np.asarray(wire["labels"], dtype=np.int64).reshape(-1)
        for name in self.options.extras:  # a copy: packed values are read-only views
            out[name] = np.array(wire[name], dtype=np.float32).reshape(-1)
        return out

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> list[Any] | None:
        """Packed boxes of many records at once (:class:`recordkit.DecodedInColumns`):
        each column's bytes joined and read as one array, converted to ``format`` in one
        step, then cut into each record's own arrays; what :meth:`decode_numpy` gives each
        record. Byte counts it would refuse (not whole boxes, not one label and extra per
        box) raise a DecodeError, and the records are then decoded one by one. The lists
        layout (variable-length features, which have no column) record by record."""
        if not self._packed:
            return None
        dtypes = {name: self._label_dtype if name == "labels" else _BOX_DTYPE for name in self._wanted}
        edges = _box_edges(wire, dtypes, count)
        bounds = list(itertools.pairwise(edges))
        boxes = np.frombuffer(b"".join(wire[""]), _BOX_DTYPE).reshape(-1, 4).astype(np.float32, copy=False)
        if self.options.stored != self.options.format:  # else copied out of the bytes as they are
            boxes = convert_boxes(boxes, self.options.stored, self.options.format)
        if not self._has_dict:
            return [boxes[start:end].copy() for start, end in bounds]
        # A dict literal a record, then each further column set in a loop: cheaper than
        # building each record's dict from its row of columns.
        out = [{"boxes": boxes[start:end].copy()} for start, end in bounds]
        for name, dtype in dtypes.items():
            wide = np.int64 if name == "labels" else np.float32
            values = np.frombuffer(b"".join(wire[name]), dtype).astype(wide, copy=False)
            for record, (start, end) in zip(out, bounds, strict=True):
                record[name] = values[start:end].copy()
        return out

    def decode_tf_source(self) -> rk.DecodeSource:
        """:func:`decode_bbox_tf` with this field's options: what decode_tf runs and
        ``recordkit codegen`` copies (with the conversions it calls)."""
        return rk.DecodeSource(
            decode_bbox_tf,
            {
                "fmt": self.options.format,
                "stored_as": self.options.stored,
                "labels": self.options.labels is not None,
                "extras": list(self.options.extras),
                "packed": self._packed,
                "label_dtype": self._label_dtype.name,
            },
            helpers=(_to_xyxy, _convert, _convert_dense_tf, _packed_columns, _unpacked_tf),
        )

    def decode_tf_padded(self, wire: Mapping[str, Any]) -> tuple[Any, Any] | None:
        """Packed boxes decoded straight into the padded form (:func:`padded_bbox_tf`):
        what ``load_dataset(pad=...)`` gives, without the ragged tensors it would pad
        (their joins, and a conditional per value). None for the lists layout."""
        if not self._packed or self.pad_value() != 0:
            return None
        return padded_bbox_tf(
            wire,
            fmt=self.options.format,
            labels=self.options.labels is not None,
            extras=list(self.options.extras),
            stored_as=self.options.stored,
            label_dtype=self._label_dtype.name,
        )


def decode_bbox_tf(
    wire: Mapping[str, Any],
    fmt: str,
    labels: bool,
    extras: list[str],
    stored_as: str = "xyxy",
    packed: bool = False,
    label_dtype: str = "uint8",
) -> Any:
    """The batched TensorFlow decode of a bbox field: the stored boxes ``[B, (n), 4]``
    (xyxy, or ``stored_as`` for data another tool wrote, such as TFDS's yxyx) converted to
    ``fmt``, in a dict with the labels and ``extras`` when the field has them; ``packed``
    values (``[B]`` bytes, class ids as ``label_dtype``) are unpacked first. Generated
    parser modules carry a copy of this function."""
    import tensorflow as tf

    if packed:
        wire = _unpacked_tf(wire, labels, extras, label_dtype)
    stored = wire[""]
    flat = tf.reshape(stored.flat_values, [-1, 4])
    boxes = tf.RaggedTensor.from_row_splits(
        _convert_dense_tf(flat, stored_as, fmt), stored.row_splits, validate=False
    )
    if not labels and not extras:
        return boxes
    out = {"boxes": boxes}
    if labels:
        out["labels"] = wire["labels"]
    for name in extras:
        out[name] = wire[name]
    return out


def _packed_columns(
    wire: Mapping[str, Any], labels: bool, extras: list[str], label_dtype: str
) -> tuple[Any, dict[str, Any], Any]:
    """Of packed values ``[B]`` (bytes): each record's box count (int32 ``[B]``), each
    column's dtype and bytes per box by wire name (``""``: the boxes), and the assertion
    that every record holds whole boxes and one label and extra per box."""
    import tensorflow as tf

    box_bytes = tf.strings.length(wire[""])
    counts = box_bytes // 16
    columns = {"": (tf.float32, 16)}
    if labels:
        columns["labels"] = (tf.as_dtype(label_dtype), tf.as_dtype(label_dtype).size)
    columns.update({name: (tf.float32, 4) for name in extras})
    whole = tf.equal(box_bytes, counts * 16)
    for name, (_, width) in columns.items():
        if name:
            whole = whole & tf.equal(tf.strings.length(wire[name]), counts * width)
    check = tf.debugging.Assert(
        tf.reduce_all(whole),
        ["bbox codec: packed boxes that are not whole 16-byte boxes, or not one label and extra per box"],
    )
    return counts, columns, check


def _unpacked_tf(
    wire: Mapping[str, Any], labels: bool, extras: list[str], label_dtype: str
) -> dict[str, Any]:
    """Packed values ``[B]`` (bytes) as the lists layout parses: boxes ``[B, (n), 4]``
    float32, labels ``[B, (n)]`` int64, extras ``[B, (n)]`` float32, sharing one set of
    row splits. One assertion checks that every record holds whole boxes and one label
    and extra per box."""
    import tensorflow as tf

    counts, columns, check = _packed_columns(wire, labels, extras, label_dtype)
    splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(tf.cast(counts, tf.int64))], 0)
    out = {}
    with tf.control_dependencies([check]):
        for name, (dtype, _) in columns.items():
            flat = tf.io.decode_raw(tf.strings.reduce_join(wire[name]), dtype, little_endian=True)
            if name == "":
                flat = tf.reshape(flat, [-1, 4])
            elif dtype != tf.float32:
                flat = tf.cast(flat, tf.int64)
            out[name] = tf.RaggedTensor.from_row_splits(flat, splits, validate=False)
    return out


def padded_bbox_tf(
    wire: Mapping[str, Any],
    fmt: str,
    labels: bool,
    extras: list[str],
    stored_as: str = "xyxy",
    label_dtype: str = "uint8",
) -> tuple[Any, Any]:
    """Packed values ``[B]`` (bytes) decoded dense, padded with zeros to the batch's
    most boxes: what :func:`decode_bbox_tf` gives made dense by ``to_tensor()``, and each
    record's true shape (int64; ``[B, 2]`` for the boxes, ``[B, 1]`` for labels and
    extras), as ``(value, shapes)``: a dict of each (by the output's keys) when the field
    has labels or extras. Each column is one ``tf.io.decode_raw`` with a
    ``fixed_length`` (which pads every record's bytes with zeros): no ragged tensor, no
    join of the batch's bytes and no conditional. The same assertion as the ragged
    decode checks the records first."""
    import tensorflow as tf

    counts, columns, check = _packed_columns(wire, labels, extras, label_dtype)
    longest = tf.reduce_max(tf.concat([counts, [0]], 0))
    rows = tf.cast(counts, tf.int64)
    values: dict[str, Any] = {}
    shapes: dict[str, Any] = {}
    with tf.control_dependencies([check]):
        for name, (dtype, width) in columns.items():
            # decode_raw refuses a fixed_length of 0 (a batch without boxes): one box's
            # width at least, cut back to the batch's most boxes.
            flat = tf.io.decode_raw(
                wire[name], dtype, little_endian=True, fixed_length=tf.maximum(longest, 1) * width
            )
            per_box = width // dtype.size
            flat = flat[:, : longest * per_box]
            key = name or "boxes"
            if name == "":
                boxes = tf.reshape(flat, tf.stack([tf.shape(flat)[0], longest, 4]))
                if stored_as != fmt:  # the padding stays zeros, whatever the conversion gives
                    converted = tf.reshape(
                        _convert_dense_tf(tf.reshape(boxes, [-1, 4]), stored_as, fmt), tf.shape(boxes)
                    )
                    real = tf.range(longest)[None, :] < counts[:, None]
                    boxes = tf.where(real[..., None], converted, tf.zeros_like(converted))
                values[key] = boxes
                shapes[key] = tf.stack([rows, tf.fill(tf.shape(rows), tf.constant(4, tf.int64))], axis=1)
            else:
                values[key] = flat if dtype == tf.float32 else tf.cast(flat, tf.int64)
                shapes[key] = rows[:, None]
    if not labels and not extras:
        return values["boxes"], shapes["boxes"]
    return values, shapes


# -- helpers ---------------------------------------------------------------------------

#: How the packed layout stores coordinates and extras: little-endian float32.
_BOX_DTYPE = np.dtype("<f4")


def _label_dtype(names: int) -> np.dtype[Any]:
    """The narrowest little-endian integer type that holds ``names`` class ids."""
    if names <= 1 << 8:
        return np.dtype("<u1")
    return np.dtype("<u2") if names <= 1 << 16 else np.dtype("<i4")


def _pack_record(wire: dict[str, Any], label_dtype: np.dtype[Any]) -> dict[str, Any]:
    """A record's boxes, labels and extras (arrays) as the packed layout stores them."""
    return {
        name: np.asarray(values).astype(label_dtype if name == "labels" else _BOX_DTYPE, copy=False).tobytes()
        for name, values in wire.items()
    }


def _unpacked(data: bytes, dtype: np.dtype[Any], what: str = "boxes", per_box: int = 4) -> np.ndarray:
    """Packed bytes as a read-only array of ``dtype`` (a view: the decode copies what it
    returns); DecodeError when they are not a whole number of values, ``per_box`` to a
    box."""
    size = dtype.itemsize * per_box
    if len(data) % size:
        raise rk.errors.DecodeError(
            f"packed {what} hold {len(data)} bytes, not a whole number of {size}-byte items"
        )
    return np.frombuffer(data, dtype)


def _unpacked_record(wire: Mapping[str, Any], label_dtype: np.dtype[Any]) -> dict[str, Any]:
    """One record's packed values as the lists layout gives them, checked: whole boxes,
    and one label and extra per box."""
    boxes = _unpacked(wire[""], _BOX_DTYPE)
    out: dict[str, Any] = {"": boxes}
    for name, data in wire.items():
        if name:
            values = _unpacked(data, label_dtype if name == "labels" else _BOX_DTYPE, name, 1)
            if len(values) * 4 != len(boxes):
                raise rk.errors.DecodeError(f"{len(boxes) // 4} boxes but {len(values)} values of {name!r}")
            out[name] = values
    return out


def _box_edges(wire: Mapping[str, Any], dtypes: Mapping[str, np.dtype[Any]], count: int) -> list[int]:
    """Where each record's boxes start among a column's boxes, and where the last one's
    end (``count + 1`` numbers), from the packed bytes of ``wire`` (``dtypes``: the
    labels' and extras' columns, a value a box each); DecodeError when a record's values
    are not whole boxes, or not one label and extra per box (what
    :func:`_unpacked_record` refuses)."""
    box_bytes = 4 * _BOX_DTYPE.itemsize
    sizes = np.fromiter(map(len, wire[""]), np.int64, count)
    boxes = sizes // box_bytes
    if (sizes % box_bytes).any():
        raise rk.errors.DecodeError(f"a record's packed boxes are not whole {box_bytes}-byte boxes")
    for name, dtype in dtypes.items():
        if not np.array_equal(np.fromiter(map(len, wire[name]), np.int64, count), boxes * dtype.itemsize):
            raise rk.errors.DecodeError(f"a record's packed {name!r} are not one value a box")
    edges: list[int] = np.concatenate([[0], np.cumsum(boxes)]).tolist()
    return edges


_COORDS = ("xmin", "ymin", "xmax", "ymax")


def _beside(
    records: rk.ForeignRecords, root: str, lengths: list[int | None], kind: rk.WireKind, hint: re.Pattern[str]
) -> str | None:
    """The unclaimed key under ``root`` of ``kind``, named as ``hint`` says, that holds
    one value per box in every record: the boxes' class ids or names."""
    for stats in records.unclaimed():
        hinted = stats.key.startswith(root) and stats.kind is kind and hint.search(stats.key)
        if hinted and stats.lengths == lengths:
            return stats.key
    return None


def _label_names(records: rk.ForeignRecords, label_key: str, text_key: str | None) -> list[str]:
    """Class names by id: from the text key beside the ids where there is one."""
    high = records[label_key].high
    count = int(high) + 1 if math.isfinite(high) and high >= 0 else 1
    names = [f"class_{i}" for i in range(count)]
    if text_key is not None:
        pairs = zip(records[label_key].values, records[text_key].values, strict=True)
        for ids, texts in pairs:
            for label, text in zip(ids or [], texts or [], strict=False):
                try:
                    names[int(label)] = text.decode("utf-8")
                except (UnicodeDecodeError, IndexError):
                    continue
    if len(set(names)) != len(names):  # the bbox codec needs distinct names
        names = [f"{name}_{i}" if names.count(name) > 1 else name for i, name in enumerate(names)]
    return names


#: Up to this many boxes, checking them in plain Python beats numpy's per-call overhead.
_FEW_BOXES = 32


#: Pixel coordinates the plain-Python path takes: integers up to 2**53 convert to float
#: exactly, as numpy converts them; larger values go through numpy and its checks.
_PLAIN_PIXEL_LIMIT = 2.0**53
_PLAIN_NUMBERS = (float, int)


def _plain_boxes(boxes: Any, fmt: str, normalized: bool) -> np.ndarray | None:
    """Boxes as float32 ``x_min, y_min, x_max, y_max``, converted from ``fmt`` in
    float64 exactly as the numpy path converts them, when they are plainly valid: no
    coordinate outside ``[0, 1]`` (or negative pixels), none needing the tolerance, no
    NaN. Boxes in a numeric array are converted and checked column-wise, whatever their
    number; a few boxes of Python numbers box by box. None for anything else: the numpy
    path then checks, clamps or explains."""
    upper = 1.0 if normalized else _PLAIN_PIXEL_LIMIT
    if type(boxes) is np.ndarray:
        if boxes.ndim != 2 or boxes.shape[1] != 4 or boxes.dtype.kind not in "iuf":
            return np.zeros((0, 4), dtype=np.float32) if boxes.shape == (0,) else None
        if fmt == "xyxy" and boxes.dtype.kind == "f" and boxes.itemsize <= 8:  # checked as they are
            # Not copied when already float32: the encoder only reads them.
            plain = boxes.astype(np.float32, copy=False) if _plainly_valid(boxes, upper) else None
            return _positive_zeros(plain)
        wide = boxes.astype(np.float64)
        if fmt != "xyxy":
            wide = np.stack(_to_xyxy((wide[:, 0], wide[:, 1], wide[:, 2], wide[:, 3]), fmt), axis=1)
        return _positive_zeros(wide.astype(np.float32)) if _plainly_valid(wide, upper) else None
    return _positive_zeros(_few_plain_boxes(boxes, fmt, upper))


def _positive_zeros(boxes: np.ndarray | None) -> np.ndarray | None:
    """``boxes`` with any -0.0 as +0.0, the zero the numpy path's clamp stores: the two
    are equal, and this way both paths write the same bytes. A new array only when a
    zero is present (``boxes`` may be the caller's own)."""
    if boxes is None or boxes.all():
        return boxes
    positive: np.ndarray = boxes + np.float32(0.0)  # -0.0 + 0.0 is +0.0
    return positive


def _few_plain_boxes(boxes: Any, fmt: str, upper: float) -> np.ndarray | None:
    """Up to ``_FEW_BOXES`` boxes made of Python numbers (lists or tuples of four) as
    :func:`_plain_boxes` gives them, checked and converted box by box (for a few boxes
    that beats building an array); None for anything else."""
    if type(boxes) in (list, tuple) and len(boxes) <= _FEW_BOXES:
        if not boxes:
            return np.zeros((0, 4), dtype=np.float32)
        rows = boxes
    else:
        return None
    out = []
    for row in rows:
        if type(row) not in (list, tuple) or len(row) != 4:
            return None
        a, b, c, d = row
        if not (type(a) in _PLAIN_NUMBERS and type(b) in _PLAIN_NUMBERS
                and type(c) in _PLAIN_NUMBERS and type(d) in _PLAIN_NUMBERS):  # fmt: skip
            return None
        try:
            a, b, c, d = float(a), float(b), float(c), float(d)
        except OverflowError:  # an int beyond any float: numpy's path refuses it
            return None
        x1, y1, x2, y2 = _to_xyxy((a, b, c, d), fmt)
        if not (0.0 <= x1 <= x2 <= upper and 0.0 <= y1 <= y2 <= upper):
            return None  # NaN fails too
        out.append((x1, y1, x2, y2))
    return np.array(out, dtype=np.float32)


def _plainly_valid(xyxy: np.ndarray, upper: float) -> bool:
    """Whether every box is finite, within ``[0, upper]`` and has min <= max: the common
    case, which needs no clipping or tolerance. Any doubt (a NaN fails every comparison)
    returns False, and the full check then says what is wrong. Floats of any width
    compare exactly as their float64 values would (``tolist`` widens them exactly)."""
    if len(xyxy) <= _FEW_BOXES:
        return all(0.0 <= x0 <= x1 <= upper and 0.0 <= y0 <= y1 <= upper for x0, y0, x1, y1 in xyxy.tolist())
    low, high = xyxy.min(), xyxy.max()
    ordered = bool((xyxy[:, 0] <= xyxy[:, 2]).all() and (xyxy[:, 1] <= xyxy[:, 3]).all())
    return bool(low >= 0.0 and high <= upper and ordered)


def _is_empty(value: Any) -> bool:
    try:
        return bool(len(value) == 0)
    except TypeError:
        return False


def _as_boxes(value: Any) -> np.ndarray:
    """Boxes as a float64 ``(n, 4)`` array (an empty input gives ``(0, 4)``)."""
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise rk.errors.InvalidValueError(f"boxes are not an (n, 4) array: {exc}") from None
    if array.shape in ((0,), (0, 4)):
        return np.zeros((0, 4), dtype=np.float64)
    if array.dtype.kind not in "iuf":
        raise rk.errors.InvalidValueError(f"boxes must be numbers, got {array.dtype} values")
    if array.ndim == 1 and array.shape[0] == 4:
        raise rk.errors.InvalidValueError("boxes must be an (n, 4) array; for one box give [[a, b, c, d]]")
    if array.ndim != 2 or array.shape[1] != 4:
        raise rk.errors.InvalidValueError(f"boxes must be an (n, 4) array, got shape {array.shape}")
    return array.astype(np.float64)


def _as_list(what: str, value: Any) -> list[Any]:
    if value is None or isinstance(value, (str, bytes, Mapping)):
        raise rk.errors.InvalidValueError(f"{what} must be a list, got {type(value).__name__}")
    try:
        return list(value)
    except TypeError:
        raise rk.errors.InvalidValueError(f"{what} must be a list, got {type(value).__name__}") from None


def _as_extra(name: str, value: Any, count: int) -> np.ndarray:
    if (
        type(value) in (list, tuple)
        and len(value) == count <= _FEW_BOXES
        and all((type(x) is float or type(x) is int) and -_FLOAT32_MAX <= x <= _FLOAT32_MAX for x in value)
    ):
        return np.array(value, dtype=np.float64).astype(np.float32)  # NaN fails the range test
    items = _as_list(name, value)
    if len(items) != count:
        raise rk.errors.InvalidValueError(f"{count} boxes but {len(items)} values of {name!r}")
    try:
        array = np.asarray(items, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise rk.errors.InvalidValueError(f"{name!r} must be numbers, got {items!r}") from None
    bad = ~np.isfinite(array) | (np.abs(array) > _FLOAT32_MAX)
    if bad.any():
        i = int(np.argmax(bad))
        raise rk.errors.InvalidValueError(f"box {i}: {name} {float(array[i])} is not a finite float32")
    return array.astype(np.float32)


def _describe(index: int, boxes: np.ndarray, fmt: str) -> str:
    coords = ", ".join(f"{v:.9g}" for v in boxes[index])
    return f"box {index} [{coords}] ({fmt})"


def _to_xyxy(cols: tuple[Any, Any, Any, Any], source: str) -> tuple[Any, Any, Any, Any]:
    """``x_min, y_min, x_max, y_max`` of the four coordinates (floats, arrays or tensors)
    given in ``source`` format."""
    a, b, c, d = cols
    if source == "xyxy":
        return a, b, c, d
    if source == "yxyx":
        return b, a, d, c
    if source == "xywh":
        return a, b, a + c, b + d
    return a - c / 2, b - d / 2, a + c / 2, b + d / 2  # cxcywh


def _convert(cols: tuple[Any, Any, Any, Any], source: str, target: str) -> tuple[Any, Any, Any, Any]:
    """Convert the four coordinate columns from ``source`` to ``target`` format.

    Works on anything with arithmetic (numpy arrays, tensors); both directions go
    through ``x_min, y_min, x_max, y_max``.
    """
    if source == target:
        return cols
    x1, y1, x2, y2 = _to_xyxy(cols, source)
    if target == "xyxy":
        return x1, y1, x2, y2
    if target == "yxyx":
        return y1, x1, y2, x2
    if target == "xywh":
        return x1, y1, x2 - x1, y2 - y1
    return (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1


def _check_format(fmt: str) -> None:
    if fmt not in BOX_FORMATS:
        raise ValueError(f"unknown box format {fmt!r} (formats: {', '.join(BOX_FORMATS)})")


def convert_boxes(boxes: Any, source: str, target: str) -> Any:
    """Convert boxes from format ``source`` to format ``target``.

    ``boxes`` has the four coordinates in its last dimension: a numpy array (or
    anything ``np.asarray`` takes), a ``tf.Tensor`` or a ``tf.RaggedTensor`` such as
    the ``[B, (n), 4]`` boxes a parser returns. The result has the same type, shape and
    float dtype (numbers are computed in float64). Formats are ``xyxy``, ``xywh``,
    ``yxyx`` and ``cxcywh``; units (pixels or normalized) are kept as they are.
    """
    _check_format(source)
    _check_format(target)
    if type(boxes).__module__.startswith("tensorflow"):
        return _convert_tf(boxes, source, target)
    array = np.asarray(boxes)
    if array.shape[-1:] != (4,):
        raise ValueError(f"boxes need 4 numbers in their last dimension, got shape {array.shape}")
    dtype = array.dtype if array.dtype.kind == "f" else np.dtype(np.float64)
    if source == target:  # nothing to compute: the same numbers in a new array
        return array.astype(dtype)
    wide = array.astype(np.float64)
    cols = _convert((wide[..., 0], wide[..., 1], wide[..., 2], wide[..., 3]), source, target)
    return np.stack(cols, axis=-1).astype(dtype)


def _convert_tf(boxes: Any, source: str, target: str) -> Any:
    import tensorflow as tf

    if isinstance(boxes, tf.RaggedTensor):
        flat = boxes.flat_values
        converted = _convert_dense_tf(tf.reshape(flat, [-1, 4]), source, target)
        return boxes.with_flat_values(tf.reshape(converted, tf.shape(flat)))
    return _convert_dense_tf(tf.convert_to_tensor(boxes), source, target)


def _convert_dense_tf(boxes: Any, source: str, target: str) -> Any:
    import tensorflow as tf

    if source == target:
        return boxes
    wide = tf.cast(boxes, tf.float64)
    x, y, z, w = tf.unstack(wide, num=4, axis=-1)
    cols = _convert((x, y, z, w), source, target)
    out = tf.stack(cols, axis=-1)
    return tf.cast(out, boxes.dtype if boxes.dtype.is_floating else tf.float64)


@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    """Register the ``bbox`` codec."""
    registry.register(BBoxCodec)
