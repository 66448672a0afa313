"""The ``label`` codec: a class label per record, or a set of them (multi-label).

A record gives a class name (when the schema lists ``names``) or an integer id. Ids are
what is stored and what readers get: ``names[i]`` has id ``i``. The number of classes is
``len(names)`` or ``num_classes``; an id outside ``[0, number of classes)`` or an unknown
name is an error naming the label. With ``multi: true`` a record gives a list of labels
(possibly empty; each at most once) and readers get a ragged list of ids per record, or
with ``multi_hot: true`` a dense float32 multi-hot vector ready to use as a target.
"""

from __future__ import annotations

import collections
import numbers
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pydantic

import recordkit as rk
from recordkit_codecs._foreign import LABEL_HINT, plain_key
from recordkit_codecs._hf import value_entry
from recordkit_codecs._show import class_counts, class_names
from recordkit_codecs._tfds import class_label

__all__ = ["LabelCodec", "LabelOptions"]


class LabelOptions(rk.CodecOptions):
    """Options of the ``label`` codec."""

    names: list[str] | None = pydantic.Field(
        default=None, description="Class names; names[i] has id i. Records may then give names."
    )
    num_classes: int | None = pydantic.Field(
        default=None, ge=1, description="Number of classes (ids are 0 .. num_classes-1)."
    )
    multi: bool = pydantic.Field(default=False, description="A record holds a list of labels.")
    multi_hot: bool = pydantic.Field(
        default=False, description="With multi: decode to a dense float32 multi-hot vector per record."
    )

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> LabelOptions:
        if self.names is not None:
            if not self.names:
                raise ValueError("names must list at least one class")
            if any(not isinstance(n, str) or not n for n in self.names):
                raise ValueError("every name must be a non-empty string")
            duplicates = sorted(n for n, count in collections.Counter(self.names).items() if count > 1)
            if duplicates:
                raise ValueError(f"names are listed twice: {duplicates}")
            if self.num_classes is not None and self.num_classes != len(self.names):
                raise ValueError(
                    f"num_classes is {self.num_classes} but names lists {len(self.names)} classes"
                )
        if self.multi_hot and not self.multi:
            raise ValueError("multi_hot needs multi: true")
        if self.multi_hot and self.class_count is None:
            raise ValueError("multi_hot needs names or num_classes (the vector's length)")
        return self

    @property
    def class_count(self) -> int | None:
        """The number of classes, when names or num_classes say it."""
        return len(self.names) if self.names is not None else self.num_classes


class LabelCodec(rk.Codec[LabelOptions]):
    """Class labels by name or id; single- or multi-label."""

    name = "label"
    version = "1"

    def data_type(self) -> str:
        """The Croissant data type of its values (:class:`recordkit.DataTyped`)."""
        return "sc:Integer"

    options_model = LabelOptions
    summary = "a class label (name or id) per record, or a list of them"
    # --8<-- [start:adopt]
    adopt_order = 800

    @classmethod
    def adopt(cls, records: rk.ForeignRecords) -> Iterator[rk.Adoption | rk.LeftOut]:
        """Foreign int64 keys named like labels (``label``, ``class``, ``category_id``
        ...), one non-negative id per record (or none, where a presence flag says so):
        class ids up to the largest seen."""
        for stats in records.unclaimed():
            if records.claimed(stats.key) or records.flags_an_unclaimed_key(stats.key):
                continue
            plain = plain_key(records, stats)
            single = stats.scalar or plain.optional
            hinted = LABEL_HINT.search(stats.key) is not None
            if stats.kind is not rk.WireKind.INT64 or not single or not hinted or stats.low < 0:
                continue
            count = int(stats.high) + 1
            yield rk.Adoption(
                claims=plain.claims,
                name=stats.key,
                options={"num_classes": count},
                keys=plain.keys,
                description=f"class ids 0..{count - 1} {plain.every}",
                optional=plain.optional,
            )

    # --8<-- [end:adopt]

    def __init__(self, options: LabelOptions | Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        self._ids = {n: i for i, n in enumerate(self.options.names or ())}

    def wire_spec(self) -> rk.WireSpec:
        if self.options.multi:
            feature = rk.WireFeature("", rk.WireKind.INT64, (None,), "the class ids")
        else:
            feature = rk.WireFeature("", rk.WireKind.INT64, (), "the class id")
        return rk.WireSpec((feature,))

    # -- showing, counting and converting (optional capabilities) ------------------

    def _decoded_ids(self, value: Any) -> list[int]:
        """A decoded value's class ids (the ones set, for a multi-hot vector)."""
        ids = np.asarray(value).reshape(-1)
        if ids.dtype.kind == "f":  # multi-hot
            ids = np.flatnonzero(ids)
        return [int(i) for i in ids]

    def tfds_features(self) -> tuple[rk.TfdsFeature, ...]:
        """TFDS's ``ClassLabel`` reads the int64 class id as it is, and a ``Sequence`` of
        them the ids of a ``multi`` field, as stored (``multi_hot`` is recordkit's decode)
        (rk.TfdsDescribed)."""
        names = tuple(self.options.names or ())
        count = len(names) or self.options.num_classes
        if not count:
            raise ValueError("TFDS's ClassLabel needs the classes: give names or num_classes")
        return (class_label(names, count, sequence=self.options.multi),)

    def hf_feature(self) -> rk.HfFeature:
        """Hugging Face's ``ClassLabel`` with the class names (``"0"``, ``"1"`` ... for
        ``num_classes``), a list of them for ``multi``; ids without classes are int64
        values (rk.HfDescribed). The ids themselves are handed over, never multi-hot."""
        count = self.options.class_count
        names = list(self.options.names or ()) or [str(i) for i in range(count or 0)]
        entry: dict[str, Any] = {"names": names, "_type": "ClassLabel"} if names else value_entry("int64")
        if not self.options.multi:
            return rk.HfFeature(entry, self.decode_numpy)
        return rk.HfFeature(
            {"feature": entry, "_type": "List"}, lambda wire: np.asarray(wire[""], np.int64).tolist()
        )

    def caption(self, value: Any) -> str:
        """The class names (rk.Captioned)."""
        return ", ".join(class_names(self.options.names, self._decoded_ids(value)))

    def summarize(self, value: Any) -> rk.Statistics:
        """Records per class (rk.Summarized)."""
        return {"classes": class_counts(self.options.names, self._decoded_ids(value))}

    def encode(self, value: Any) -> rk.WireValues:
        if not self.options.multi:
            return {"": self.label_id(value)}
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
            raise rk.errors.InvalidValueError(
                f"a multi-label field takes a list of labels, got {type(value).__name__}"
            )
        ids: list[int] = []
        for label in value:
            label_id = self.label_id(label)
            if label_id in ids:
                raise rk.errors.InvalidValueError(f"label {label!r} is given more than once")
            ids.append(label_id)
        return {"": np.asarray(ids, dtype=np.int64)}

    def label_id(self, label: Any) -> int:
        """The id of one label given as a name or an id (InvalidValueError if unknown)."""
        count = self.options.class_count
        if type(label) is int and label >= 0 and (count is None or label < count):
            return label  # the common record: a valid id, checked without the ABCs below
        if isinstance(label, np.generic):
            label = label.item()
        if isinstance(label, str):
            if self.options.names is None:
                raise rk.errors.InvalidValueError(
                    f"label {label!r} is a name, but the field declares no names (give an integer id)"
                )
            try:
                return self._ids[label]
            except KeyError:
                raise rk.errors.InvalidValueError(
                    f"unknown label {label!r} (names: {_preview(self.options.names)})"
                ) from None
        if isinstance(label, bool) or not isinstance(label, numbers.Integral):
            raise rk.errors.InvalidValueError(
                f"a label is a class name or an integer id, got {type(label).__name__} {label!r}"
            )
        label_id = int(label)
        count = self.options.class_count
        if label_id < 0 or (count is not None and label_id >= count):
            bound = f"[0, {count})" if count is not None else "non-negative"
            raise rk.errors.InvalidValueError(f"label id {label_id} is out of range (ids are {bound})")
        return label_id

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        ids = np.asarray(wire[""], dtype=np.int64)
        if not self.options.multi:
            return int(ids)
        if self.options.multi_hot:
            count = self.options.class_count
            assert count is not None  # guaranteed by the options model
            hot = np.zeros(count, dtype=np.float32)
            hot[ids] = 1.0
            return hot
        return ids

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> list[Any] | None:
        """Single labels of many records at once (:class:`recordkit.DecodedInColumns`):
        the Python ints ``decode_numpy`` gives, from one array; multi-labels record by
        record."""
        if self.options.multi:
            return None
        return np.asarray(wire[""], dtype=np.int64).tolist()  # type: ignore[no-any-return]

    def decode_tf_source(self) -> rk.DecodeSource:
        """:func:`decode_label_tf` with this field's options: what decode_tf runs and
        ``recordkit codegen`` copies."""
        return rk.DecodeSource(
            decode_label_tf, {"multi_hot": self.options.multi_hot, "class_count": self.options.class_count}
        )


def decode_label_tf(wire: Mapping[str, Any], multi_hot: bool, class_count: int | None) -> Any:
    """The batched TensorFlow decode of a label field: the ids as parsed, or with
    ``multi_hot`` float32 ``[B, class_count]`` (generated parser modules carry a copy of
    this function)."""
    ids = wire[""]
    if not multi_hot:
        return ids
    import tensorflow as tf

    index = tf.stack([ids.value_rowids(), ids.values], axis=1)
    shape = tf.stack([ids.nrows(), tf.constant(class_count, tf.int64)])
    hot = tf.scatter_nd(index, tf.ones_like(ids.values, tf.float32), shape)
    return tf.minimum(hot, 1.0)


def _preview(names: list[str], limit: int = 10) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" ... ({len(names)} in all)" if len(names) > limit else "")


@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    """Register the ``label`` codec."""
    registry.register(LabelCodec)
