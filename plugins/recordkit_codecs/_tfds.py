"""Shared pieces of the built-in codecs' TensorFlow Datasets features
(:class:`recordkit.TfdsDescribed`): the ``features.json`` entries of the TFDS classes
they map onto, written as TFDS itself writes them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import recordkit as rk

__all__ = ["TFDS", "bbox_entry", "class_label", "tensor_entry", "text_feature"]

#: Where TFDS's feature classes live (the "pythonClassName" of features.json).
TFDS = "tensorflow_datasets.core.features."


def class_label(
    names: Sequence[str], count: int, *, wire: str = "", sequence: bool = False
) -> rk.TfdsFeature:
    """A ``ClassLabel`` of ``count`` classes (named ``names``, when given) that parses
    the int64 class ids under wire feature ``wire``: one per record, or a list of them
    (``sequence``)."""
    entry = {
        "classLabel": {"numClasses": str(count)},
        "pythonClassName": f"{TFDS}class_label_feature.ClassLabel",
    }
    shape: tuple[int | None, ...] = (None,) if sequence else ()
    return rk.TfdsFeature(entry, rk.WireKind.INT64, shape, wire, sequence, tuple(names))


def bbox_entry() -> dict[str, Any]:
    """A ``BBoxFeature``: one box as four float32 ``ymin, xmin, ymax, xmax`` in ``[0, 1]``."""
    box = {"shape": {"dimensions": ["4"]}, "dtype": "float32", "bboxFormat": "REL_YXYX"}
    return {"boundingBox": box, "pythonClassName": f"{TFDS}bounding_boxes.BBoxFeature"}


def tensor_entry(dtype: str) -> dict[str, Any]:
    """A ``Tensor`` holding one number of numpy dtype ``dtype``, stored as it is."""
    tensor = {"shape": {}, "dtype": dtype, "encoding": "none"}
    return {"tensor": tensor, "pythonClassName": f"{TFDS}tensor_feature.Tensor"}


def text_feature() -> rk.TfdsFeature:
    """A ``Text`` that parses the UTF-8 bytes under the field's key."""
    return rk.TfdsFeature({"text": {}, "pythonClassName": f"{TFDS}text_feature.Text"}, rk.WireKind.BYTES)
