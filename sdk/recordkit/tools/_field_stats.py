"""Value statistics of a dataset's fields, gathered in one streaming pass.

Memory stays bounded whatever the dataset's size: numbers are summarised as they come
(count, min, max, mean) and kept for histograms only as a fixed-size uniform sample
(reservoir sampling, seeded, so a run is reproducible); counters hold one entry per
distinct key (keys beyond :data:`MAX_DISTINCT` distinct ones are counted as ``"other"``).

What a value contributes is its codec's to say
(:class:`~recordkit.codec._capabilities.Summarized`): named lists of numbers, summarised,
and named counts, tallied. The built-in codecs give: ``label`` a class histogram;
``image`` sizes, channels and height and width summaries; ``audio`` durations in
seconds; ``text`` lengths in characters; ``bbox`` boxes per record, box width and height
and the box class histogram; ``mask`` pixel counts per class; ``scalar`` and ``tensor``
their values. A codec that says nothing gets min, max and mean of its numbers (or the
length of its text). Every optional field also counts how many records hold it. Nothing
here knows a codec by its name.

NaN values (which the writer accepts in scalars and tensors) are counted apart, as
``nan``, and left out of min, max, mean and the sample; infinities are values like any
other (a max of ``inf``).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from recordkit.codec._capabilities import Statistics, Summarized
from recordkit.schema._bound import BoundField
from recordkit.tools._codec_calls import calling

__all__ = ["MAX_DISTINCT", "SAMPLE", "FieldStats", "Summary", "fallback_statistics", "json_safe"]

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


def fallback_statistics(value: Any) -> Statistics:
    """The statistics of a value whose codec says none: its numbers, or its length as text."""
    array = np.asarray(value)
    if array.dtype.kind in "biuf":
        return {"values": array.astype(np.float64).reshape(-1).tolist()}
    return {"length": [float(len(str(value)))]}


class FieldStats:
    """What is gathered for one field (see the module docs)."""

    def __init__(self, field: BoundField) -> None:
        self.field = field
        self.codec = field.spec.codec
        self.records = 0
        self.present = 0
        self.summaries: dict[str, Summary] = {}
        self.counters: dict[str, _Bounded] = {}
        codec = field.codec
        self._statistics = codec.summarize if isinstance(codec, Summarized) else fallback_statistics

    def _summary(self, name: str) -> Summary:
        return self.summaries.setdefault(name, Summary(len(self.summaries)))

    def _counter(self, name: str) -> _Bounded:
        return self.counters.setdefault(name, _Bounded())

    def add(self, value: Any) -> None:
        self.records += 1
        if value is None:
            return
        self.present += 1
        values = value if self.field.spec.sequence else [value]
        for one in values:
            self._add_one(one)

    def _add_one(self, value: Any) -> None:
        with calling(self.field, "summarize"):
            statistics = self._statistics(value)
        for name, data in statistics.items():
            if isinstance(data, Mapping):
                counter = self._counter(name)
                for key, count in data.items():
                    counter.bump(str(key), int(count))
            else:
                self._summary(name).add_many(data)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"codec": self.codec, "records": self.records}
        if self.field.spec.optional:
            out["present"] = self.present
        for name, summary in self.summaries.items():
            out[name] = summary.to_json()
        for name, counter in self.counters.items():
            out[name] = dict(counter.most_common())
        return out


def json_safe(value: Any) -> Any:
    """``value`` (nested dicts and lists) with every float that is not finite replaced by
    its string (``"NaN"``, ``"Infinity"``, ``"-Infinity"``, as JavaScript spells them):
    valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_safe(item) for item in value]
    return value
