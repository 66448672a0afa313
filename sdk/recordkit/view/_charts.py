"""The statistics of ``recordkit stats`` (one split's ``FieldStats.to_json()``) laid out
as bar charts the templates draw as SVG: a counter (classes of a label, box classes ...)
as one bar per key, each linking to the grid filtered to the records that hold the key;
a summary (sizes, durations, boxes per record ...) as its count, min, max and mean.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import urlencode

__all__ = ["Bar", "Chart", "charts"]

#: Bars drawn per counter at most (the most frequent keys).
MAX_BARS = 40


@dataclasses.dataclass
class Bar:
    label: str
    count: int
    #: The bar's length, a fraction of the longest.
    share: float
    #: The grid filtered to the records holding this key.
    href: str


@dataclasses.dataclass
class Chart:
    field: str
    statistic: str
    bars: list[Bar]
    summary: dict[str, Any] | None = None
    #: Keys left out of the bars (beyond MAX_BARS).
    more: int = 0


def charts(stats: dict[str, Any], split: str) -> list[Chart]:
    """One chart per statistic of every field of ``stats``."""
    out: list[Chart] = []
    for field, data in stats.items():
        for statistic, value in data.items():
            if statistic in ("codec", "records", "present") or not isinstance(value, dict):
                continue
            if "count" in value and set(value) <= {"count", "min", "max", "mean", "nan"}:
                out.append(Chart(field, statistic, [], summary=value))
                continue
            counts = [(str(k), int(v)) for k, v in value.items() if isinstance(v, int)]
            longest = max([c for _, c in counts] + [1])
            bars = [
                Bar(key, count, count / longest, "/?" + urlencode(
                    {"split": split, "field": field, "statistic": statistic, "key": key}))
                for key, count in counts[:MAX_BARS]
            ]  # fmt: skip
            out.append(Chart(field, statistic, bars, more=max(0, len(counts) - MAX_BARS)))
    return out
