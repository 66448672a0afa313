"""The conformance checks of the decodes a codec adds to its ``decode_tf``: each runs
only when the codec has the hook, on the records of the plain field the kit wrote, and
each must give what the plain batched decode gives, as the readers would use it.

* ``raster``: a :class:`~recordkit.Raster` says ``"pixels"`` or ``"indices"``, and its
  ``size_features`` are INT64 features of shape ``()`` of its wire spec.
* padded decode (:class:`~recordkit.PadsAsDecoded`): for the whole batch and for batches
  of one, ``decode_tf_padded`` equals the full decode padded with the codec's
  ``pad_value()`` (what ``load_dataset(pad=...)`` gives otherwise), and its shapes are
  each record's own.
* window decode (a :class:`~recordkit.Raster` with ``size_features``):
  ``decode_tf_window`` equals the full decode cut to the window, for the whole picture,
  its top-left quarter, a window inside it and its last pixel.
* per-record decode (a :class:`~recordkit.Raster`, or ``decodes_per_record()``): the
  decode of a batch of one record (static size 1, the readers' per-record step) equals
  that record's row of the batched decode, and so does a :class:`~recordkit.Raster`'s
  ``decode_tf_record`` of the record's own wire values, in value and dtype.
* column decode (:class:`~recordkit.DecodedInColumns`): ``decode_numpy_column`` of
  every record's wire values as columns equals each record's ``decode_numpy``, in value,
  type, dtype and shape, each array writable and of its own memory.
* raw array (:class:`~recordkit.DecodedAsRawArray`): the wire spec is the one bytes
  feature of shape ``()`` that :meth:`~recordkit.DecodedAsRawArray.raw_array` names, and
  each record's bytes read by :meth:`~recordkit.RawArray.decode` equal, in value, dtype
  and shape, its row of the batched decode and its ``decode_numpy``.
* generated parser (any codec whose ``decode_tf_source()`` is not None, the default
  included, and whose source file can be read: not code typed into a shell): the
  module ``recordkit codegen`` writes parses the records as the runtime parser does.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from recordkit.codec._capabilities import PadsAsDecoded, Raster, column_decode, decodes_per_record, raw_array
from recordkit.codec._codec import Codec
from recordkit.codec._wire import WireKind
from recordkit.format._batch_parse import Column, ParsedExample
from recordkit.format._example import decode_example
from recordkit.format._tfrecord import iter_tfrecords
from recordkit.read._dense import SHAPE_SUFFIX, pad_into
from recordkit.read._numpy_decode import decode_record_numpy, feature_array
from recordkit.read._parse import field_plan, make_parser, spec_from_plans, wire_values
from recordkit.schema._schema import BoundSchema
from recordkit.storage import location
from recordkit.testing._capability_checks import CapabilityError
from recordkit.tools._codegen import generate_parser_code

__all__ = ["check_decode_hooks"]

#: ``assert_values_equal`` (passed in: it lives in the module that calls these checks).
Equal = Callable[..., None]


def _batches(bound: BoundSchema, path: Path, size: int) -> Iterator[dict[str, Any]]:
    """The field's wire values of ``path``'s records, parsed in batches of ``size``."""
    import tensorflow as tf

    plan = field_plan(bound.fields[0])
    spec = spec_from_plans([plan])
    for serialized in tf.data.TFRecordDataset(str(path)).batch(size):
        yield wire_values(plan, tf.io.parse_example(serialized, spec))


def _row(value: Any, i: int) -> Any:
    """Record ``i`` of a batched decode (a tensor, ragged tensor or dict of them), dense."""
    import tensorflow as tf

    def one(item: Any) -> Any:
        row = item[i]
        return row.to_tensor() if isinstance(row, tf.RaggedTensor) else row

    return tf.nest.map_structure(one, value, expand_composites=False)


def _compare(equal: Equal, check: str, case: str, want: Any, got: Any) -> None:
    try:
        equal(want, got)
    except AssertionError as exc:
        raise CapabilityError(check, case, str(exc)) from None


def _check_raster(codec: Raster, name: str) -> None:
    if codec.raster not in ("pixels", "indices"):
        raise CapabilityError("raster", name, f"raster is {codec.raster!r}, not 'pixels' or 'indices'")
    if codec.size_features is None:
        return
    spec = codec.wire_spec() if isinstance(codec, Codec) else None
    for feature in codec.size_features:
        found = [f for f in spec or () if f.name == feature]
        if not found or found[0].kind is not WireKind.INT64 or found[0].shape != ():
            problem = f"size feature {feature!r} is not an INT64 feature of shape () of the wire spec"
            raise CapabilityError("raster", name, problem)


def _check_padded(codec: Codec[Any], bound: BoundSchema, path: Path, count: int, equal: Equal) -> bool:
    assert isinstance(codec, PadsAsDecoded)
    checked = False
    for size in sorted({count, 1}):
        for b, wire in enumerate(_batches(bound, path, size)):
            case = f"batch {b} of {size}"
            got = codec.decode_tf_padded(wire)
            if got is None:
                continue
            padded, shapes = got
            full = codec.decode_tf(wire)
            value = dict(full) if isinstance(full, Mapping) else full
            want: dict[str, Any] = {"v": value}
            pad_into(want, "v", value, codec.pad_value())
            if isinstance(value, dict):
                _compare(equal, "padded decode", case, value, padded)
                want_shapes = {key: _shapes(want, f"v/{key}", value[key]) for key in value}
                _compare(equal, "padded decode shapes", case, want_shapes, shapes)
            else:
                _compare(equal, "padded decode", case, want["v"], padded)
                _compare(equal, "padded decode shapes", case, _shapes(want, "v", value), shapes)
            checked = True
    return checked


def _shapes(padded: dict[str, Any], path: str, value: Any) -> Any:
    """Each record's shape: what padding ``value`` added under ``path`` (a ragged value), or
    for a dense batch its one shape, int64 ``[B, rank - 1]``, repeated."""
    import tensorflow as tf

    if path + SHAPE_SUFFIX in padded:
        return padded[path + SHAPE_SUFFIX]
    shape = tf.shape(value, out_type=tf.int64)
    return tf.tile(shape[None, 1:], tf.stack([shape[0], 1]))


def _windows(height: int, width: int) -> list[tuple[int, int, int, int]]:
    """Windows inside a picture: all of it, its top-left quarter, one inside, its last pixel."""
    if not height or not width:
        return []
    inner = (height // 3, width // 3, max(height - 2 * (height // 3), 1), max(width - 2 * (width // 3), 1))
    found = [
        (0, 0, height, width),
        (0, 0, math.ceil(height / 2), math.ceil(width / 2)),
        inner,
        (height - 1, width - 1, 1, 1),
    ]
    return list(dict.fromkeys(found))


def _check_window(codec: Raster, bound: BoundSchema, path: Path, equal: Equal) -> bool:
    import tensorflow as tf

    assert isinstance(codec, Codec)
    assert codec.size_features is not None
    height_key, width_key = codec.size_features
    checked = False
    for i, wire in enumerate(_batches(bound, path, 1)):
        if height_key not in wire or width_key not in wire:
            return False
        full = _row(codec.decode_tf(wire), 0)
        height, width = int(tf.reshape(wire[height_key], [-1])[0]), int(tf.reshape(wire[width_key], [-1])[0])
        for top, left, rows, columns in _windows(height, width):
            window = tf.constant([top, left, rows, columns], tf.int64)
            got = codec.decode_tf_window(wire, window)
            if got is None:
                return checked
            want = full[top : top + rows, left : left + columns]
            _compare(equal, "window decode", f"case {i}, window {[top, left, rows, columns]}", want, got)
            checked = True
    return checked


def _check_per_record(codec: Codec[Any], bound: BoundSchema, path: Path, count: int, equal: Equal) -> None:
    import tensorflow as tf

    (batch,) = list(_batches(bound, path, count))
    batched = codec.decode_tf(batch)
    for i, wire in enumerate(_batches(bound, path, 1)):
        want = _row(batched, i)
        _compare(equal, "per-record decode", f"case {i}", want, _row(codec.decode_tf(wire), 0))
        own = (
            codec.decode_tf_record({key: tf.squeeze(value, [0]) for key, value in wire.items()})
            if isinstance(codec, Raster)
            else None
        )
        if own is None:
            continue
        if own.dtype != want.dtype:
            raise CapabilityError(
                "record decode", f"case {i}", f"dtype {own.dtype.name}, not {want.dtype.name}"
            )
        _compare(equal, "record decode", f"case {i}", want, own)


def _check_columns(codec: Codec[Any], bound: BoundSchema, path: Path, equal: Equal) -> bool:
    """Whether the column decode ran (it may decline these options) and equalled the
    record-by-record decode; CapabilityError otherwise."""
    decode = column_decode(codec)
    assert decode is not None
    field = bound.fields[0]
    records = [data for _, data in iter_tfrecords(location(str(path)))]
    columns = _columns([decode_example(data) for data in records])
    wire: dict[str, Any] = {}
    for keyed in field.features:
        column = feature_array(keyed, columns, len(records))
        if column is None:
            return False
        wire[keyed.feature.name] = column
    try:
        values = decode(wire, len(records))
    except Exception as exc:
        raise CapabilityError("column decode", "every record", f"{type(exc).__name__}: {exc}") from exc
    if values is None:
        return False
    if len(values) != len(records):
        raise CapabilityError(
            "column decode", "every record", f"{len(values)} values for {len(records)} records"
        )
    for i, (data, got) in enumerate(zip(records, values, strict=True)):
        want = decode_record_numpy([field], data)[field.name]
        _compare(equal, "column decode", f"case {i}", want, got)
        detail = _unlike(want, got) or (_shared(got, values[i - 1]) if i else None)
        if detail:
            raise CapabilityError("column decode", f"case {i}", detail)
    return True


def _check_raw_array(codec: Codec[Any], bound: BoundSchema, path: Path, count: int, equal: Equal) -> None:
    """The raw array a codec declares is its wire spec's one feature, and each record's
    bytes read as that array are its batched decode's row and its ``decode_numpy``."""
    raw = raw_array(codec)
    assert raw is not None
    features = list(codec.wire_spec())
    if [(f.name, f.kind, f.shape) for f in features] != [(raw.feature, WireKind.BYTES, ())]:
        found = [(f.name, f.kind.value, f.shape) for f in features]
        raise CapabilityError(
            "raw array", codec.name, f"wire spec {found}, not the one bytes feature {raw.feature!r}"
        )
    field = bound.fields[0]
    (batch,) = list(_batches(bound, path, count))
    batched = codec.decode_tf(batch)
    records = [data for _, data in iter_tfrecords(location(str(path)))]
    for i, value in enumerate(batch[raw.feature].numpy().tolist()):
        try:
            got = raw.decode(np.frombuffer(value, np.uint8).reshape(1, -1))[0]
        except ValueError as exc:  # bytes that are no array of the declared dtype and shape
            raise CapabilityError("raw array", f"case {i}", f"{type(exc).__name__}: {exc}") from exc
        for what, want in (
            ("batched decode", np.asarray(_row(batched, i))),
            ("decode_numpy", decode_record_numpy([field], records[i])[field.name]),
        ):
            detail = (
                f"{got.dtype} {got.shape}, not {want.dtype} {want.shape}"
                if not isinstance(want, np.ndarray) or (got.dtype, got.shape) != (want.dtype, want.shape)
                else None
            )
            if detail:
                raise CapabilityError("raw array", f"case {i}", f"{detail} ({what})")
            _compare(equal, "raw array", f"case {i}", want, got)


def _columns(parsed: list[ParsedExample]) -> dict[str, Column]:
    """The keys that every record holds in one kind and one number of values, as the
    numpy reader's columns of records of one layout
    (:attr:`~recordkit.format._batch_parse.ParsedChunk.columns`): numbers as a
    ``[records, values]`` array, bytes as one list of every record's value per value.
    :func:`~recordkit.read._numpy_decode.feature_array` then takes a feature's column
    from them by the reader's own rules."""
    columns: dict[str, Column] = {}
    shared = set.intersection(*(set(example) for example in parsed)) if parsed else set()
    for key in sorted(shared):
        kinds = {example[key][0] for example in parsed}
        values = [example[key][1] for example in parsed]
        if len(kinds) != 1 or len({len(value) for value in values}) != 1:
            continue
        (kind,) = kinds
        columns[key] = (
            kind,
            [list(row) for row in zip(*values, strict=True)] if kind is WireKind.BYTES else np.stack(values),
        )
    return columns


def _unlike(want: Any, got: Any) -> str | None:
    """How ``got`` differs from ``want`` in type, dtype, shape or writability, or None."""
    if type(got) is not type(want):
        return f"a {type(got).__name__}, the record's decode gives a {type(want).__name__}"
    if isinstance(want, np.ndarray):
        if (got.dtype, got.shape) != (want.dtype, want.shape):
            return f"{got.dtype} {got.shape}, the record's decode gives {want.dtype} {want.shape}"
        if not got.flags.writeable:
            return "a read-only array"
    return None


def _shared(got: Any, before: Any) -> str | None:
    """Whether ``got`` is a view of the same block of memory as ``before``, the record
    before's value (then keeping one record's value keeps every record's alive)."""
    if isinstance(got, np.ndarray) and isinstance(before, np.ndarray) and _memory(got) is _memory(before):
        return "an array that shares memory with the record before's"
    return None


def _memory(array: np.ndarray) -> object:
    """The object that holds ``array``'s memory: the array that owns it, or what that
    array was made from (a ``bytes``, a buffer)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array if array.base is None else array.base


def _check_generated(bound: BoundSchema, path: Path, tmp_path: Path, count: int, equal: Equal) -> None:
    import tensorflow as tf

    module_path = tmp_path / "conformance_generated_parser.py"
    try:
        module_path.write_text(generate_parser_code(bound), encoding="utf-8")
    except Exception as exc:
        raise CapabilityError("generated parser", "codegen", f"{type(exc).__name__}: {exc}") from exc
    spec = importlib.util.spec_from_file_location("conformance_generated_parser", module_path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    runtime = make_parser(bound)
    for b, serialized in enumerate(tf.data.TFRecordDataset(str(path)).batch(count)):
        _compare(equal, "generated parser", f"batch {b}", runtime(serialized), module.parse(serialized))


def _has_source(*functions: Callable[..., Any]) -> bool:
    """Whether the source of each function can be read (not for code defined in a
    Python shell or by ``exec``, which no parser module can be generated from)."""
    try:
        for function in functions:
            inspect.getsource(function)
    except (OSError, TypeError):
        return False
    return True


def check_decode_hooks(
    codec: Codec[Any],
    bound: BoundSchema,
    path: Path,
    count: int,
    tmp_path: Path,
    equal: Equal,
    passed: Callable[[str], None],
) -> None:
    """Check each decode hook ``codec`` (the codec of ``bound``'s one, plain field) has,
    on the ``count`` records of ``path``; call ``passed`` with each check's name. Raise
    :class:`~recordkit.testing._capability_checks.CapabilityError` on the first mismatch."""
    if isinstance(codec, Raster):
        _check_raster(codec, codec.name)
        passed("raster declaration")
    if isinstance(codec, PadsAsDecoded) and _check_padded(codec, bound, path, count, equal):
        passed("padded decode equals the full decode, padded")
    if isinstance(codec, Raster) and codec.size_features and _check_window(codec, bound, path, equal):
        passed("window decode equals the full decode, cut")
    if isinstance(codec, Raster) or decodes_per_record(codec):
        _check_per_record(codec, bound, path, count, equal)
        passed("per-record decode equals the batched decode")
    if column_decode(codec) is not None and _check_columns(codec, bound, path, equal):
        passed("column decode equals the record-by-record decode")
    if raw_array(codec) is not None:
        _check_raw_array(codec, bound, path, count, equal)
        passed("raw array equals the batched and the numpy decode")
    source = codec.decode_tf_source()
    if source is not None and _has_source(source.function, *source.helpers):
        _check_generated(bound, path, tmp_path, count, equal)
        passed("the generated standalone parser equals the runtime parser")
