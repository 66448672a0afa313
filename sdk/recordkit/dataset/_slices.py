"""Split slicing with TFDS's syntax: ``train[:10%]``, ``train[100:200]``,
``train[-5%:]``, ``train[1shard:3shard]``, ``train+validation``, ``all``.

A split argument is one or more parts joined by ``+``; each part is a split name with
an optional ``[from:to]`` slice in records (``100``, ``-5``), percent (``10%``) or
shards (``2shard``). The rules are TFDS's (``tfds.core.ReadInstruction``, rounding
``"closest"``), so the same string selects the same records:

* a percent boundary ``p`` of a split of ``n`` records is ``round(p * n / 100)``
  (Python's ``round``: halves go to the even number);
* a negative boundary counts from the end; a boundary beyond the split's size, in
  absolute value, is an error; a shard boundary is the count of the shards before it;
* parts are read in the order given, records in their stored order.

The absolute range of each part then becomes, from the manifest's per-shard record
counts, the shards it touches and the records to skip and take in each
(:func:`shard_slices`, as TFDS's ``get_file_instructions``): only those shards are
opened, and records before the range are read past without being decoded.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

__all__ = ["SplitRange", "ShardSlice", "is_plain_split", "resolve_split", "shard_slices"]

_PART = re.compile(r"^(?P<name>[\w-]+)(\[(?P<selector>[\d\w%:.-]+)\])?$")
_BOUND = re.compile(r"^((?P<value>-?[\d_.]+)(?P<unit>%|shard)?)?$")
_PLUS = re.compile(r"\s*\+\s*")


@dataclasses.dataclass(frozen=True)
class SplitRange:
    """Records ``start`` to ``stop`` (excluded) of split ``split``."""

    split: str
    start: int
    stop: int


@dataclasses.dataclass(frozen=True)
class ShardSlice:
    """Of shard ``index`` of a split: skip ``skip`` records, then take ``take`` (None:
    all the rest)."""

    index: int
    skip: int
    take: int | None


def is_plain_split(spec: str) -> bool:
    """Whether ``spec`` names one whole split (no slice, no ``+``, not ``all``)."""
    return _PART.match(spec) is not None and "[" not in spec and spec != "all"


def _bad(spec: str, why: str) -> ValueError:
    return ValueError(
        f"split {spec!r}: {why} (the syntax is TFDS's: train, train[:10%], train[100:200], "
        "train[-5%:], train[1shard:3shard], train+validation, all)"
    )


def resolve_split(
    spec: str, counts: Mapping[str, int], shard_counts: Mapping[str, Sequence[int]]
) -> list[SplitRange]:
    """The absolute record ranges ``spec`` selects, given each split's record count and
    its shards' record counts (a ValueError names what is wrong)."""
    parts = _PLUS.split(spec.strip())
    if not spec.strip() or not all(parts):
        raise _bad(spec, "an empty part")
    ranges: list[SplitRange] = []
    for part in parts:
        match = _PART.match(part)
        if match is None:
            raise _bad(spec, f"{part!r} is not a split name with an optional [from:to]")
        name, selector = match["name"], match["selector"]
        if name == "all":
            if selector:
                raise _bad(spec, "'all' takes no slice")
            ranges += [SplitRange(split, 0, n) for split, n in counts.items()]
            continue
        if name not in counts:
            raise _bad(spec, f"no split {name!r} (splits: {', '.join(counts) or 'none'})")
        ranges.append(_range(spec, name, selector, counts[name], shard_counts[name]))
    return ranges


def _range(spec: str, name: str, selector: str | None, n: int, shards: Sequence[int]) -> SplitRange:
    if selector is None:
        return SplitRange(name, 0, n)
    bounds = [_BOUND.match(b) for b in selector.split(":")]
    if any(b is None for b in bounds) or not any(b and b.group(0) for b in bounds):
        raise _bad(spec, f"cannot read the slice [{selector}]")
    if len(bounds) == 1:
        (only,) = bounds
        assert only is not None
        if only["unit"] != "shard":
            raise _bad(spec, "records and percents need from:to (train[5shard] names one shard)")
        first = int(only["value"])
        return _absolute(spec, name, first, first + 1, "shard", n, shards)
    if len(bounds) != 2:
        raise _bad(spec, f"cannot read the slice [{selector}]")
    low, high = bounds
    assert low is not None
    assert high is not None
    unit = low["unit"] or high["unit"] or "abs"
    if low["unit"] and high["unit"] and low["unit"] != high["unit"]:
        raise _bad(spec, "both boundaries of a slice take the same unit")

    def number(text: str | None) -> int | float | None:
        if text is None:
            return None
        try:
            return float(text) if unit == "%" else int(text)
        except ValueError:
            raise _bad(spec, f"{text!r} is not a number") from None

    return _absolute(spec, name, number(low["value"]), number(high["value"]), unit, n, shards)


def _absolute(
    spec: str,
    name: str,
    low: int | float | None,
    high: int | float | None,
    unit: str,
    n: int,
    shards: Sequence[int],
) -> SplitRange:
    """TFDS's ``_rel_to_abs_instr`` with rounding ``"closest"``."""
    if unit == "%":
        if abs(low or 0) > 100 or abs(high or 0) > 100:
            raise _bad(spec, "percent boundaries lie in [-100, 100]")
        start = 0 if low is None else round(low * n / 100.0)
        stop = n if high is None else round(high * n / 100.0)
    elif unit == "shard":
        start = 0 if low is None else sum(shards[: int(low)])
        if high is not None and high <= 0:
            high = len(shards) + high
        stop = n if high is None else sum(shards[: int(high)])
    else:
        start = 0 if low is None else int(low)
        stop = n if high is None else int(high)
    if abs(start) > n or abs(stop) > n:
        raise _bad(spec, f"the slice [{start}:{stop}] reaches past the {n} records of split {name!r}")
    if start < 0:
        start += n
    if stop < 0:
        stop += n
    return SplitRange(name, start, max(start, stop))


def shard_slices(start: int, stop: int, shard_records: Sequence[int]) -> list[ShardSlice]:
    """The shards that records ``start:stop`` of a split lie in, with what to skip and
    take in each (TFDS's ``get_file_instructions``; empty shards are left out)."""
    out: list[ShardSlice] = []
    first = 0  # the split position of the shard's first record
    for index, length in enumerate(shard_records):
        if not length:
            continue
        end = first + length
        if start < end and stop > first:
            skip = max(start - first, 0)
            take = stop - first - skip if stop < end else None
            if take != 0:
                out.append(ShardSlice(index, skip, take))
        first = end
    return out
