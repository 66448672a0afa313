"""The statistics of ``recordkit stats`` (one split's ``FieldStats.to_json()``) laid out
as bar charts the templates draw as SVG: a counter (classes of a label, box classes ...)
as one bar per key, each linking to the grid filtered to the records that hold the key;
a summary (sizes, durations, boxes per record ...) as its count, min, max and mean
above a histogram of its sample, each bar linking to the grid of the records with a
value in its range.
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


def charts(result: dict[str, Any], split: str) -> list[Chart]:
    """One chart per statistic of every field of a statistics job's ``result``."""
    out: list[Chart] = []
    for field, data in result["fields"].items():
        for statistic, value in data.items():
            if statistic in ("codec", "records", "present") or not isinstance(value, dict):
                continue
            where = {"split": split, "field": field, "statistic": statistic}
            if "count" in value and set(value) <= {"count", "min", "max", "mean", "nan"}:
                ranges = result["histograms"].get(field, {}).get(statistic, [])
                bars = _bars(
                    [(_range(low, high), count, {**where, "low": repr(low), "high": repr(high)})
                     for low, high, count in ranges]
                )  # fmt: skip
                out.append(Chart(field, statistic, bars, summary=value))
                continue
            counts = [(str(k), int(v)) for k, v in value.items() if isinstance(v, int)]
            bars = _bars([(key, count, {**where, "key": key}) for key, count in counts[:MAX_BARS]])
            out.append(Chart(field, statistic, bars, more=max(0, len(counts) - MAX_BARS)))
    return out


def _range(low: float, high: float) -> str:
    return f"{low:g}" if low == high else f"{low:.4g} to {high:.4g}"


def _bars(items: list[tuple[str, int, dict[str, str]]]) -> list[Bar]:
    longest = max([count for _, count, _ in items] + [1])
    return [Bar(label, count, count / longest, "/?" + urlencode(query)) for label, count, query in items]
