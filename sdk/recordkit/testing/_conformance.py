"""The codec conformance check: one call that runs a codec through everything recordkit
does with it, so codec authors (built-in and third-party) prove the contract the same way.

For a codec and a few example values, :func:`check_codec`:

1. checks the codec's declaration: name, version, options model, a deterministic wire
   spec, that options survive a round trip through their JSON form, and that
   ``for_stored_version`` of its own version gives an equal codec;
2. checks that options survive a round trip through a schema file (YAML), giving an
   equal schema, an equal codec and an equal schema fingerprint;
3. encodes each value as a record's field, checking encode's keys against the wire spec
   (the encoder then checks each value's kind and size against its wire feature);
4. writes the records to a real TFRecord file;
5. reads it back with ``tf.data``, batched, through the parser generated from the schema
   (``tf.io.parse_example`` then the codec's ``decode_tf``), and compares each row with
   the expected value (or a declared tolerance); a wire spec that says ``in_graph`` must
   give a parser without Python callbacks;
6. reads it back without TensorFlow through the codec's ``decode_numpy`` and compares;
7. repeats 3-6 with the field declared optional (absent records between present ones),
   as a sequence (several values per record, and none) and, when a ``default`` is given,
   with that default declared (absent records read back as it, through a schema file);
8. checks that each declared bad input is refused by ``encode`` with a recordkit error
   (not a crash), whose message, once the writer adds its context, names the field and
   the record and matches the declared reason;
9. checks each decode hook the codec has against its plain batched decode (padded decode
   equals the full decode padded, window decode equals it cut, per-record decode equals
   it, the generated standalone parser equals the runtime parser: see
   :mod:`recordkit.testing._decode_checks`);
10. checks each optional capability the codec has (``draw`` writes inside the picture's
   bounds, ``summarize`` is stable and JSON-serializable ...: see
   :mod:`recordkit.testing._capability_checks`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recordkit.codec._codec import Codec, CodecOptions
from recordkit.codec._plugins import load_plugins
from recordkit.codec._registry import CodecRegistry
from recordkit.codec._wire import WireSpec
from recordkit.errors import RecordkitError
from recordkit.format._tfrecord import Compression, frame_record, iter_tfrecords
from recordkit.hookspecs import hookimpl
from recordkit.read._numpy_decode import decode_record_numpy
from recordkit.read._parse import PRESENT_SUFFIX, make_parser
from recordkit.read._traced import traced_as_written
from recordkit.schema._encoder import RecordEncoder
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import BoundSchema, Schema
from recordkit.storage import location
from recordkit.testing._capability_checks import CapabilityError, check_capabilities
from recordkit.testing._decode_checks import check_decode_hooks
from recordkit.write._shard_file import ShardFile

__all__ = [
    "BadInput",
    "CodecCase",
    "ConformanceError",
    "ConformanceReport",
    "assert_values_equal",
    "check_codec",
]

FIELD = "value"


class _Same:
    def __repr__(self) -> str:
        return "<same as value>"


SAME: Any = _Same()


@dataclasses.dataclass(frozen=True)
class CodecCase:
    """One value to round-trip, and what decoding it must give back.

    ``expected`` defaults to the value itself; give it when decoding returns another
    form (a path decodes to pixels, a name to a class id ...). ``expected_numpy`` is what
    ``decode_numpy`` must give, when it differs from what ``decode_tf`` gives (defaults to
    ``expected``). ``atol`` is the absolute tolerance for every number, floats and integers
    alike (a lossy JPEG's uint8 pixels within ``atol=3``); 0 is exact. Booleans and strings
    always compare exactly.
    """

    value: Any
    expected: Any = SAME
    atol: float = 0.0
    id: str = ""
    expected_numpy: Any = SAME

    @property
    def want(self) -> Any:
        return self.value if self.expected is SAME else self.expected

    @property
    def want_numpy(self) -> Any:
        return self.want if self.expected_numpy is SAME else self.expected_numpy


@dataclasses.dataclass(frozen=True)
class BadInput:
    """A value the codec must refuse, with a regex the error's reason must match."""

    value: Any
    match: str
    id: str = ""


@dataclasses.dataclass
class ConformanceReport:
    """What :func:`check_codec` verified, check by check."""

    codec: str
    checks: list[str] = dataclasses.field(default_factory=list)

    def passed(self, check: str) -> None:
        """Record that ``check`` passed."""
        self.checks.append(check)


class ConformanceError(AssertionError):
    """A codec does not conform; the message names the check and the case."""


def _fail(check: str, case: str, detail: str) -> ConformanceError:
    return ConformanceError(f"[{check}] {case}: {detail}")


class _SingleCodecPlugin:
    """An in-process plugin registering one codec class (the codec need not be installed)."""

    def __init__(self, codec: type[Codec[Any]]) -> None:
        self._codec = codec

    @hookimpl
    def recordkit_register_codecs(self, registry: CodecRegistry) -> None:
        registry.register(self._codec)


# -- comparison ---------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Bring TF, numpy and Python values to one comparable form."""
    try:
        import tensorflow as tf
    except ImportError:  # pragma: no cover - tensorflow is a dependency
        tf = None
    if tf is not None:
        if isinstance(value, tf.RaggedTensor):
            return _plain(_ragged_rows(value))
        if isinstance(value, tf.Tensor):
            return _plain(value.numpy())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return [_plain(v) for v in value.tolist()]
        return value
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _ragged_rows(value: Any) -> list[Any]:
    """The rows of a ``tf.RaggedTensor`` as numpy arrays (lists of them for ragged inner
    dimensions). Unlike ``to_list()``, an empty row keeps its inner dimensions: a row of
    no ``(x, y)`` points is an array of shape ``(0, 2)``, not ``[]``."""
    import tensorflow as tf

    inner = value.values
    flat: Any = _ragged_rows(inner) if isinstance(inner, tf.RaggedTensor) else inner.numpy()
    splits = value.row_splits.numpy().tolist()
    return [flat[start:end] for start, end in itertools.pairwise(splits)]


#: How many differing elements a mismatch message lists.
_SHOWN_DIFFERENCES = 5


def _array_mismatch(where: str, expected: np.ndarray, actual: np.ndarray, atol: float) -> str:
    """Where two arrays of one shape differ and by how much, without printing them whole:
    the count of differing elements, the largest difference and the first few places."""
    numeric = expected.dtype.kind in "iufc" and actual.dtype.kind in "iufc"
    difference: np.ndarray | None = None
    if numeric:
        wide = np.complex128 if "c" in expected.dtype.kind + actual.dtype.kind else np.float64
        exp_wide, act_wide = expected.astype(wide), actual.astype(wide)
        difference = np.abs(act_wide - exp_wide)
        differs = ~((difference <= atol) | (np.isnan(exp_wide) & np.isnan(act_wide)))
    else:
        differs = np.asarray(expected != actual).reshape(expected.shape)
    places = np.argwhere(differs)
    summary = f"{where}: {len(places)} of {expected.size} elements differ"
    if difference is not None:
        scored = np.where(differs, np.nan_to_num(difference, nan=np.inf), -1.0)
        worst = np.unravel_index(int(np.argmax(scored)), expected.shape)
        summary += f" (largest difference {difference[worst]:g} at {[int(i) for i in worst]}, atol={atol:g})"
    shown = "; ".join(
        f"{[int(i) for i in place]} expected {expected[tuple(place)].item()!r}, "
        f"got {actual[tuple(place)].item()!r}"
        for place in places[:_SHOWN_DIFFERENCES]
    )
    more = f"; and {len(places) - _SHOWN_DIFFERENCES} more" if len(places) > _SHOWN_DIFFERENCES else ""
    return f"{summary}: {shown}{more}"


def assert_values_equal(expected: Any, actual: Any, *, atol: float = 0.0, path: str = "") -> None:
    """Assert ``actual`` (TF, numpy or Python) equals ``expected`` within ``atol``.

    Strings and UTF-8 bytes compare equal; arrays and nested lists compare by value and
    shape; dicts key by key. ``atol`` applies to every number, floats and integers alike;
    booleans and strings compare exactly. Raises AssertionError naming the first differing
    path, and for arrays the count, size and places of the differences (not the arrays).
    """
    exp, act = _plain(expected), _plain(actual)
    where = path or "value"
    if isinstance(exp, dict) or isinstance(act, dict):
        if not (isinstance(exp, dict) and isinstance(act, dict)) or set(exp) != set(act):
            raise AssertionError(f"{where}: expected {exp!r}, got {act!r}")
        for key in exp:
            assert_values_equal(exp[key], act[key], atol=atol, path=f"{where}.{key}")
        return
    if isinstance(exp, (str, bytes, bool)) or exp is None or isinstance(act, (str, bytes)) or act is None:
        if exp != act:
            raise AssertionError(f"{where}: expected {exp!r}, got {act!r}")
        return
    try:
        exp_arr, act_arr = np.asarray(exp), np.asarray(act)
    except ValueError:  # ragged nested lists: compare element by element
        exp_arr = act_arr = np.asarray(None)
    if exp_arr.dtype != object and act_arr.dtype != object:
        if isinstance(exp, list) and not exp and act_arr.size == 0:
            return  # an empty list carries no inner shape: any empty array matches it
        if exp_arr.shape != act_arr.shape:
            raise AssertionError(f"{where}: expected shape {exp_arr.shape}, got {act_arr.shape}")
        numeric = exp_arr.dtype.kind in "iufc" and act_arr.dtype.kind in "iufc"
        if numeric and (atol or "f" in exp_arr.dtype.kind + act_arr.dtype.kind):
            ok = np.allclose(act_arr, exp_arr, rtol=0.0, atol=atol, equal_nan=True)
        else:
            ok = bool(np.array_equal(act_arr, exp_arr))
        if not ok:
            if exp_arr.ndim == 0:
                got = f"expected {exp_arr.item()!r}, got {act_arr.item()!r} (atol={atol:g})"
                raise AssertionError(f"{where}: {got}")
            raise AssertionError(_array_mismatch(where, exp_arr, act_arr, atol))
        return
    if isinstance(exp, list) and isinstance(act, list):
        if len(exp) != len(act):
            raise AssertionError(f"{where}: expected {len(exp)} elements, got {len(act)}")
        for i, (e, a) in enumerate(zip(exp, act, strict=True)):
            assert_values_equal(e, a, atol=atol, path=f"{where}[{i}]")
        return
    numbers = (int, float)
    if isinstance(exp, numbers) and isinstance(act, numbers) and not isinstance(exp, bool | type(None)):
        if isinstance(act, bool):
            pass  # a bool never equals a number here: fall through to the exact comparison
        elif math.isclose(exp, act, abs_tol=atol) or (math.isnan(exp) and math.isnan(act)):
            return
        else:
            raise AssertionError(f"{where}: expected {exp!r}, got {act!r} (atol={atol:g})")
    if exp != act:
        raise AssertionError(f"{where}: expected {exp!r}, got {act!r}")


# -- the check ------------------------------------------------------------------------------


def _check_declaration(codec: Codec[Any], report: ConformanceReport) -> None:
    cls = type(codec)
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_\-.]*", name):
        raise _fail("declaration", cls.__qualname__, f"name must be a lowercase identifier, got {name!r}")
    if not isinstance(cls.version, str) or not cls.version:
        raise _fail("declaration", name, "version must be a non-empty string")
    if not (isinstance(cls.options_model, type) and issubclass(cls.options_model, CodecOptions)):
        raise _fail("declaration", name, "options_model must subclass recordkit.CodecOptions")
    spec = codec.wire_spec()
    if not isinstance(spec, WireSpec):
        raise _fail("wire spec", name, f"wire_spec() must return a WireSpec, got {type(spec).__name__}")
    if codec.wire_spec() != spec:
        raise _fail("wire spec", name, "wire_spec() is not deterministic")
    report.passed("declaration and wire spec")
    again = cls.parse_options(codec.options_dict())
    if again != codec.options:
        raise _fail(
            "options", name, f"options do not survive their JSON form: {codec.options!r} -> {again!r}"
        )
    report.passed("options round trip")
    _check_own_version(codec, report)


def _check_own_version(codec: Codec[Any], report: ConformanceReport) -> None:
    """Records the codec's own version stored are read by the codec itself: readers bind
    every field of a dataset through :meth:`~recordkit.Codec.for_stored_version`."""
    call = f"for_stored_version({codec.version!r})"
    try:
        reader = codec.for_stored_version(codec.version)
    except RecordkitError as exc:
        raise _fail("stored version", codec.name, f"{call} raised: {exc}") from exc
    if reader != codec:
        detail = f"{call}, the codec's own version, must return an equal codec, got {reader!r}"
        raise _fail("stored version", codec.name, detail)
    report.passed("own stored version read by the codec itself")


def _check_schema_file(
    schema: Schema, registry: CodecRegistry, tmp_path: Path, report: ConformanceReport
) -> None:
    path = tmp_path / "conformance-schema.yaml"
    schema.dump(path)
    loaded = Schema.load(path, registry=registry)
    if loaded != schema:
        raise _fail("schema file", FIELD, f"schema changed through its file: {schema!r} -> {loaded!r}")
    bound, original = loaded.bind(registry), schema.bind(registry)
    before, after = original.fields[0].codec, bound.fields[0].codec
    if after != before:
        raise _fail("schema file", FIELD, f"the codec changed through its file: {before!r} -> {after!r}")
    if bound.fingerprint() != original.fingerprint():
        raise _fail("schema file", FIELD, "the fingerprint changed through the schema file")
    report.passed("options round trip through a schema file")


def _write(bound: BoundSchema, records: list[dict[str, Any]], path: Path, check: str) -> list[bytes]:
    encoder = RecordEncoder(bound)
    wire_names = set(bound.fields[0].codec.wire_spec().names)
    serialized = []
    shard = ShardFile(location(path), Compression.NONE, durable=False)
    try:
        for i, record in enumerate(records):
            value = record.get(FIELD)
            try:
                if value is not None and not bound.fields[0].spec.sequence:
                    extra = set(bound.fields[0].codec.encode(value)) - wire_names
                    if extra:
                        problem = f"encode() returned keys not in the wire spec: {sorted(extra)}"
                        raise _fail(check, f"case {i}", problem)
                data = encoder.encode(record, i)
            except RecordkitError as exc:
                raise _fail(check, f"case {i}", f"encoding failed: {exc}") from exc
            shard.add(frame_record(data))
            serialized.append(data)
    except BaseException:
        shard.discard()
        raise
    shard.commit()
    return serialized


def _read_tf(bound: BoundSchema, path: Path, batch: int) -> list[dict[str, Any]]:
    import tensorflow as tf

    # Traced as recordkit's readers trace it: without AutoGraph (no Python branch on a tensor).
    dataset = tf.data.TFRecordDataset(str(path)).batch(batch).map(traced_as_written(make_parser(bound)))
    sequence = bound.fields[0].spec.sequence
    rows: list[dict[str, Any]] = []
    for out in dataset:
        size = int(tf.shape(next(iter(tf.nest.flatten(out))))[0])
        for i in range(size):
            row = {key: tf.nest.map_structure(lambda t, i=i: t[i], value) for key, value in out.items()}
            if sequence and isinstance(row[FIELD], Mapping):
                row[FIELD] = _elements(row[FIELD])
            rows.append(row)
    return rows


#: TensorFlow ops that call back into Python (tf.numpy_function, tf.py_function).
_PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


def _python_ops(bound: BoundSchema) -> set[str]:
    """The Python-callback ops in the graph of the parser generated for ``bound``,
    nested functions (loops, conditions, map_fn) included."""
    import tensorflow as tf

    parser = tf.function(make_parser(bound))
    graph = parser.get_concrete_function(tf.TensorSpec([None], tf.string)).graph.as_graph_def()
    nodes = list(graph.node) + [node for function in graph.library.function for node in function.node_def]
    return {node.op for node in nodes} & _PYTHON_OPS


def _check_in_graph(bound: BoundSchema, report: ConformanceReport) -> None:
    if not bound.fields[0].codec.wire_spec().in_graph:
        return
    found = _python_ops(bound)
    if found:
        raise _fail(
            "wire spec",
            FIELD,
            "the wire spec says in_graph=True but decode_tf calls back into Python "
            f"({', '.join(sorted(found))}); declare WireSpec(..., in_graph=False)",
        )
    report.passed("decode_tf is pure graph ops, as the wire spec says")


def _elements(columns: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A sequence field's dict of per-key columns as a list of per-element dicts (the
    form ``decode_numpy`` gives), so both readers compare with the same expectation."""
    first = next(iter(columns.values()))
    count = int(first.nrows()) if hasattr(first, "nrows") else len(first)
    return [{key: column[j] for key, column in columns.items()} for j in range(count)]


def _read_numpy(bound: BoundSchema, path: Path) -> list[dict[str, Any]]:
    return [
        decode_record_numpy(bound.fields, data, index=i)
        for i, (_, data) in enumerate(iter_tfrecords(location(path)))
    ]


def _round_trip(
    check: str,
    schema: Schema,
    registry: CodecRegistry,
    records: list[dict[str, Any]],
    expected: tuple[list[Any], list[Any]],
    atols: list[float],
    tmp_path: Path,
    report: ConformanceReport,
) -> None:
    """Write ``records``, read them back three ways and compare with ``expected``: what
    the TensorFlow readers must give, and what the numpy reader must give."""
    bound = schema.bind(registry)
    path = tmp_path / f"conformance-{check.replace(' ', '-')}.tfrecord"
    _write(bound, records, path, check)
    optional = bound.fields[0].spec.optional
    want_tf, want_numpy = expected
    for reader, rows, wanted in (
        ("tf.data batched decode", _read_tf(bound, path, batch=max(len(records), 1)), want_tf),
        ("tf.data batch of 1", _read_tf(bound, path, batch=1), want_tf),
        ("numpy decode", _read_numpy(bound, path), want_numpy),
    ):
        if len(rows) != len(records):
            raise _fail(check, reader, f"read {len(rows)} records, wrote {len(records)}")
        for i, (row, want, atol) in enumerate(zip(rows, wanted, atols, strict=True)):
            got = row[FIELD]
            if optional and reader != "numpy decode":
                present = bool(_plain(row[FIELD + PRESENT_SUFFIX]))
                if present != (want is not None):
                    raise _fail(check, f"{reader}, case {i}", f"presence flag is {present}")
                if want is None:
                    continue
            try:
                assert_values_equal(want, got, atol=atol)
            except AssertionError as exc:
                raise _fail(check, f"{reader}, case {i}", str(exc)) from None
        report.passed(f"{check}: {reader}")


def _check_bad_inputs(bound: BoundSchema, bad_inputs: Sequence[BadInput], report: ConformanceReport) -> None:
    encoder = RecordEncoder(bound)
    codec = bound.fields[0].codec
    for i, bad in enumerate(bad_inputs):
        label = bad.id or f"bad input {i}"
        try:
            codec.encode(bad.value)
        except RecordkitError:
            pass
        except Exception as exc:
            raise _fail(
                "bad input",
                label,
                f"encode() crashed with {type(exc).__name__}: {exc}; refuse bad values with "
                "recordkit.errors.InvalidValueError and a reason",
            ) from exc
        try:
            encoder.encode({FIELD: bad.value}, i)
        except RecordkitError as exc:
            message = str(exc)
            if f"field {FIELD!r}" not in message or f"record {i}" not in message:
                raise _fail(
                    "bad input", label, f"the error does not name the field and record: {message}"
                ) from None
            if not re.search(bad.match, message):
                raise _fail(
                    "bad input", label, f"the error {message!r} does not match {bad.match!r}"
                ) from None
        except Exception as exc:
            raise _fail(
                "bad input", label, f"raised {type(exc).__name__} instead of a recordkit error: {exc}"
            ) from exc
        else:
            raise _fail("bad input", label, f"{bad.value!r} was accepted")
    if bad_inputs:
        report.passed(f"{len(bad_inputs)} bad inputs refused with the field named")


def check_codec(
    codec: Codec[Any] | type[Codec[Any]],
    cases: Sequence[CodecCase | Any],
    *,
    tmp_path: str | Path,
    bad_inputs: Sequence[BadInput] = (),
    options: Mapping[str, Any] | None = None,
    optional: bool = True,
    sequence: bool = True,
    default: CodecCase | Any = None,
) -> ConformanceReport:
    """Run ``codec`` through the whole conformance check; raise ConformanceError on the
    first failure, return a report of the checks passed.

    :param codec: a codec instance, or a class instantiated with ``options``.
    :param cases: values (or :class:`CodecCase` with expected values and tolerances);
        give at least two, ideally of different sizes.
    :param tmp_path: a folder for the TFRecord and schema files (pytest's ``tmp_path``).
    :param bad_inputs: values the codec must refuse, with the reason to expect.
    :param optional: also check the field declared optional.
    :param sequence: also check the field declared as a sequence of values.
    :param default: a value (or :class:`CodecCase`) to declare as the field's default
        (JSON-ready, as a schema file holds it): records without the field must read
        back as it, and it must survive the schema file. None: not checked.
    """
    instance = codec(options) if isinstance(codec, type) else codec
    tmp = Path(tmp_path)
    tmp.mkdir(parents=True, exist_ok=True)
    normalized = [c if isinstance(c, CodecCase) else CodecCase(c) for c in cases]
    if not normalized:
        raise ValueError("check_codec needs at least one case")
    report = ConformanceReport(instance.name)
    registry = load_plugins(
        entry_points=False, extra_plugins=[("conformance", _SingleCodecPlugin(type(instance)))]
    ).registry
    _check_declaration(instance, report)

    def schema(**flags: Any) -> Schema:
        spec = FieldSpec(codec=instance.name, options=instance.options_dict(), **flags)
        return Schema(name=f"conformance-{instance.name}", fields={FIELD: spec})

    plain = schema()
    _check_schema_file(plain, registry, tmp, report)
    atols = [c.atol for c in normalized]
    _round_trip(
        "plain field",
        plain,
        registry,
        [{FIELD: c.value} for c in normalized],
        ([c.want for c in normalized], [c.want_numpy for c in normalized]),
        atols,
        tmp,
        report,
    )
    _check_in_graph(plain.bind(registry), report)
    try:
        shard = tmp / "conformance-plain-field.tfrecord"
        check_decode_hooks(
            instance, plain.bind(registry), shard, len(normalized), tmp, assert_values_equal, report.passed
        )
    except CapabilityError as exc:
        raise _fail(exc.check, exc.case, exc.detail) from exc
    if optional:
        records: list[dict[str, Any]] = []
        expected: tuple[list[Any], list[Any]] = ([], [])
        opt_atols: list[float] = []
        for c in normalized:
            records += [{}, {FIELD: c.value}]
            expected[0].extend([None, c.want])
            expected[1].extend([None, c.want_numpy])
            opt_atols += [0.0, c.atol]
        _round_trip(
            "optional field", schema(optional=True), registry, records, expected, opt_atols, tmp, report
        )
    if sequence:
        half = max(len(normalized) // 2, 1)
        groups = [normalized[:half], [], normalized[half:] or normalized[:1]]
        _round_trip(
            "sequence field",
            schema(sequence=True),
            registry,
            [{FIELD: [c.value for c in g]} for g in groups],
            ([[c.want for c in g] for g in groups], [[c.want_numpy for c in g] for g in groups]),
            [max((c.atol for c in g), default=0.0) for g in groups],
            tmp,
            report,
        )
    if default is not None:
        _check_default(default, normalized[0], schema, registry, tmp, report)
    _check_bad_inputs(plain.bind(registry), bad_inputs, report)
    try:
        check_capabilities(instance, plain.bind(registry), [c.value for c in normalized], report.passed)
    except CapabilityError as exc:
        raise _fail(exc.check, exc.case, exc.detail) from exc
    return report


def _check_default(
    default: CodecCase | Any,
    present: CodecCase,
    schema: Callable[..., Schema],
    registry: CodecRegistry,
    tmp_path: Path,
    report: ConformanceReport,
) -> None:
    """Declare ``default`` as the field's default: it must bind, survive a schema file,
    and be what records without the field read back as (between records that have it)."""
    case = default if isinstance(default, CodecCase) else CodecCase(default)
    try:
        declared = schema(default=case.value)
        declared.bind(registry)
    except RecordkitError as exc:
        raise _fail("default", repr(case.value), f"the default is refused: {exc}") from exc
    _check_schema_file(declared, registry, tmp_path, report)
    records = [{}, {FIELD: present.value}, {}]
    expected = ([case.want, present.want, case.want], [case.want_numpy, present.want_numpy, case.want_numpy])
    atols = [case.atol, present.atol, case.atol]
    _round_trip("default field", declared, registry, records, expected, atols, tmp_path, report)
