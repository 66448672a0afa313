"""Each record's value counts checked before a ``tf.data`` batch is decoded.

A record whose field of a fixed shape holds another number of values than the shape
(511 floats where it holds 512: a field group's embedding written by a faulty tool) makes
``tf.io.parse_example`` or the codec's batched decode fail with an error that names no
file and no record: a batch of serialized records carries no trace of where each came
from. So the batch parse (:func:`~recordkit.read._parse.make_padded_parser`) checks, in
the graph, a few ops a key:

* each numeric key of a fixed shape is parsed ragged (one op, as the fixed parse) and
  its rows' lengths compared with the shape's count, then reshaped to the fixed shape
  (no copy);
* each bytes key whose codec gives its values' one size (:class:`~recordkit.FixedWireBytes`:
  ``tensor``'s raw values) likewise parsed ragged and its rows counted (parsed fixed, a
  record holding two values, or none, failed ``tf.io.parse_example`` itself: ``Key:
  embedding, Index: 5. Can't parse serialized Example``), then each value measured.

Only when a record fails is a Python function called: it finds the record in the
dataset's shards (:class:`RecordLocator`, reading them from the start, a cost only a
failing read pays), and the read stops with the numpy reader's kind of error, naming the
file that holds the field (a field group's shard, for a group's field), the record's
offset in it, the record's number in the split and the field::

    recordkit DecodeError: shard fields/train/embedding.5f0c9a1e-00001.tfrecord, offset 4180,
    record 7, field 'embedding': Example key 'embedding' holds 2044 bytes, where its field's
    values hold 2048 each

The traced parse holds no read's shards: it reaches its read's locator through the
locator's token (:meth:`RecordLocator.token_tensor`, a captured input of the traced
function), looked up in :data:`_LOCATORS` on a failure only. So one trace serves every
read of the same fields (:func:`~recordkit.read._traced.parallel_map`'s ``reuse``), each
read passing its own token: building the check's graph is most of what it costs.

TensorFlow is imported when a check is built.
"""

from __future__ import annotations

import dataclasses
import itertools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from recordkit.codec._capabilities import fixed_wire_bytes
from recordkit.codec._wire import WireKind
from recordkit.dataset._shards import Shard
from recordkit.errors import DecodeError
from recordkit.format._example import decode_example
from recordkit.format._tfrecord import Compression, iter_tfrecords
from recordkit.schema._bound import BoundField

__all__ = [
    "CHECK_BRANCH",
    "RecordLocator",
    "SourcesLocator",
    "WireCheck",
    "checked_parse",
    "count_reason",
    "record_error",
    "size_reason",
    "wire_checks",
]

#: The name of the branch a checked batch parse adds (its message, made only when a record fails).
CHECK_BRANCH = "recordkit_wire_check"


@dataclasses.dataclass(frozen=True)
class WireCheck:
    """What every record holds under one Example ``key`` of a plain field of a fixed shape."""

    key: str
    field: str
    kind: WireKind
    #: The values a record holds under the key (the feature's fixed shape's).
    count: int
    shape: tuple[int, ...]
    #: For a bytes key: each value's size in bytes (the codec's, :class:`~recordkit.FixedWireBytes`).
    size: int | None = None

    def reason(self, example: dict[str, tuple[WireKind, Any]]) -> str | None:
        """Why the parsed record ``example`` fails this check (None: it passes)."""
        kind, values = example.get(self.key, (None, ()))
        key = f"Example key {self.key!r}"
        if kind is None:
            return f"{key} is missing, where its field's fixed shape holds {self.count} values"
        if kind is not self.kind:
            return f"{key} holds {kind.value} values, where its field stores {self.kind.value}"
        if len(values) != self.count:
            return count_reason(self.key, len(values), self.count)
        return None if self.size is None else size_reason(self.key, values, self.size)


def count_reason(key: str, held: int, count: int) -> str:
    """Why a record holding ``held`` values under ``key`` fails its fixed shape of ``count``."""
    return f"Example key {key!r} holds {held} values, where its field's fixed shape holds {count}"


def size_reason(key: str, values: Sequence[bytes], size: int) -> str | None:
    """Why the bytes ``values`` under ``key`` fail their field's one value ``size`` (None: they pass)."""
    wrong = next((len(value) for value in values if len(value) != size), None)
    if wrong is None:
        return None
    return f"Example key {key!r} holds {wrong} bytes, where its field's values hold {size} each"


def wire_checks(fields: Sequence[BoundField]) -> list[WireCheck]:
    """The checks of ``fields``: each numeric Example key of a plain field (neither optional
    nor a sequence) of a fixed shape, and each such bytes key whose values have one size."""
    checks = []
    for field in fields:
        if field.presence_key is not None or field.spec.sequence:
            continue
        sizes = fixed_wire_bytes(field.codec)
        for keyed in field.features:
            feature = keyed.feature
            if keyed.columns or keyed.constant is not None or not feature.is_fixed or not feature.fixed_size:
                continue
            shape = tuple(int(dim) for dim in feature.shape if dim is not None)
            if feature.kind is not WireKind.BYTES:
                checks.append(WireCheck(keyed.key, field.name, feature.kind, feature.fixed_size, shape))
            elif feature.name in sizes:
                size = int(sizes[feature.name])
                checks.append(WireCheck(keyed.key, field.name, feature.kind, feature.fixed_size, shape, size))
    return checks


class RecordLocator:
    """Where a serialized record (a shard's record, its field groups' records joined after
    it) is in ``shards``: found by reading them in order, on a failing read only.

    Each locator has a token (:attr:`token`) naming it in :data:`_LOCATORS` for as long
    as it lives: a traced parse reaches it through the token, never holding it."""

    def __init__(self, shards: Sequence[Shard], compression: Compression) -> None:
        self._shards = shards
        self._compression = compression
        self.token = next(_TOKENS)
        self._tensor: Any = None
        _LOCATORS[self.token] = self

    def token_tensor(self) -> Any:
        """The token as an eager ``int64`` scalar, made once: a function traced with it
        captures it as an input, which a reuse of that trace replaces with its own
        read's (:func:`~recordkit.read._traced.parallel_map`)."""
        import tensorflow as tf

        if self._tensor is None:
            with tf.init_scope():  # eager even inside a trace: captured, not a constant
                self._tensor = tf.constant(self.token, tf.int64)
        return self._tensor

    def __call__(self, record: bytes, key: str) -> tuple[str, int, int] | None:
        """The file holding ``key`` in the first record equal to ``record``, the record's
        offset in that file and its number in the split; None when not found."""
        start = 0
        for number in range(len(self._shards)):
            shard = self._shards[number]
            files = shard.files
            place = -1
            try:
                streams = [iter_tfrecords(file.path, self._compression) for file in files]
                for place, pieces in enumerate(zip(*streams, strict=False)):
                    if b"".join(data for _, data in pieces) != record:
                        continue
                    for file, (offset, data) in zip(files, pieces, strict=True):
                        if key in decode_example(data, [key]):
                            return file.name, offset, start + place
                    return shard.name, pieces[0][0], start + place
            except (OSError, ValueError):  # a damaged shard (a CorruptRecordError too): the next
                pass
            start += shard.records if shard.records is not None else place + 1
        return None


class SourcesLocator(RecordLocator):
    """A record looked for in several sources' shards in turn (a mixture's): the first
    source that holds it names it, its file under the source's folder (the sources'
    shards are often named alike). A :class:`RecordLocator`, so that the batch and the
    per-record parse take it as they take a split's."""

    def __init__(self, sources: Sequence[tuple[str | None, RecordLocator]]) -> None:
        super().__init__((), Compression.NONE)
        self._sources = list(sources)

    def __call__(self, record: bytes, key: str) -> tuple[str, int, int] | None:
        for folder, locate in self._sources:
            found = locate(record, key)
            if found is not None:
                file, offset, number = found
                return (file if folder is None else f"{folder.rstrip('/')}/{file}"), offset, number
        return None


_TOKENS = itertools.count(1)
#: Each live read's locator, by its token (held weakly: the read's pipeline holds it).
_LOCATORS: weakref.WeakValueDictionary[int, RecordLocator] = weakref.WeakValueDictionary()


def checked_parse(
    spec: dict[str, Any], checks: Sequence[WireCheck], locate: RecordLocator | None
) -> Callable[[Any], dict[str, Any]]:
    """``tf.io.parse_example`` of a batch of serialized records by ``spec``, with the
    ``checks`` (see the module docs): each checked numeric key parsed ragged, checked and
    given back dense, as the fixed parse gives it."""
    import tensorflow as tf

    # Every checked key parsed ragged: a fixed parse of a key holding another number of
    # values fails in ``tf.io.parse_example`` itself, naming neither file nor record (a
    # bytes key too: its values' sizes are measured after their count).
    counted = {check.key: check for check in checks}
    ragged_spec = dict(spec)
    for key in counted:
        ragged_spec[key] = tf.io.RaggedFeature(
            dtype=spec[key].dtype, value_key=key, partitions=[], row_splits_dtype=tf.int64
        )
    describe = _describer(checks)
    # The parse holds the locator's token alone (a captured input), never the locator.
    token = None if locate is None else locate.token_tensor()

    def parse(serialized: Any) -> dict[str, Any]:
        parsed = tf.io.parse_example(serialized, ragged_spec)
        if not checks:
            return dict(parsed)
        # The batch's checks, a few ops a key: every row's count, every value's size. Which
        # record fails is worked out in the failing branch alone.
        held = []
        for check in checks:
            value = parsed[check.key]
            held.append(tf.reduce_all(tf.equal(value.row_lengths(), check.count)))
            if check.size is not None:
                held.append(tf.reduce_all(tf.equal(tf.strings.length(value.flat_values), check.size)))
        passed = tf.reduce_all(tf.stack(held))

        def failed() -> Any:
            if token is None:  # no Python in the graph: a parser that can be exported
                return _graph_message(checks, parsed, _measured(checks, parsed))
            # The failing record is found in Python (few ops in the graph: those of a
            # branch not taken still cost a little at every batch).
            described = tf.numpy_function(describe, [token, serialized], tf.string, stateful=False)
            return tf.reshape(described, [])

        # One branch a batch, never a record's; named so that a graph's reader can tell it.
        message = tf.cond(passed, lambda: tf.constant(""), failed, name=CHECK_BRANCH)
        with tf.control_dependencies([tf.debugging.Assert(passed, [message], summarize=1)]):
            out = {}
            for key, value in parsed.items():
                fixed = counted.get(key)
                out[key] = (
                    tf.identity(value) if fixed is None else tf.reshape(value.flat_values, [-1, *fixed.shape])
                )
        return out

    return parse


def _measured(checks: Sequence[WireCheck], parsed: dict[str, Any]) -> list[tuple[Any, Any]]:
    """Each check's rows of the batch: whether each record holds the count, and for a
    sized bytes key whether each record's values all have the size (else None)."""
    import tensorflow as tf

    measured = []
    for check in checks:
        value = parsed[check.key]
        count = tf.equal(value.row_lengths(), check.count)
        sized = None
        if check.size is not None:
            sizes = value.with_flat_values(tf.equal(tf.strings.length(value.flat_values), check.size))
            sized = tf.reduce_all(sizes, axis=1)
        measured.append((count, sized))
    return measured


def _graph_message(
    checks: Sequence[WireCheck], parsed: dict[str, Any], measured: list[tuple[Any, Any]]
) -> Any:
    """The message of the first check a record of the batch fails, made in the graph: the
    field, the key, the record's place in the batch and what it holds (its values' count,
    or for a sized bytes key holding the right count, the size of its first wrong value)."""
    import tensorflow as tf

    # Each measure: (its check, its rows, the first failing record's row, what that record
    # holds, the unit, what it should hold): the count first, then a sized bytes key's
    # first wrong size.
    failures = []
    for check, (count, sized) in zip(checks, measured, strict=True):
        value = parsed[check.key]
        row = tf.argmin(tf.cast(count, tf.int32), output_type=tf.int64)
        held = value.row_lengths()[row]
        failures.append((check, count, row, held, "values", f"its field's fixed shape holds {check.count}"))
        if sized is not None:
            row = tf.argmin(tf.cast(sized, tf.int32), output_type=tf.int64)
            lengths = tf.strings.length(value[row])
            held = lengths[tf.argmax(tf.cast(tf.not_equal(lengths, check.size), tf.int32))]
            failures.append((check, sized, row, held, "bytes", f"its field's values hold {check.size} each"))
    messages = [
        tf.strings.join(
            [
                f"recordkit DecodeError: field {check.field!r}: Example key {check.key!r} holds ",
                tf.strings.as_string(held),
                f" {unit} in record ",
                tf.strings.as_string(row),
                f" of the batch, where {wanted}",
            ]
        )
        for check, _, row, held, unit, wanted in failures
    ]
    passes = [tf.cast(tf.reduce_all(good), tf.int32) for _, good, *_ in failures]
    first = tf.argmin(tf.stack(passes))
    return tf.gather(tf.stack(messages), first)


def _describer(checks: Sequence[WireCheck]) -> Callable[[Any, Any], bytes]:
    def describe(token: Any, serialized: Any) -> bytes:
        """The message of the first record of the batch that fails a check, found by the
        locator that ``token`` names."""
        locate = _LOCATORS.get(int(token))
        for record in np.asarray(serialized, dtype=object).reshape(-1):
            try:
                message = record_error(bytes(record), checks, locate)
            except ValueError:
                return b"recordkit CorruptRecordError: a record of the batch is not a tf.train.Example"
            if message is not None:
                return message.encode()
        return b"recordkit DecodeError: a record of the batch holds other values than its fields' shapes"

    return describe


def record_error(record: bytes, checks: Sequence[WireCheck], locate: RecordLocator | None) -> str | None:
    """The error of the first of ``checks`` that the serialized ``record`` fails, naming
    the file, offset and number ``locate`` finds it at, and the field (None: it passes
    them all); ValueError when ``record`` is not a ``tf.train.Example``."""
    example = decode_example(record, [check.key for check in checks])
    for check in checks:
        reason = check.reason(example)
        if reason is None:
            continue
        found = locate(record, check.key) if locate is not None else None
        if found is None:
            error = DecodeError(
                f"{reason} (in a record not found in the dataset's shards)", field=check.field
            )
        else:
            file, offset, number = found
            error = DecodeError(reason, shard=file, offset=offset, record=number, field=check.field)
        return f"recordkit DecodeError: {error}"
    return None
