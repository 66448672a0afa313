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

A broken XML file, an unknown class name, a box outside its image or not of four
numbers, a ``difficult`` or ``truncated`` flag other than 0 or 1, a ``<size>`` that is
not the photo's own, a missing file or an image id whose files lie outside ``root`` is
an InputError naming the file (the list file's line, the XML line where the parser
stopped, or the object) and the element.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal
from xml.etree import ElementTree

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.sources._base import OnBadInput, Skipped, Source, SourceItem
from recordkit.sources._media import check_declared_size

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
        allow_outside_root: bool = False,
    ) -> None:
        super().__init__(on_error=on_error, allow_outside_root=allow_outside_root)
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
        """The split's image ids, as its list file gives them (lines that cannot be read
        left out)."""
        return [image_id for _, image_id in self._ids() if isinstance(image_id, str)]

    def _ids(self) -> list[tuple[int, str | InputError]]:
        """Each line's id, or the InputError of a line that is not UTF-8."""
        try:
            lines = self.list_file.read_bytes().removeprefix(b"\xef\xbb\xbf").splitlines()
        except OSError as exc:
            raise InputError(f"cannot be read: {exc.strerror or exc}", file=str(self.list_file)) from None
        out: list[tuple[int, str | InputError]] = []
        for number, raw in enumerate(lines, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                error = InputError(
                    f"is not UTF-8 text (byte {exc.start})", file=str(self.list_file), line=number
                )
                out.append((number, error))
                continue
            if text.strip():
                out.append((number, text.split()[0]))
        return out

    def _file(self, folder: str, image_id: str, suffix: str, line: int) -> Path | InputError:
        """The file of ``image_id`` in ``folder``, inside ``root``, existing."""
        try:
            path = self.input_path(
                self.root, f"{folder}/{image_id}{suffix}", file=self.list_file, line=line, field="image id"
            )
        except InputError as exc:
            return exc
        if not path.is_file():
            return InputError(f"the file {path} does not exist", file=str(self.list_file), line=line)
        return path

    def scan(self) -> Iterator[SourceItem | Skipped | InputError]:
        for number, image_id in self._ids():
            if isinstance(image_id, InputError):
                yield image_id
                continue
            image = self._file("JPEGImages", image_id, ".jpg", number)
            if isinstance(image, InputError):
                yield image
                continue
            record: dict[str, Any] = {"image": image, "image_id": image_id}
            if self.task == "segmentation":
                mask = self._file("SegmentationClass", image_id, ".png", number)
                if isinstance(mask, InputError):
                    yield mask
                    continue
                record["mask"] = mask
            else:
                xml = self._file("Annotations", image_id, ".xml", number)
                objects = xml if isinstance(xml, InputError) else self._objects(xml, image)
                if isinstance(objects, InputError):
                    yield objects
                    continue
                record["objects"] = objects
            yield SourceItem(image_id, record)

    def _objects(self, xml: Path, image: Path) -> dict[str, list[Any]] | InputError:
        try:
            tree = ElementTree.parse(xml)
        except ElementTree.ParseError as exc:
            line, column = exc.position
            return InputError(f"broken XML: {exc} (column {column})", file=str(xml), line=line)
        except OSError as exc:
            return InputError(f"cannot be read: {exc.strerror or exc}", file=str(xml))
        root = tree.getroot()
        try:
            width, height = check_declared_size(image, _int(root, "size/width"), _int(root, "size/height"))
        except ValueError as exc:
            return InputError(f"<size>: {exc}", file=str(xml), field="size")
        out: dict[str, list[Any]] = {"boxes": [], "labels": [], "difficult": [], "truncated": []}
        for i, obj in enumerate(root.iter("object")):
            entry = f"object {i}"
            name = (obj.findtext("name") or "").strip()
            if name not in self.classes:
                return InputError(
                    f"unknown class {name!r:.80} (the classes: {', '.join(self.classes)})",
                    file=str(xml),
                    entry=entry,
                    field="name",
                )
            try:
                box = [_number(obj, f"bndbox/{k}") - 1 for k in ("xmin", "ymin", "xmax", "ymax")]
                flags = [_flag(obj, key) for key in ("difficult", "truncated")]
            except _ElementError as exc:
                return InputError(str(exc), file=str(xml), entry=entry, field=exc.element)
            x0, y0, x1, y1 = box
            if x0 < 0 or y0 < 0 or x1 > width or y1 > height or x0 > x1 or y0 > y1:
                return InputError(
                    f"box {[v + 1 for v in box]} (1-based) is not inside the {width} x {height} image",
                    file=str(xml),
                    entry=entry,
                    field="bndbox",
                )
            out["boxes"].append(box)
            out["labels"].append(name)
            out["difficult"].append(flags[0])
            out["truncated"].append(flags[1])
        return out


class _ElementError(ValueError):
    """An element whose text is missing or not what it must be."""

    def __init__(self, element: str, problem: str) -> None:
        super().__init__(f"<{element}> {problem}")
        self.element = element


def _text(node: ElementTree.Element, path: str) -> str:
    found = node.findtext(path)
    if found is None:
        raise _ElementError(path, "is missing")
    return found.strip()


def _int(node: ElementTree.Element, path: str) -> object:
    """The whole number at ``path``, or the text itself when it is not one (the size
    check then says so)."""
    text = _text(node, path)
    return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else text


def _number(node: ElementTree.Element, path: str) -> float:
    text = _text(node, path)
    try:
        value = float(text) if len(text) < 40 else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise _ElementError(path, f"must be a number, not {text!r:.40}")
    return value


def _flag(node: ElementTree.Element, key: str) -> float:
    """A 0/1 flag (``difficult``, ``truncated``); absent or empty is 0."""
    text = (node.findtext(key) or "0").strip() or "0"
    if text not in ("0", "1", "0.0", "1.0"):
        raise _ElementError(key, f"must be 0 or 1, not {text!r:.40}")
    return float(text)
