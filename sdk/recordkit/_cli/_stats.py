"""Value statistics of a dataset's fields, gathered in one streaming pass.

Memory stays bounded whatever the dataset's size: numbers are summarised as they come
(count, min, max, mean) and kept for histograms only as a fixed-size uniform sample
(reservoir sampling, seeded, so a run is reproducible); counters hold one entry per
distinct class, image size or channel count (image sizes beyond
:data:`MAX_DISTINCT` distinct ones are counted as ``"other"``).

Per codec: ``label`` a class histogram; ``image`` sizes, channels and height and width
summaries; ``audio`` durations in seconds; ``text`` lengths in characters; ``bbox``
boxes per record, box width and height and the box class histogram; ``mask`` pixel
counts per class; ``scalar`` and ``tensor`` min, max and mean of their values. Every
optional field also counts how many records hold it.

NaN values (which the writer accepts in scalars and tensors) are counted apart, as
``nan``, and left out of min, max, mean and the sample; infinities are values like any
other (a max of ``inf``).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np

from recordkit.schema._bound import BoundField

__all__ = ["MAX_DISTINCT", "SAMPLE", "FieldStats", "Summary"]

#: Values kept per summary for histograms.
SAMPLE = 10_000
#: Values of one record that join the sample at most (the rest are summarised only).
_PER_CALL = 256
#: Distinct keys a counter keeps before the rest are counted as "other".
MAX_DISTINCT = 1_000


class Summary:
    """Count, min, max and mean of numbers, and a bounded uniform sample of them."""

    def __init__(self, seed: int = 0) -> None:
        self.count = 0
        #: NaN values seen (not in count, min, max, mean or the sample).
        self.nan = 0
        self.total = 0.0
        self.min = float("inf")
        self.max = float("-inf")
        self.sample: list[float] = []
        self._random = random.Random(seed)

    def add_many(self, values: Any) -> None:
        array = np.asarray(values, dtype=np.float64).reshape(-1)
        missing = np.isnan(array)
        if missing.any():
            self.nan += int(missing.sum())
            array = array[~missing]
        if not array.size:
            return
        self.total += float(array.sum())
        self.min = min(self.min, float(array.min()))
        self.max = max(self.max, float(array.max()))
        chosen = array
        if array.size > _PER_CALL:  # a large tensor: a random few of its values join the sample
            chosen = array[self._random.sample(range(array.size), _PER_CALL)]
        for value in chosen.tolist():
            self._keep(value)
        self.count += int(array.size) - int(chosen.size)

    def _keep(self, value: float) -> None:
        self.count += 1
        if len(self.sample) < SAMPLE:
            self.sample.append(value)
        else:
            slot = self._random.randrange(self.count)
            if slot < SAMPLE:
                self.sample[slot] = value

    def to_json(self) -> dict[str, Any]:
        nan = {"nan": self.nan} if self.nan else {}
        if not self.count:
            return {"count": 0, **nan}
        mean = self.total / self.count
        return {"count": self.count, "min": self.min, "max": self.max, "mean": mean, **nan}


class _Bounded(Counter[str]):
    def bump(self, key: str, by: int = 1) -> None:
        if key not in self and len(self) >= MAX_DISTINCT:
            key = "other"
        self[key] += by


class FieldStats:
    """What is gathered for one field (see the module docs)."""

    def __init__(self, field: BoundField) -> None:
        self.field = field
        self.codec = field.spec.codec
        self.records = 0
        self.present = 0
        self.summaries: dict[str, Summary] = {}
        self.counters: dict[str, _Bounded] = {}
        self.mask_pixels = np.zeros(256, dtype=np.int64)

    def _summary(self, name: str) -> Summary:
        return self.summaries.setdefault(name, Summary(len(self.summaries)))

    def _counter(self, name: str) -> _Bounded:
        return self.counters.setdefault(name, _Bounded())

    def _names(self, option: str) -> list[str]:
        return list(self.field.spec.options.get(option) or [])

    def add(self, value: Any) -> None:
        self.records += 1
        if value is None:
            return
        self.present += 1
        values = value if self.field.spec.sequence else [value]
        for one in values:
            self._add_one(one)

    def _add_one(self, value: Any) -> None:
        codec = self.codec
        if codec == "label":
            names = self._names("names")
            ids = np.asarray(value).reshape(-1)
            if ids.dtype.kind == "f":  # multi-hot
                ids = np.flatnonzero(ids)
            for i in ids.tolist():
                self._counter("classes").bump(names[i] if i < len(names) else str(i))
        elif self.field.codec.raster == "pixels":
            array = np.asarray(value)
            self._counter("sizes").bump(f"{array.shape[0]}x{array.shape[1]}")
            self._counter("channels").bump(str(array.shape[2] if array.ndim == 3 else 1))
            self._summary("height").add_many([array.shape[0]])
            self._summary("width").add_many([array.shape[1]])
        elif self.field.codec.raster == "indices":
            self.mask_pixels += np.bincount(np.asarray(value, dtype=np.uint8).reshape(-1), minlength=256)
        elif codec == "audio":
            rate = int(self.field.spec.options.get("sample_rate", 1))
            self._summary("duration_s").add_many([np.asarray(value).shape[0] / rate])
        elif codec == "text":
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
            self._summary("length").add_many([len(text)])
        elif codec == "bbox":
            boxes = np.asarray(
                value["boxes"] if isinstance(value, dict) else value, dtype=np.float64
            ).reshape(-1, 4)
            self._summary("boxes_per_record").add_many([len(boxes)])
            fmt = self.field.spec.options.get("format", "xyxy")
            if fmt in ("xywh", "cxcywh"):
                widths, heights = boxes[:, 2], boxes[:, 3]
            elif fmt == "yxyx":
                widths, heights = boxes[:, 3] - boxes[:, 1], boxes[:, 2] - boxes[:, 0]
            else:
                widths, heights = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
            self._summary("box_width").add_many(widths)
            self._summary("box_height").add_many(heights)
            if isinstance(value, dict) and "labels" in value:
                names = self._names("labels")
                for i in np.asarray(value["labels"]).reshape(-1).tolist():
                    self._counter("box_classes").bump(names[i] if i < len(names) else str(i))
        else:
            array = np.asarray(value)
            if array.dtype.kind in "biuf":
                self._summary("values").add_many(array.astype(np.float64))
            else:
                self._summary("length").add_many([len(str(value))])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"codec": self.codec, "records": self.records}
        if self.field.spec.optional:
            out["present"] = self.present
        for name, summary in self.summaries.items():
            out[name] = summary.to_json()
        for name, counter in self.counters.items():
            out[name] = dict(counter.most_common())
        if self.mask_pixels.any():
            out["mask_pixels"] = {str(i): int(n) for i, n in enumerate(self.mask_pixels) if n}
        return out
