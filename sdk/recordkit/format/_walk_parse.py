"""The Examples of many records walked at once against one layout, whatever their lengths:
where each value of each record sits, and which records have exactly that layout.

A *layout* is what one record's template says (:mod:`recordkit.format._batch_parse`):
its keys in order, each with its list's tag (bytes, float or int64; none for an empty
Feature) and its number of length-delimited values (a bytes list's values; one packed
run of numbers, or none). Records whose bytes values (captions, text) have other
lengths have that layout with other lengths inside: the same fields, moved. The walk
reads the wire format of every record at the same step together, as numpy arrays of one
cursor a record: the tag byte at each cursor, the length varint after it (one byte for
all in one step, else up to five bytes each, masked), the key's bytes, then each
record's cursor moves by its own length. Every declared length must equal what its
contents take (the Example's, each map entry's, Feature's and list's), each key's bytes
and length must be the layout's, varints must be minimal (as protobuf writes them), and
each record must end exactly at its end; a record that fails any check is not matched
(its bytes are parsed alone, by protobuf, which gives the values or the error). The
checks are gathered as the walk goes and made in one step at its end; a cursor sent
astray by a wrong length reads clipped to the buffer, and fails them.

What the walk does not look at is each value's bytes: a matched record's values are at
the places it gives (:func:`walked`), where the caller slices them (numbers: the varints
of an int64 run are checked by the caller, which decodes them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

__all__ = ["Entry", "Walked", "walked"]

#: One key of a layout: its UTF-8 bytes, its list's tag (``0x0A`` bytes, ``0x12`` float,
#: ``0x1A`` int64; 0 for an empty Feature) and its number of length-delimited values.
Entry = tuple[bytes, int, int]

_BYTES = np.arange(5)
_SHIFTS = 7 * np.arange(5, dtype=np.int64)
_MAP_ENTRY = 0x0A
_KEY = 0x0A
_FEATURE = 0x12
_VALUE = 0x0A


@dataclasses.dataclass(frozen=True)
class Walked:
    """Records walked against a layout: which of them have it (``match``), and for each
    key of the layout, in its order, the ``(begin, width)`` of each of its values in every
    record (arrays of one a record, positions in the walked buffer; meaningful where
    ``match``)."""

    match: np.ndarray
    places: list[list[tuple[np.ndarray, np.ndarray]]]


class _Walk:
    """The checks of a walk, gathered as it goes and made together at its end."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.at: list[np.ndarray] = []  # [m, n] positions of structure bytes
        self.expected: list[np.ndarray] = []  # [m] their bytes
        self.checks: list[np.ndarray] = []  # [n] masks that must hold

    def delimited(self, at: np.ndarray, tag: int) -> tuple[np.ndarray, np.ndarray]:
        """The (begin, length) of each record's length-delimited field ``tag`` at ``at``."""
        self.at.append(at[None, :])
        self.expected.append(np.array([tag], dtype=np.uint8))
        begin = at + 1
        first = np.take(self.data, begin, mode="clip")
        if int(first.max()) < 0x80:  # one byte each: the common case
            begin += 1
            return begin, first
        more = first >= 0x80
        second = np.take(self.data, begin + 1, mode="clip")
        if not bool((second[more] >= 0x80).any()):  # at most two bytes each: lengths below 16384
            self.checks.append(~more | (second != 0))  # minimal
            values = (first & 0x7F) + (second.astype(np.int64) << 7) * more
            begin += 1
            begin += more
            return begin, values
        rows = np.take(self.data, begin[:, None] + _BYTES, mode="clip").astype(np.int64)
        widths = np.logical_and.accumulate(rows >= 0x80, axis=1).sum(axis=1) + 1
        used = _BYTES[None, :] < widths[:, None]
        values = (((rows & 0x7F) << _SHIFTS) * used).sum(axis=1)
        last = rows[np.arange(len(rows)), np.minimum(widths, 5) - 1]
        self.checks.append((widths <= 5) & ((widths == 1) | (last != 0)))  # minimal, at most 5 bytes
        begin += widths
        return begin, values

    def equal(self, got: np.ndarray, want: np.ndarray | int) -> None:
        self.checks.append(got == want)

    def key(self, at: np.ndarray, key: bytes) -> None:
        self.at.append(at[None, :] + np.arange(len(key))[:, None])
        self.expected.append(np.frombuffer(key, dtype=np.uint8))

    def matched(self) -> np.ndarray:
        at = np.concatenate(self.at)
        expected = np.concatenate(self.expected)
        match: np.ndarray = (np.take(self.data, at, mode="clip") == expected[:, None]).all(axis=0)
        if self.checks:
            match &= np.logical_and.reduce(self.checks)
        return match


def walked(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, layout: Sequence[Entry]) -> Walked:
    """The Examples in ``data[starts[i]:ends[i]]`` (``starts``, ``ends``: int64 arrays)
    walked against ``layout`` (see the module): which have exactly that layout, and
    where their values are."""
    if len(starts) == 0:
        return Walked(np.zeros(0, dtype=bool), [[] for _ in layout])
    walk = _Walk(data)
    begin, size = walk.delimited(starts, 0x0A)  # Example.features
    walk.equal(begin + size, ends)
    places: list[list[tuple[np.ndarray, np.ndarray]]] = []
    at = begin
    for key, tag, count in layout:
        entry, size = walk.delimited(at, _MAP_ENTRY)
        end = entry + size
        name, size = walk.delimited(entry, _KEY)
        walk.equal(size, len(key))
        walk.key(name, key)
        feature, size = walk.delimited(name + len(key), _FEATURE)
        walk.equal(feature + size, end)
        runs: list[tuple[np.ndarray, np.ndarray]] = []
        if tag:
            values, size = walk.delimited(feature, tag)
            walk.equal(values + size, end)
            for _ in range(count):
                value, size = walk.delimited(values, _VALUE)
                runs.append((value, size))
                values = value + size
            walk.equal(values, end)
        else:  # an empty Feature
            walk.equal(size, 0)
        places.append(runs)
        at = end
    walk.equal(at, ends)
    return Walked(walk.matched(), places)
