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
image, an unknown category id, a missing image file, a malformed segmentation. Each is
an InputError naming the JSON file and the annotation or image.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.sources._base import OnBadInput, Skipped, Source, SourceItem
from recordkit.sources._masks import segmentation_mask

__all__ = ["CocoSource"]

#: How far (pixels) a box may reach past its image's edge, for COCO's rounding.
EDGE_TOLERANCE = 1.0


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
    ) -> None:
        super().__init__(on_error=on_error)
        self.annotations = Path(annotations)
        self.images_dir = Path(images_dir) if images_dir is not None else self.annotations.parent
        self.masks = masks
        self._data = self._load()
        self.categories = self._categories()

    def _error(self, reason: str, entry: str | None = None) -> InputError:
        return InputError(reason, file=str(self.annotations), entry=entry)

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.annotations.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise self._error("no such annotations file") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", file=str(self.annotations), line=exc.lineno) from None
        if not isinstance(data, dict) or not all(
            isinstance(data.get(k), list) for k in ("images", "categories")
        ):
            raise self._error("not a COCO annotations file: it needs 'images' and 'categories' lists")
        return data

    def _categories(self) -> dict[int, str]:
        found: dict[int, str] = {}
        for i, category in enumerate(self._data["categories"]):
            if not isinstance(category, dict) or not isinstance(category.get("id"), int):
                raise self._error("a category needs an integer 'id' and a 'name'", f"categories[{i}]")
            found[category["id"]] = str(category.get("name") or category["id"])
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

    def _scan(self) -> Iterator[SourceItem | Skipped | InputError]:
        images: dict[int, dict[str, Any]] = {}
        for i, image in enumerate(self._data["images"]):
            if (
                not isinstance(image, dict)
                or not isinstance(image.get("id"), int)
                or "file_name" not in image
            ):
                yield self._error("an image needs an integer 'id' and a 'file_name'", f"images[{i}]")
                continue
            images[image["id"]] = image
        by_image: dict[int, list[dict[str, Any]]] = {image_id: [] for image_id in images}
        for i, annotation in enumerate(self._data.get("annotations", [])):
            entry = (
                f"annotation {annotation.get('id', f'#{i}')}"
                if isinstance(annotation, dict)
                else f"annotations[{i}]"
            )
            if not isinstance(annotation, dict) or annotation.get("image_id") not in images:
                image_id = annotation.get("image_id") if isinstance(annotation, dict) else None
                yield self._error(f"refers to image id {image_id!r}, which 'images' does not list", entry)
                continue
            by_image[annotation["image_id"]].append(annotation)
        for image_id, image in images.items():
            item = self._record(image, by_image[image_id])
            if item is not None:
                yield item

    def _record(self, image: dict[str, Any], annotations: list[dict[str, Any]]) -> SourceItem | InputError:
        image_id = image["id"]
        where = f"image {image_id} ({image['file_name']!r})"
        path = self.images_dir / str(image["file_name"])
        if not path.is_file():
            return self._error(f"the image file {path} does not exist", where)
        width, height = image.get("width"), image.get("height")
        if not isinstance(width, int) or not isinstance(height, int):
            return self._error("the image needs integer 'width' and 'height'", where)
        boxes, labels, crowd, area, masks = [], [], [], [], []
        for annotation in annotations:
            entry = f"annotation {annotation.get('id', '?')} of {where}"
            category = annotation.get("category_id")
            if category not in self.categories:
                known = ", ".join(str(c) for c in self.categories)
                return self._error(f"unknown category id {category!r} (the categories are {known})", entry)
            box = annotation.get("bbox")
            if (
                not isinstance(box, list)
                or len(box) != 4
                or not all(isinstance(v, (int, float)) for v in box)
            ):
                return self._error(f"bbox must be [x, y, width, height], not {box!r}", entry)
            x, y, w, h = (float(v) for v in box)
            if w < 0 or h < 0 or x < -EDGE_TOLERANCE or y < -EDGE_TOLERANCE:
                return self._error(f"bbox {box} has a negative corner or size", entry)
            if x + w > width + EDGE_TOLERANCE or y + h > height + EDGE_TOLERANCE:
                return self._error(f"bbox {box} reaches outside the {width} x {height} image", entry)
            x0, y0 = max(x, 0.0), max(y, 0.0)
            boxes.append([x0, y0, min(x + w, float(width)) - x0, min(y + h, float(height)) - y0])
            labels.append(self.categories[category])
            crowd.append(float(annotation.get("iscrowd", 0)))
            area.append(float(annotation.get("area", w * h)))
            if self.masks:
                try:
                    masks.append(segmentation_mask(annotation.get("segmentation"), height, width))
                except (ValueError, TypeError) as exc:
                    return self._error(f"segmentation: {exc}", entry)
        record: dict[str, Any] = {
            "image": path,
            "image_id": image_id,
            "objects": {"boxes": boxes, "labels": labels, "iscrowd": crowd, "area": area},
        }
        if self.masks:
            record["masks"] = masks
        return SourceItem(str(image["file_name"]), record)
