"""Decoded records to one batch of a few large numpy arrays, without TensorFlow or torch.

What the batch-first readers (:mod:`recordkit.read._batch_loader`) send across: per
field one array, allocated once at the batch's size and filled by numpy (no padding in
Python, no per-record tensors). Every numeric array of a batch (the shapes, lengths and
numbers too) is made by one ``allocate``, so that a DataLoader worker can lay a whole
batch out in one reused shared-memory buffer (:mod:`recordkit.read._shared_ring`).

Per field, by what its codec decodes:

* numbers (``int``, ``float``, ``bool``, 0-d arrays): one ``(batch,)`` array;
* arrays, laid out ``"pad"`` (the default): one ``(batch, *largest)`` array filled with
  the codec's pad value, and ``"<field>/shape"`` holding each record's true shape (the
  same values and keys :func:`recordkit.torch.collate` gives);
* arrays, laid out ``"concat"``: the records' arrays joined along their first axis
  (``"<field>"``), and ``"<field>/lengths"``: each record's first-axis length (boxes,
  audio, token ids: nothing padded, nothing wasted);
* anything else (strings, bytes, absent optional fields, sequences): a list.

Images stay the dtype their codec decodes (uint8 pixels); ``channels_first`` lays the
named fields out ``(batch, channels, height, width)``, written there directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from recordkit.read._random_access import RandomAccess

__all__ = [
    "Allocate",
    "AssembleBatch",
    "BatchLayout",
    "assemble_batch",
    "batch_layout",
    "field_pad_values",
    "fresh",
]

Record = dict[str, Any]
Ragged = Literal["pad", "concat"]

SHAPE = "/shape"
LENGTHS = "/lengths"

#: Makes one of a batch's arrays: ``(shape, dtype)`` to an array of that shape and dtype
#: whose contents are unspecified (memory reused from an earlier batch, say): the batch
#: writes every element, the padding included. A DataLoader worker's allocates it in
#: shared memory, where the batch crosses to the main process without a copy.
Allocate = Callable[[tuple[int, ...], "np.dtype[Any]"], np.ndarray]


def fresh(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """A new array in ordinary memory (its contents are written by the batch)."""
    return np.empty(shape, dtype)


def _placed(array: np.ndarray, allocate: Allocate) -> np.ndarray:
    """``array``'s values in an array made by ``allocate``."""
    placed = allocate(array.shape, array.dtype)
    placed[...] = array
    return placed


@dataclass(frozen=True)
class BatchLayout:
    """How a batch's arrays are laid out (see the module docstring).

    :param pad_values: each field's pad value (default 0).
    :param concat: fields whose arrays are joined along their first axis, with lengths.
    :param channels_first: fields of ``(height, width, channels)`` arrays laid out
        ``(channels, height, width)``.
    """

    pad_values: Mapping[str, float] = field(default_factory=dict)
    concat: frozenset[str] = frozenset()
    channels_first: frozenset[str] = frozenset()


def field_pad_values(records: RandomAccess) -> dict[str, float]:
    """Each field's codec pad value (what padding fills)."""
    return {f.name: float(f.codec.pad_value()) for f in records.dataset.fields}


def batch_layout(
    records: RandomAccess, concat: Sequence[str] = (), channels_first: Sequence[str] = ()
) -> BatchLayout:
    """The layout of ``records``' batches: the fields' pad values, and the fields named
    to be concatenated or laid out channels first (each checked to be a field read)."""
    names = {f.name for f in records.dataset.fields}
    for option, chosen in (("concat", concat), ("channels_first", channels_first)):
        unknown = sorted(set(chosen) - names)
        if unknown:
            raise ValueError(
                f"{option} names fields that are not read: {unknown}; the fields are {sorted(names)}"
            )
    return BatchLayout(field_pad_values(records), frozenset(concat), frozenset(channels_first))


class AssembleBatch:
    """A picklable ``records -> batch`` function bound to a layout (Grain's ``batch_fn``)."""

    def __init__(self, layout: BatchLayout) -> None:
        self.layout = layout

    def __call__(self, records: Sequence[Record]) -> dict[str, Any]:
        return assemble_batch(records, self.layout)


def assemble_batch(
    records: Sequence[Record], layout: BatchLayout, allocate: Allocate = fresh
) -> dict[str, Any]:
    """``records`` as one batch laid out by ``layout``, each padded or joined array made
    by ``allocate``; an empty list gives ``{}``."""
    if not records:
        return {}
    out: dict[str, Any] = {}
    for key in records[0]:
        _assemble(key, [record[key] for record in records], _Target(layout, allocate, out, key))
    return out


@dataclass(frozen=True)
class _Target:
    """Where one field's batch goes: the layout, the allocator, the dict written into
    and the field's name (an inner key's field is its outer field)."""

    layout: BatchLayout
    allocate: Allocate
    out: dict[str, Any]
    name: str


def _numeric(value: Any) -> bool:
    return isinstance(value, np.ndarray) and (value.dtype.kind in "biuf" or value.dtype == np.bool_)


def _assemble(key: str, values: list[Any], target: _Target) -> None:
    layout, out, name = target.layout, target.out, target.name
    first = values[0]
    if isinstance(first, dict) and all(isinstance(v, dict) for v in values):
        nested: dict[str, Any] = {}
        for inner in first:
            _assemble(inner, [v[inner] for v in values], _Target(layout, target.allocate, nested, name))
        out[key] = {k: v for k, v in nested.items() if not k.endswith((SHAPE, LENGTHS))}
        out.update({f"{key}/{k}": v for k, v in nested.items() if k.endswith((SHAPE, LENGTHS))})
        return
    if isinstance(first, (int, float, bool)) and all(type(v) is type(first) for v in values):
        out[key] = _placed(np.asarray(values), target.allocate)
        return
    if not all(_numeric(v) for v in values) or len({v.dtype for v in values}) > 1:
        out[key] = values
        return
    if len({v.ndim for v in values}) > 1:
        out[key] = values
        return
    if first.ndim == 0:
        out[key] = np.stack(values, out=target.allocate((len(values),), first.dtype))
        return
    if name in layout.concat:
        out[key], out[key + LENGTHS] = _concat(name, values, target.allocate)
        return
    out[key], out[key + SHAPE] = _pad(
        values, layout.pad_values.get(name, 0.0), name in layout.channels_first, name, target.allocate
    )


def _concat(name: str, values: list[np.ndarray], allocate: Allocate) -> tuple[np.ndarray, np.ndarray]:
    """The arrays joined along axis 0 into one array allocated at its final size."""
    trailing = {v.shape[1:] for v in values}
    if len(trailing) > 1:
        raise ValueError(
            f"field {name!r} cannot be laid out 'concat': its arrays differ beyond the first axis "
            f"({', '.join(str(t) for t in sorted(trailing))}); lay it out 'pad'"
        )
    lengths = np.fromiter((v.shape[0] for v in values), dtype=np.int64, count=len(values))
    joined = allocate((int(lengths.sum()), *values[0].shape[1:]), values[0].dtype)
    np.concatenate(values, axis=0, out=joined)
    return joined, _placed(lengths, allocate)


def _pad(
    values: list[np.ndarray], pad: float, channels_first: bool, name: str, allocate: Allocate
) -> tuple[np.ndarray, np.ndarray]:
    """The arrays in one ``(batch, *largest)`` array (each written at its corner, the
    rest the pad value), and each one's true shape. Each element is written once: the
    pad value only where no array lies."""
    if channels_first:
        if values[0].ndim != 3:
            raise ValueError(
                f"field {name!r} cannot be laid out channels first: its arrays have "
                f"{values[0].ndim} axes, not (height, width, channels)"
            )
        values = [v.transpose(2, 0, 1) for v in values]
    shapes = np.asarray([v.shape for v in values], dtype=np.int64)
    largest = tuple(int(d) for d in shapes.max(axis=0))
    batch = len(values)
    if (shapes == shapes[0]).all():
        stacked = allocate((batch, *largest), values[0].dtype)
        np.stack(values, out=stacked)
        return stacked, _placed(shapes, allocate)
    padded = allocate((batch, *largest), values[0].dtype)
    for row, value in enumerate(values):
        corner: tuple[int | slice, ...] = (row, *(slice(0, d) for d in value.shape))
        padded[corner] = value
        for axis, size in enumerate(value.shape):  # what lies beyond the array along each axis
            beyond: tuple[int | slice, ...] = (
                row,
                *(slice(0, d) for d in value.shape[:axis]),
                slice(size, None),
            )
            padded[beyond] = pad
    return padded, _placed(shapes, allocate)
