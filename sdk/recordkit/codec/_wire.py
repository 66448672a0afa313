"""The wire spec: what one field becomes inside a tf.train.Example.

A codec declares its wire spec once; the writer derives the keys and kinds it writes
from it, and the reader derives the parse spec (``tf.io.parse_example``) from it. It is
the single source of truth that keeps the two halves in step.

Shapes describe one record's values of one feature:

* fixed: every dimension is an int, e.g. ``()`` for a scalar, ``(3,)`` for an RGB
  triple. Parsed with ``tf.io.FixedLenFeature``; batches are dense ``[B, *shape]``.
* variable: the first dimension is ``None``, e.g. ``(None,)`` for a list of label ids,
  ``(None, 4)`` for boxes. Parsed with ``tf.io.RaggedFeature``; batches are ragged
  ``[B, (n), *rest]``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np

__all__ = ["Shape", "WireFeature", "WireKind", "WireSpec", "WireValue", "WireValues"]

Shape: TypeAlias = tuple[int | None, ...]

#: What a codec's encode returns for one wire feature: bytes for BYTES features (or a
#: sequence of them), numbers (a sequence or a numpy array) for INT64 and FLOAT ones.
WireValue: TypeAlias = "bytes | Sequence[bytes] | Sequence[int] | Sequence[float] | np.ndarray | int | float"
#: What a codec's encode returns for one field: each wire feature's name to its value.
WireValues: TypeAlias = Mapping[str, Any]


class WireKind(str, enum.Enum):
    """The three value lists a tf.train.Feature can hold."""

    BYTES = "bytes"
    INT64 = "int64"
    FLOAT = "float"

    @property
    def numpy_dtype(self) -> np.dtype[Any]:
        """The numpy dtype a parsed feature of this kind has (bytes are ``object``)."""
        return _NUMPY_DTYPES[self.value]  # made once: the numpy reader asks for every value

    @property
    def tf_dtype_name(self) -> str:
        """The name of the tf.DType ``tf.io.parse_example`` produces for this kind."""
        return {"bytes": "string", "int64": "int64", "float": "float32"}[self.value]


_NUMPY_DTYPES: dict[str, np.dtype[Any]] = {
    "bytes": np.dtype(object),
    "int64": np.dtype(np.int64),
    "float": np.dtype(np.float32),
}


@dataclasses.dataclass(frozen=True)
class WireFeature:
    """One tf.train.Example key of a field.

    ``name`` is relative to the field: ``""`` is the field's main key (stored as the
    field's own name), any other name is stored as ``"<field>/<name>"`` unless the
    schema maps it to another key (for TFRecords recordkit did not write).
    """

    name: str
    kind: WireKind
    shape: Shape = ()
    description: str = ""

    def __post_init__(self) -> None:
        if any(dim is None for dim in self.shape[1:]):
            raise ValueError(f"wire feature {self.name!r}: only the first dimension may be None")
        if any(dim is not None and dim < 0 for dim in self.shape):
            raise ValueError(f"wire feature {self.name!r}: negative dimension in {self.shape}")

    # Cached: the writer asks these for every record (a frozen dataclass still has a
    # __dict__, which functools.cached_property fills without going through __setattr__).
    @functools.cached_property
    def is_fixed(self) -> bool:
        """True when every record holds exactly ``prod(shape)`` values."""
        return None not in self.shape

    @functools.cached_property
    def inner_shape(self) -> tuple[int, ...]:
        """The shape after the first (possibly variable) dimension."""
        return tuple(d for d in self.shape[1:] if d is not None)

    @functools.cached_property
    def inner_size(self) -> int:
        """How many values one step of the first dimension holds (1 for ``(None,)``)."""
        return math.prod(self.inner_shape)

    @functools.cached_property
    def fixed_size(self) -> int:
        """How many values a fixed feature holds in one record."""
        if not self.is_fixed:
            raise ValueError(f"wire feature {self.name!r} has a variable shape {self.shape}")
        return math.prod(d for d in self.shape if d is not None)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description (used in manifests and fingerprints)."""
        return {"name": self.name, "kind": self.kind.value, "shape": list(self.shape)}


@dataclasses.dataclass(frozen=True)
class WireSpec:
    """All the wire features of one field, in a stable order.

    ``in_graph`` says whether the codec's TensorFlow decode runs as pure graph ops;
    ``False`` means it calls back into Python (``tf.numpy_function``), which works in
    tf.data but holds the GIL and cannot be serialized into a SavedModel.
    """

    features: tuple[WireFeature, ...]
    in_graph: bool = True

    def __post_init__(self) -> None:
        names = [f.name for f in self.features]
        if len(set(names)) != len(names):
            raise ValueError(f"wire spec has duplicate feature names: {names}")
        if not self.features:
            raise ValueError("a wire spec needs at least one feature")

    def __iter__(self) -> Iterator[WireFeature]:
        return iter(self.features)

    def __getitem__(self, name: str) -> WireFeature:
        for feature in self.features:
            if feature.name == name:
                return feature
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.features)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description of every feature (used in manifests and fingerprints)."""
        return {"features": [f.as_dict() for f in self.features], "in_graph": self.in_graph}


def wire_key(field: str, feature_name: str, key_map: Mapping[str, str] | None = None) -> str:
    """The tf.train.Example key for ``feature_name`` of ``field``."""
    if key_map and feature_name in key_map:
        return key_map[feature_name]
    return field if feature_name == "" else f"{field}/{feature_name}"
