"""Pascal VOC: ``pascal_voc(root, split, task="detection" | "segmentation")``.

``root`` is a VOC year folder (``VOCdevkit/VOC2012``): ``ImageSets/Main/<split>.txt``
or ``ImageSets/Segmentation/<split>.txt`` lists the image ids, ``JPEGImages/<id>.jpg``
holds the photos, ``Annotations/<id>.xml`` the objects and ``SegmentationClass/<id>.png``
the class masks.

* ``detection``: the image, its id, and ``objects``: each ``<object>``'s box, name,
  ``difficult`` and ``truncated`` flags. VOC counts pixels from 1; boxes are stored
  0-based, ``xyxy`` in pixels (each coordinate minus 1, as TFDS does), checked against
  the ``<size>`` the XML gives.
* ``segmentation``: the image, its id and the ``SegmentationClass`` palette PNG as a
  ``mask`` (the PNG's indices are the classes, 0 the background, 255 the void border,
  the mask codec's ``ignore_index``).

A broken XML file, an unknown class name, a box outside its image or a missing file is
an InputError naming the file (and the XML line where the parser stopped).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal
from xml.etree import ElementTree

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.sources._base import OnBadInput, Skipped, Source, SourceItem

__all__ = ["VOC_CLASSES", "PascalVocSource"]

#: The 20 object classes of Pascal VOC, in the order of their ids (1..20 in the masks,
#: where 0 is the background).
VOC_CLASSES = (
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
    "train", "tvmonitor",
)  # fmt: skip

Task = Literal["detection", "segmentation"]


class PascalVocSource(Source):
    """A Pascal VOC folder, one split, for detection or segmentation (see the module docs).

    :param classes: the object class names (default: VOC's 20).
    """

    kind = "pascal_voc"

    def __init__(
        self,
        root: str | Path,
        split: str = "train",
        *,
        task: Task = "detection",
        classes: tuple[str, ...] | list[str] = VOC_CLASSES,
        on_error: OnBadInput = "raise",
    ) -> None:
        super().__init__(on_error=on_error)
        if task not in ("detection", "segmentation"):
            raise ValueError(f"task must be 'detection' or 'segmentation', not {task!r}")
        self.root = Path(root)
        self.split = split
        self.task: Task = task
        self.classes = list(classes)
        folder = "Main" if task == "detection" else "Segmentation"
        self.list_file = self.root / "ImageSets" / folder / f"{split}.txt"
        if not self.list_file.is_file():
            raise InputError(
                f"no list of the {split!r} split for {task} (a VOC folder?)", file=str(self.list_file)
            )

    def schema(self, name: str | None = None) -> Schema:
        fields = {
            "image": FieldSpec(codec="image", options={"format": "keep"}, description="the JPEG, as it is"),
            "image_id": FieldSpec(codec="text", description="VOC's image id (the file name stem)"),
        }
        if self.task == "detection":
            fields["objects"] = FieldSpec(
                codec="bbox",
                options={
                    "format": "xyxy",
                    "normalized": False,
                    "labels": self.classes,
                    "extras": ["difficult", "truncated"],
                    "image_field": "image",
                },
                description="boxes (0-based pixels), class names, difficult and truncated flags",
            )
        else:
            fields["mask"] = FieldSpec(
                codec="mask",
                options={"num_classes": len(self.classes) + 1, "ignore_index": 255},
                description="class index per pixel: 0 background, 1.. the classes, 255 void",
            )
        return Schema(name=name or f"voc-{self.task}", fields=fields)

    def ids(self) -> list[str]:
        """The split's image ids, as its list file gives them."""
        lines = self.list_file.read_text(encoding="utf-8").splitlines()
        return [line.split()[0] for line in lines if line.strip()]

    def _scan(self) -> Iterator[SourceItem | Skipped | InputError]:
        for number, image_id in enumerate(self.ids(), start=1):
            image = self.root / "JPEGImages" / f"{image_id}.jpg"
            if not image.is_file():
                yield InputError(f"the image {image} does not exist", file=str(self.list_file), line=number)
                continue
            record: dict[str, Any] = {"image": image, "image_id": image_id}
            if self.task == "segmentation":
                mask = self.root / "SegmentationClass" / f"{image_id}.png"
                if not mask.is_file():
                    yield InputError(f"the mask {mask} does not exist", file=str(self.list_file), line=number)
                    continue
                record["mask"] = mask
            else:
                objects = self._objects(self.root / "Annotations" / f"{image_id}.xml")
                if isinstance(objects, InputError):
                    yield objects
                    continue
                record["objects"] = objects
            yield SourceItem(image_id, record)

    def _objects(self, xml: Path) -> dict[str, list[Any]] | InputError:
        try:
            tree = ElementTree.parse(xml)
        except FileNotFoundError:
            return InputError("the annotation file does not exist", file=str(xml))
        except ElementTree.ParseError as exc:
            line, column = exc.position
            return InputError(f"broken XML: {exc} (column {column})", file=str(xml), line=line)
        root = tree.getroot()
        try:
            width = int(_text(root, "size/width"))
            height = int(_text(root, "size/height"))
        except ValueError as exc:
            return InputError(f"<size>: {exc}", file=str(xml))
        out: dict[str, list[Any]] = {"boxes": [], "labels": [], "difficult": [], "truncated": []}
        for i, obj in enumerate(root.iter("object")):
            entry = f"object {i}"
            name = obj.findtext("name", "").strip()
            if name not in self.classes:
                return InputError(
                    f"unknown class {name!r} (the classes: {', '.join(self.classes)})",
                    file=str(xml),
                    entry=entry,
                )
            try:
                box = [float(_text(obj, f"bndbox/{k}")) - 1 for k in ("xmin", "ymin", "xmax", "ymax")]
            except ValueError as exc:
                return InputError(f"<bndbox>: {exc}", file=str(xml), entry=entry)
            x0, y0, x1, y1 = box
            if x0 < 0 or y0 < 0 or x1 > width or y1 > height or x0 > x1 or y0 > y1:
                return InputError(
                    f"box {[v + 1 for v in box]} (1-based) is not inside the {width} x {height} image",
                    file=str(xml),
                    entry=entry,
                )
            out["boxes"].append(box)
            out["labels"].append(name)
            out["difficult"].append(float(obj.findtext("difficult", "0").strip() or 0))
            out["truncated"].append(float(obj.findtext("truncated", "0").strip() or 0))
        return out


def _text(node: ElementTree.Element, path: str) -> str:
    found = node.findtext(path)
    if found is None:
        raise ValueError(f"no <{path}>")
    return found.strip()
