"""COCO object detection: ``coco(annotations_json, images_dir)``.

One record per entry of the JSON's ``images``: the image file (stored as it is), its
``image_id``, and ``objects``: the boxes of its annotations in COCO's own form, ``xywh``
in pixels (the bbox field declares ``format: xywh, normalized: false``, so the bbox
codec converts them and checks them against the stored image), each with its category
name and the per-box ``iscrowd`` and ``area``. Label ids are the category's position
in the JSON's categories sorted by id (COCO's ids have gaps; the names are kept in the
schema). With ``masks=True`` a ``masks`` field holds one 0/1 mask per annotation, from
its polygons or its RLE (:mod:`recordkit.sources._masks`).

An image whose annotations are wrong is left out whole (a record with some of its
objects missing would teach a detector that they are background): a box outside the
image or of the wrong form, an unknown category id, an ``iscrowd`` that is not 0 or 1,
an ``area`` that is not a number, a missing image file, a ``file_name`` outside
``images_dir``, a declared ``width`` and ``height`` that are not the image file's own, a
malformed segmentation. Each is an InputError naming the JSON file, the annotation or
image and the key. A JSON file that is not UTF-8, not JSON, nested too deeply or not of
COCO's form is refused whole.
"""

from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.sources._base import OnBadInput, Skipped, Source, SourceItem
from recordkit.sources._masks import segmentation_mask
from recordkit.sources._media import check_declared_size

__all__ = ["MAX_MASK_PIXELS", "CocoSource", "read_json"]

#: How far (pixels) a box may reach past its image's edge, for COCO's rounding.
EDGE_TOLERANCE = 1.0
#: Most mask pixels (one byte each) one image's objects may hold together: more is
#: refused before a mask is drawn.
MAX_MASK_PIXELS = 2**30


def read_json(path: Path) -> Any:
    """The JSON document in ``path``; an InputError naming the file (and the line) when
    it cannot be read, is not UTF-8, not JSON or nested too deeply for Python's parser."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such annotations file", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", file=str(path)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(f"is not UTF-8 text (byte {exc.start})", file=str(path), line=line) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", file=str(path), line=exc.lineno) from None
    except RecursionError:
        raise InputError("not JSON recordkit reads: nested too deeply", file=str(path)) from None
    except ValueError as exc:  # a number of more than 4300 digits
        raise InputError(f"not JSON recordkit reads: {exc}", file=str(path)) from None


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 3, 6, 4, 300, 80


def _shown(value: object) -> str:
    """A value from the JSON as an error shows it: shortened, however long or deep."""
    return _REPR.repr(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _name(value: object) -> str:
    """An id as it may be shown in an entry (a hostile one shortened)."""
    return _shown(value) if _is_int(value) or isinstance(value, str) else "(malformed)"


class CocoSource(Source):
    """A COCO detection JSON and its images folder (see the module docs)."""

    kind = "coco"

    def __init__(
        self,
        annotations: str | Path,
        images_dir: str | Path | None = None,
        *,
        masks: bool = False,
        on_error: OnBadInput = "raise",
        allow_outside_root: bool = False,
    ) -> None:
        super().__init__(on_error=on_error, allow_outside_root=allow_outside_root)
        self.annotations = Path(annotations)
        self.images_dir = Path(images_dir) if images_dir is not None else self.annotations.parent
        self.masks = masks
        self._data = self._load()
        self.categories = self._categories()

    def _error(self, reason: str, entry: str | None = None, field: str | None = None) -> InputError:
        return InputError(reason, file=str(self.annotations), entry=entry, field=field)

    def _load(self) -> dict[str, Any]:
        data = read_json(self.annotations)
        if not isinstance(data, dict) or not all(
            isinstance(data.get(k), list) for k in ("images", "categories")
        ):
            raise self._error("not a COCO annotations file: it needs 'images' and 'categories' lists")
        if not isinstance(data.get("annotations", []), list):
            raise self._error("not a COCO annotations file: 'annotations' must be a list")
        return data

    def _categories(self) -> dict[int, str]:
        found: dict[int, str] = {}
        for i, category in enumerate(self._data["categories"]):
            where = f"categories[{i}]"
            if not isinstance(category, dict) or not _is_int(category.get("id")):
                raise self._error("a category needs an integer 'id' and a 'name'", where, "id")
            if category["id"] in found:
                raise self._error(f"category id {category['id']} is listed twice", where, "id")
            name = category.get("name")
            if name is not None and not isinstance(name, str):
                raise self._error(f"a category's name must be text, not {type(name).__name__}", where, "name")
            found[category["id"]] = str(name or category["id"])
        if not found:
            raise self._error("lists no categories")
        return dict(sorted(found.items()))

    def schema(self, name: str | None = None) -> Schema:
        fields = {
            "image": FieldSpec(
                codec="image", options={"format": "keep"}, description="the image file, as it is"
            ),
            "image_id": FieldSpec(codec="scalar", options={"dtype": "int64"}, description="COCO's image id"),
            "objects": FieldSpec(
                codec="bbox",
                options={
                    "format": "xywh",
                    "normalized": False,
                    "labels": list(self.categories.values()),
                    "extras": ["iscrowd", "area"],
                    "image_field": "image",
                },
                description="COCO's boxes (x, y, width, height in pixels), category names, iscrowd and area",
            ),
        }
        if self.masks:
            fields["masks"] = FieldSpec(
                codec="mask",
                sequence=True,
                options={"num_classes": 2},
                description="one 0/1 mask per object, in the order of the boxes",
            )
        return Schema(name=name or self.annotations.stem, fields=fields)

    def scan(self) -> Iterator[SourceItem | Skipped | InputError]:
        images: dict[int, dict[str, Any]] = {}
        for i, image in enumerate(self._data["images"]):
            if not isinstance(image, dict) or not _is_int(image.get("id")) or "file_name" not in image:
                yield self._error("an image needs an integer 'id' and a 'file_name'", f"images[{i}]", "id")
                continue
            if image["id"] in images:
                yield self._error(f"image id {image['id']} is listed twice", f"images[{i}]", "id")
                continue
            images[image["id"]] = image
        by_image: dict[int, list[dict[str, Any]]] = {image_id: [] for image_id in images}
        for i, annotation in enumerate(self._data.get("annotations", [])):
            if not isinstance(annotation, dict):
                yield self._error(f"an annotation must be an object, not {type(annotation).__name__}",
                                  f"annotations[{i}]")  # fmt: skip
                continue
            entry = f"annotation {_name(annotation['id'])}" if "id" in annotation else f"annotations[{i}]"
            image_id = annotation.get("image_id")
            if not _is_int(image_id) or image_id not in images:
                yield self._error(
                    f"refers to image id {_shown(image_id)}, which 'images' does not list", entry, "image_id"
                )
                continue
            by_image[image_id].append(annotation)
        for image_id, image in images.items():
            yield self._record(image, by_image[image_id])

    def _record(self, image: dict[str, Any], annotations: list[dict[str, Any]]) -> SourceItem | InputError:
        image_id = image["id"]
        where = f"image {image_id} ({_shown(image['file_name'])})"
        try:
            path = self.input_path(
                self.images_dir, image["file_name"], file=self.annotations, entry=where, field="file_name"
            )
        except InputError as exc:
            return exc
        if not path.is_file():
            return self._error(f"the image file {path} does not exist", where, "file_name")
        try:
            width, height = check_declared_size(path, image.get("width"), image.get("height"))
        except ValueError as exc:
            return self._error(str(exc), where, "width, height")
        if self.masks and len(annotations) * width * height > MAX_MASK_PIXELS:
            return self._error(
                f"{len(annotations)} masks of {width} x {height} pixels are more than the "
                f"{MAX_MASK_PIXELS} mask pixels one image may hold",
                where,
                "segmentation",
            )
        objects: dict[str, list[Any]] = {"boxes": [], "labels": [], "iscrowd": [], "area": []}
        masks = []
        for annotation in annotations:
            entry = f"annotation {_name(annotation.get('id', '?'))} of {where}"
            problem = self._object(annotation, width, height, objects)
            if problem is not None:
                return self._error(problem[1], entry, problem[0])
            if self.masks:
                try:
                    masks.append(segmentation_mask(annotation.get("segmentation"), height, width))
                except (ValueError, TypeError, OverflowError) as exc:
                    return self._error(f"segmentation: {exc}", entry, "segmentation")
        record: dict[str, Any] = {"image": path, "image_id": image_id, "objects": objects}
        if self.masks:
            record["masks"] = masks
        return SourceItem(str(image["file_name"]), record)

    def _object(
        self, annotation: dict[str, Any], width: int, height: int, objects: dict[str, list[Any]]
    ) -> tuple[str, str] | None:
        """Add one annotation's box to ``objects``; or ``(key, reason)`` when it is wrong."""
        category = annotation.get("category_id")
        if not _is_int(category) or category not in self.categories:
            known = ", ".join(str(c) for c in self.categories)
            return "category_id", f"unknown category id {_shown(category)} (the categories are {known})"
        box = annotation.get("bbox")
        if not isinstance(box, list) or len(box) != 4 or not all(_is_number(v) for v in box):
            return "bbox", f"bbox must be [x, y, width, height] (4 finite numbers), not {_shown(box)}"
        x, y, w, h = (float(v) for v in box)
        if w < 0 or h < 0 or x < -EDGE_TOLERANCE or y < -EDGE_TOLERANCE:
            return "bbox", f"bbox {box} has a negative corner or size"
        if x + w > width + EDGE_TOLERANCE or y + h > height + EDGE_TOLERANCE:
            return "bbox", f"bbox {box} reaches outside the {width} x {height} image"
        crowd = annotation.get("iscrowd", 0)
        if not _is_number(crowd) or crowd not in (0, 1):
            return "iscrowd", f"iscrowd must be 0 or 1, not {_shown(crowd)}"
        area = annotation.get("area", w * h)
        if not _is_number(area) or area < 0:
            return "area", f"area must be a number of pixels, not {_shown(area)}"
        x0, y0 = max(x, 0.0), max(y, 0.0)
        objects["boxes"].append([x0, y0, min(x + w, float(width)) - x0, min(y + h, float(height)) - y0])
        objects["labels"].append(self.categories[category])
        objects["iscrowd"].append(float(crowd))
        objects["area"].append(float(area))
        return None
