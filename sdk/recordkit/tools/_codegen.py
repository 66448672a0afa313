"""Standalone parser code: a Python module that reproduces a schema's parser with
TensorFlow alone, for training jobs that must not depend on recordkit.

The generated module is made of three parts, each copied or written from the source of
truth rather than re-implemented:

* the *plans* of the fields (their Example keys, dtypes and shapes), written out as
  Python literals by :func:`recordkit.read._parse.field_plan`;
* recordkit's own runtime parse functions (:data:`recordkit.read._parse.RUNTIME_FUNCTIONS`:
  the parse spec, optional and sequence handling), their source copied verbatim;
* each codec's decode, from the codec's :meth:`~recordkit.Codec.decode_tf_source`: a
  :class:`DecodeSource` naming module-level functions that use only TensorFlow, and the
  literal constants (the field's options) to call them with. Each codec's functions are
  wrapped in a factory function of their own, so names never clash.

A codec whose decode cannot be written out (no ``decode_tf_source``, or one that calls
back into Python, such as FLAC audio) makes generation fail with an error naming the
field and the codec; so does a decode source that calls a module-level function it does
not list among its helpers (found by looking at the names the copied code uses, so the
mistake shows when the module is generated, not when a training job first runs it).

Given a dataset whose splits have field groups (:func:`recordkit.add_fields`), the module
also parses the groups' fields, and its ``dataset`` joins each record's bytes from a
split's shard and its group shards (``tf.strings.join``) before parsing, as recordkit's
readers do (:mod:`recordkit.dataset._split_groups`); its ``split_files`` finds those
aligned files in the dataset's ``dataset.json``.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import os
import pprint
import re
import symtable
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from recordkit._version import __version__
from recordkit.codec._decode_source import DecodeSource
from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import Manifest
from recordkit.dataset._split_groups import dataset_groups
from recordkit.errors import SchemaError
from recordkit.read._open import bind_to_read
from recordkit.read._parse import PRESENT_SUFFIX, RUNTIME_FUNCTIONS, field_plan
from recordkit.schema._bound import BoundField
from recordkit.schema._schema import BoundSchema, Schema

__all__ = ["generate_parser_code"]


def generate_parser_code(
    schema: Schema | BoundSchema | Manifest | str | os.PathLike[str],
    fields: str | Sequence[str] | None = None,
    *,
    registry: CodecRegistry | None = None,
) -> str:
    """The source of a Python module that parses ``schema``'s records with TensorFlow
    alone (see the module docs). ``schema`` may be a schema file's path, or a dataset's
    :class:`~recordkit.Manifest`: the module then parses that dataset's records as the
    codec versions recorded in it stored them, and its ``FINGERPRINT`` is the dataset's.

    The module exposes ``feature_spec(fields=None)``, ``make_parser(fields=None)``,
    ``parse(serialized)`` (a batch of serialized Examples to a dict of decoded tensors),
    ``dataset(files, batch_size, fields=None, ...)`` (a file, or a tuple of aligned files
    joined record by record, per item of ``files``) and ``split_files(folder, split,
    fields=None)`` (those tuples, from a dataset's ``dataset.json``), plus
    ``SCHEMA_NAME``, ``SCHEMA_VERSION``, ``FINGERPRINT`` and ``FIELDS``. Given a manifest,
    the fields of its splits' field groups are among ``FIELDS``.

    :raises SchemaError: a field's codec cannot be written out as standalone code.
    :raises ManifestError: two splits' field groups store a field differently.
    """
    fingerprint = None
    if isinstance(schema, Manifest):
        # The dataset's layout, whichever codec versions stored it: its own fingerprint.
        # Its splits' field groups are fields too (split_files finds each split's).
        fingerprint = schema.fingerprint
        schema = bind_to_read(schema, registry or default_registry(), groups=dataset_groups(schema))
    elif isinstance(schema, (str, os.PathLike)):
        schema = Schema.load(schema, registry=registry)
    bound = schema if isinstance(schema, BoundSchema) else schema.bind(registry)
    names = [fields] if isinstance(fields, str) else (list(fields) if fields is not None else None)
    selected = bound.select(names)
    return _Module(bound, selected, fingerprint or bound.fingerprint()).render()


# -- rendering ------------------------------------------------------------------------------


def _literal(value: Any, where: str) -> str:
    text = pprint.pformat(value, indent=1, width=100, sort_dicts=False)
    try:
        same = ast.literal_eval(text) == value
    except (ValueError, SyntaxError):
        same = False
    if not same:
        raise SchemaError(f"{where}: {value!r} cannot be written as a Python literal")
    return text


def _plans_literal(plans: dict[str, Any]) -> str:
    """The plans as a literal with one line per wire feature."""
    lines = ["{"]
    for name, plan in plans.items():
        lines.append(f"    {name!r}: {{")
        for key, value in plan.items():
            if key != "features":
                lines.append(f"        {key!r}: {value!r},")
        lines.append("        'features': [")
        lines += [f"            {feature!r}," for feature in plan["features"]]
        lines += ["        ],", "    },"]
    lines.append("}")
    text = "\n".join(lines)
    if ast.literal_eval(text) != plans:
        raise SchemaError("the field plans cannot be written as a Python literal")
    return text


def _source(function: Callable[..., Any]) -> str:
    try:
        text = inspect.getsource(function)
    except (OSError, TypeError) as exc:
        raise SchemaError(f"the source of {function.__qualname__} is not available: {exc}") from None
    text = textwrap.dedent(text)
    if not text.startswith("def "):
        raise SchemaError(f"{function.__qualname__} must be a plain module-level function (no decorators)")
    return text


def _unresolved(text: str, defined: frozenset[str]) -> list[tuple[str, str]]:
    """``(function, name)`` for each global name a function of ``text`` uses that is
    neither defined at the top of ``text``, nor in ``defined``, nor a builtin."""
    future = "from __future__ import annotations\n"
    if future not in text:  # as in the generated module: annotations are never evaluated
        text = future + text
    top = symtable.symtable(text, "<generated>", "exec")
    known = defined | {sym.get_name() for sym in top.get_symbols() if sym.is_assigned() or sym.is_imported()}
    found: list[tuple[str, str]] = []
    tables = list(top.get_children())
    while tables:
        table = tables.pop(0)
        for sym in table.get_symbols():
            name = sym.get_name()
            if sym.is_global() and sym.is_referenced() and name not in known and not hasattr(builtins, name):
                found.append((table.get_name(), name))
        tables += table.get_children()
    return found


def _identifier(text: str) -> str:
    name = re.sub(r"\W", "_", text)
    return name if name and not name[0].isdigit() else f"_{name}"


class _Module:
    """Collects the parts of one generated module and renders it."""

    def __init__(self, bound: BoundSchema, selected: Sequence[BoundField], fingerprint: str) -> None:
        self.bound = bound
        self.selected = list(selected)
        #: The layout the module parses (the bound schema's, or the dataset's it reads).
        self.fingerprint = fingerprint
        #: factory name -> its source, one per distinct (function, helpers)
        self.factories: dict[tuple[Any, ...], tuple[str, str]] = {}
        self.field_decoders: list[str] = []

    def render(self) -> str:
        plans = {}
        for field in self.selected:
            plans[field.name] = field_plan(field)
            self.field_decoders.append(self._decoder(field))
        schema = self.bound.schema
        header = _HEADER.format(
            name=schema.name,
            version=schema.version,
            fingerprint=self.fingerprint,
            recordkit=__version__,
            fields=", ".join(f.name for f in self.selected),
        )
        parts = [
            header,
            f"SCHEMA_NAME = {schema.name!r}",
            f"SCHEMA_VERSION = {schema.version!r}",
            f"FINGERPRINT = {self.fingerprint!r}",
            f"FIELDS = {tuple(f.name for f in self.selected)!r}",
            f"PRESENT_SUFFIX = {PRESENT_SUFFIX!r}",
            "",
            "#: How each field is parsed: its Example keys, dtypes and shapes.",
            f"PLANS = {_plans_literal(plans)}",
            "",
            "",
            "# -- codec decoders " + "-" * 70,
            "",
            *[source for _, source in self.factories.values()],
            *self.field_decoders,
            "DECODERS = {",
            *[f"    {f.name!r}: _decode_{_identifier(f.name)}," for f in self.selected],
            "}",
            "",
            "",
            "# -- parsing (recordkit's runtime, copied from recordkit.read._parse) " + "-" * 24,
            "",
            *[_source(fn) + "\n" for fn in RUNTIME_FUNCTIONS],
            _API,
        ]
        text = "\n".join(parts).rstrip() + "\n"
        missing = _unresolved(text, frozenset())
        if missing:  # the runtime functions of recordkit.read._parse, copied: a bug in recordkit
            uses = ", ".join(f"{name!r} (in {function})" for function, name in missing)
            raise SchemaError(f"the generated parser module would use undefined names: {uses}")
        return text

    def _decoder(self, field: BoundField) -> str:
        codec = field.codec
        source = codec.decode_tf_source()
        if source is None:
            why = (
                "its decode calls back into Python (in_graph=False)"
                if not codec.wire_spec().in_graph
                else "it provides no decode_tf_source()"
            )
            raise SchemaError(
                f"codec {codec.name!r} cannot be written into standalone parser code: {why}; "
                "leave the field out (fields=...) or read it with recordkit",
                field=field.name,
                codec=codec.name,
            )
        factory = self._factory(field, source)
        args = [
            f"{name}={_literal(value, f'field {field.name!r}: constant {name!r}')}"
            for name, value in source.constants.items()
        ]
        call = ", ".join(["wire", *args])
        return (
            f"def _decode_{_identifier(field.name)}(wire):\n"
            f'    """Decode field {field.name!r} (codec {codec.name!r})."""\n'
            f"    return {factory}({call})\n\n"
        )

    def _factory(self, field: BoundField, source: DecodeSource) -> str:
        key = (source.function, *source.helpers)
        if key in self.factories:
            return self.factories[key][0] + "_decode"
        base = _identifier(f"_{field.codec.name}_{source.function.__name__}")
        name = base
        taken = {n for n, _ in self.factories.values()}
        suffix = 2
        while name in taken:
            name, suffix = f"{base}_{suffix}", suffix + 1
        body = "".join(_source(fn) + "\n" for fn in (*source.helpers, source.function))
        missing = _unresolved(body, _MODULE_NAMES)
        if missing:
            uses = ", ".join(f"{name!r} (in {function})" for function, name in missing)
            raise SchemaError(
                f"the standalone decode of codec {field.codec.name!r} uses {uses}, which the generated "
                "module would not define: add the function to its DecodeSource's helpers",
                field=field.name,
                codec=field.codec.name,
            )
        module = getattr(source.function, "__module__", "?")
        text = (
            f"def {name}():\n"
            f'    """The decode of codec {field.codec.name!r} (from {module})."""\n\n'
            f"{textwrap.indent(body, '    ')}"
            f"    return {source.function.__name__}\n\n\n"
            f"{name}_decode = {name}()\n\n"
        )
        self.factories[key] = (name, text)
        return name + "_decode"


_HEADER = '''"""Standalone parser for records of schema {name!r} (version {version}).

Generated by recordkit {recordkit}; it needs TensorFlow only. Do not edit: regenerate
it with ``recordkit codegen`` (or ``recordkit.generate_parser_code``).

Schema fingerprint: {fingerprint}
Fields: {fields}

Usage::

    import tensorflow as tf
    ds = tf.data.TFRecordDataset(files).batch(64).map(parse)   # or: dataset(files, 64)
    ds = dataset(split_files("data/pets", "train"), 64)      # a dataset with field groups
"""

from __future__ import annotations

import json

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

#: A field's plan (see PLANS); the names above are for the copied functions' annotations.
FieldPlan = dict[str, Any]
__all__ = ["FIELDS", "FINGERPRINT", "PLANS", "dataset", "feature_spec", "make_parser", "parse", "split_files"]
'''

#: Names the generated module defines before the codecs' decodes (TensorFlow as ``tf``).
_MODULE_NAMES = frozenset(
    sym.get_name()
    for sym in symtable.symtable(_HEADER, "<header>", "exec").get_symbols()
    if sym.is_assigned() or sym.is_imported()
)

_API = '''
# -- public API ------------------------------------------------------------------------


def feature_spec(fields=None):
    """The tf.io.parse_example spec of ``fields`` (all when None)."""
    names = FIELDS if fields is None else ([fields] if isinstance(fields, str) else list(fields))
    unknown = [name for name in names if name not in PLANS]
    if unknown:
        raise KeyError(f"unknown fields {unknown}; this module parses {list(FIELDS)}")
    return spec_from_plans([PLANS[name] for name in names])


def make_parser(fields=None):
    """A function from a batch of serialized Examples (a [B] string tensor) to a dict
    of decoded fields, parsing and decoding only ``fields`` (all when None)."""
    names = FIELDS if fields is None else ([fields] if isinstance(fields, str) else list(fields))
    spec = feature_spec(names)

    # Traced as written: the decodes hold no Python control flow on tensors, and
    # tf.data's AutoGraph conversion of them cost seconds of CPU at a process's first map.
    @tf.autograph.experimental.do_not_convert
    def parse_batch(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        out = {}
        for name in names:
            out.update(decode_field(PLANS[name], parsed, DECODERS[name]))
        return out

    return parse_batch


parse = make_parser()


def _columns(files):
    """``files`` as columns of aligned files: one column for plain files; for tuples
    (a shard and its group shards, as split_files gives them), one column per position."""
    items = [files] if isinstance(files, (str, bytes)) else list(files)
    if not items or all(isinstance(item, (str, bytes)) for item in items):
        return [items]
    rows = [[item] if isinstance(item, (str, bytes)) else list(item) for item in items]
    if len({len(row) for row in rows}) != 1:
        raise ValueError("every item of files must hold as many aligned files (a shard and its group shards)")
    return [list(column) for column in zip(*rows)]


def dataset(files, batch_size, fields=None, *, compression_type=None, drop_remainder=False):
    """TFRecord files as a tf.data.Dataset of decoded batches (parsed after batching).

    An item of ``files`` may be a tuple of aligned files (a split's shard and its field
    groups' shards, see split_files): their records are read side by side and each
    record's serialized Examples joined (tf.strings.join) before parsing, as recordkit
    joins field groups. tf.data's zip stops at the shortest file: split_files checks
    that the aligned shards hold as many records as dataset.json lists."""
    columns = [
        tf.data.TFRecordDataset(column, compression_type=compression_type) for column in _columns(files)
    ]
    if len(columns) == 1:
        records = columns[0]
    else:
        records = tf.data.Dataset.zip(tuple(columns)).map(
            lambda *parts: tf.strings.join(parts), num_parallel_calls=tf.data.AUTOTUNE
        )
    batches = records.batch(batch_size, drop_remainder=drop_remainder)
    return batches.map(make_parser(fields), num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def split_files(folder, split, fields=None):
    """The files that hold ``fields`` (all this module parses when None) of ``split``
    of the dataset at ``folder`` (local or any tf.io.gfile path), read from its
    dataset.json: one tuple per shard of the split, the shard then the shards of its
    field groups that hold a wanted field, for ``dataset``. A shard whose wanted fields
    are all in groups is not read. Refuses (ValueError) a wanted field the split lacks
    (a field group of another split), a split listed in a shard table and aligned shards
    that dataset.json lists with different record counts."""
    names = FIELDS if fields is None else ([fields] if isinstance(fields, str) else list(fields))
    root = str(folder).rstrip("/")
    with tf.io.gfile.GFile(root + "/dataset.json", "r") as handle:
        manifest = json.load(handle)
    splits = manifest.get("splits", {})
    if split not in splits:
        raise ValueError(f"{root}/dataset.json has no split {split!r} (it has {sorted(splits)})")
    info = splits[split]
    if info.get("shard_table") is not None:
        raise ValueError(
            f"split {split!r} of {root} lists its shards in a shard table: list its files with recordkit"
        )
    shards = info.get("shards", [])
    before = (info.get("unfinished") or {}).get("shards_before")
    if before is not None:
        shards = shards[:before]
    groups = [g for g in (info.get("field_groups") or {}).values() if not g.get("unfinished")]
    needed = [g for g in groups if set(names) & set(g["fields"])]
    in_groups = {field for g in groups for field in g["fields"]}
    absent = [name for name in names if name not in in_groups and name not in manifest["schema"]["fields"]]
    if absent:
        raise ValueError(
            f"split {split!r} of {root} has no field {absent} (a field group of another split?): "
            "pass fields= without them"
        )
    read_shard = not needed or bool(set(names) - in_groups)
    out = []
    for index, shard in enumerate(shards):
        row = [shard] if read_shard else []
        row += [g["shards"][index] for g in needed]
        for other in row:
            if other["records"] != shard["records"]:
                raise ValueError(
                    f"{root}/dataset.json lists {other['records']} records in {other['file']} but "
                    f"{shard['records']} in {shard['file']}, the shard it is aligned with"
                )
        out.append(tuple(f"{root}/{entry['file']}" for entry in row))
    return out
'''
