"""Schema files: YAML (or JSON) text to a :class:`~recordkit.Schema` and back.

This module sits below the Schema model, which calls it from ``Schema.load`` and
``Schema.dumps``: it is handed the model class to validate into, and reads schemas
through the :class:`SchemaModel` protocol, so it never imports the model.

A schema file is data only: codec names and options, never module paths or code, read
with PyYAML's safe loader (no Python tags), with duplicate keys rejected rather than
silently overwritten. Every problem is reported with the file, the line, the field and
the option it concerns: pydantic's error locations are mapped back to the YAML nodes
they came from.

Loading checks a file in three steps: its structure (the :class:`~recordkit.Schema`
model), each field's codec and options against a codec registry, then the binding
(related fields, Example keys, defaults). ``check=False`` stops after the first step.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import pydantic
import yaml

from recordkit._limits import MAX_NESTING, nesting_depth
from recordkit._suggest import did_you_mean
from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.errors import CodecOptionsError, RecordkitError, SchemaFileError
from recordkit.schema._card import DatasetCard
from recordkit.schema._fields import FieldSpec, SchemaFormat, field_name_problem
from recordkit.storage import StorageOptions, is_remote, location

__all__ = [
    "SCHEMA_KEY",
    "check_schema",
    "dump_schema",
    "dumps_schema",
    "format_of",
    "load_schema",
    "loads_schema",
    "schema_data",
]

#: A top-level key that editors read to find a file's JSON Schema; allowed and ignored.
SCHEMA_KEY = "$schema"
#: Most YAML nodes a schema file may expand to once aliases are resolved (a guard
#: against "billion laughs" files; real schema files have a few hundred).
MAX_NODES = 100_000

Loc = tuple[str | int, ...]


class SchemaModel(Protocol):
    """What this module reads of a schema (the :class:`~recordkit.Schema` model)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def fields(self) -> dict[str, FieldSpec]: ...
    @property
    def card(self) -> DatasetCard | None: ...

    def bind(self, registry: CodecRegistry | None = None) -> object: ...


SchemaT = TypeVar("SchemaT", bound=pydantic.BaseModel)


# -- reading --------------------------------------------------------------------------------


def format_of(path: str | os.PathLike[str]) -> SchemaFormat:
    """The format a schema file's name implies: JSON for ``.json``, YAML otherwise."""
    return "json" if Path(path).suffix.lower() == ".json" else "yaml"


def load_schema(
    path: str | os.PathLike[str],
    model: type[SchemaT],
    *,
    registry: CodecRegistry | None = None,
    check: bool = True,
    storage_options: StorageOptions | None = None,
) -> SchemaT:
    """Read the schema file ``path`` (a local path or any fsspec URL); see
    :meth:`recordkit.Schema.load`."""
    source = os.fspath(path)
    try:
        if is_remote(source):
            text = location(source, storage_options).read_bytes().decode("utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SchemaFileError("no such file", file=source) from None
    except UnicodeDecodeError as exc:
        raise SchemaFileError(f"is not UTF-8 text (byte {exc.start})", file=source) from None
    except OSError as exc:
        raise SchemaFileError(f"cannot be read: {exc.strerror or exc}", file=source) from None
    return loads_schema(text, model, format_of(path), source=source, registry=registry, check=check)


def loads_schema(
    text: str,
    model: type[SchemaT],
    format: SchemaFormat = "yaml",
    *,
    source: str = "<string>",
    registry: CodecRegistry | None = None,
    check: bool = True,
) -> SchemaT:
    """Parse a schema file's ``text`` into ``model``; see :meth:`recordkit.Schema.loads`."""
    if format not in ("yaml", "json"):
        raise SchemaFileError(f"unknown schema file format {format!r} (yaml or json)", file=source)
    too_deep = SchemaFileError(f"is nested more than {MAX_NESTING} levels deep", file=source)
    if _bracket_depth(text) > MAX_NESTING:  # before parsing: PyYAML is quadratic in it
        raise too_deep
    try:  # the parsers recurse: a file nested thousands deep must not end in RecursionError
        data, lines = _parse_yaml(text, source) if format == "yaml" else _parse_json(text, source)
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:  # a number of more than 4300 digits
        raise SchemaFileError(f"cannot be parsed: {exc}", file=source) from None
    if nesting_depth(data) > MAX_NESTING:
        raise too_deep
    schema = _validate(data, lines, source, model)
    if check:
        check_schema(cast(SchemaModel, schema), registry=registry, source=source, lines=lines)
    return schema


def _bracket_depth(text: str) -> int:
    """How deeply ``[`` and ``{`` nest in ``text``, outside quoted strings: a cheap
    bound, checked before a parser spends quadratic time on thousands of levels."""
    depth = deepest = 0
    quote = ""
    escaped = False
    for char in text:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_NESTING:
                break
        elif char in "]}":
            depth = max(depth - 1, 0)
    return deepest


@dataclasses.dataclass
class _Lines:
    """The 1-based line of each key and list item of a parsed file, by its path."""

    by_loc: dict[Loc, int] = dataclasses.field(default_factory=dict)

    def find(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest ancestor the file has (a missing key
        is reported where its parent is)."""
        for end in range(len(loc), 0, -1):
            line = self.by_loc.get(loc[:end])
            if line is not None:
                return line
        return None


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, reading every mapping key as the text written.

    Keys in a schema file are names: YAML 1.1 would read a field called ``no``, ``on``
    or ``1`` as a boolean or a number.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


@dataclasses.dataclass
class _Walk:
    """State of one walk over a YAML node tree (see :func:`_index_nodes`)."""

    source: str
    lines: _Lines
    sizes: dict[int, int] = dataclasses.field(default_factory=dict)
    active: set[int] = dataclasses.field(default_factory=set)


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _field_of(loc: Loc) -> str | None:
    if len(loc) >= 2 and loc[0] == "fields" and isinstance(loc[1], str):
        return loc[1]
    return None


def _index_nodes(node: yaml.Node, loc: Loc, walk: _Walk) -> int:
    """Record the line of every key and item under ``node``, reject duplicate and
    non-scalar keys, and return how many nodes ``node`` expands to (aliases included)."""
    ident = id(node)
    if ident in walk.sizes:  # an alias: the same node object, indexed where it was defined
        return walk.sizes[ident]
    if ident in walk.active:
        raise SchemaFileError("has a recursive alias", file=walk.source, line=_line(node))
    walk.active.add(ident)
    size = 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                size += _index_nodes(value_node, loc, walk)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise SchemaFileError(
                    "has a key that is not a plain name",
                    file=walk.source,
                    line=_line(key_node),
                    field=_field_of(loc),
                )
            name = str(key_node.value)
            if name in seen:
                raise SchemaFileError(
                    f"duplicate key {name!r} (first at line {seen[name]})",
                    file=walk.source,
                    line=_line(key_node),
                    field=_field_of((*loc, name)),
                )
            seen[name] = _line(key_node)
            walk.lines.by_loc.setdefault((*loc, name), _line(key_node))
            size += _index_nodes(value_node, (*loc, name), walk)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            walk.lines.by_loc.setdefault((*loc, i), _line(item))
            size += _index_nodes(item, (*loc, i), walk)
    walk.active.discard(ident)
    walk.sizes[ident] = size
    if size > MAX_NODES:
        raise SchemaFileError(
            f"expands to more than {MAX_NODES} values once its aliases are resolved",
            file=walk.source,
            line=_line(node),
        )
    return size


def _parse_yaml(text: str, source: str) -> tuple[Any, _Lines]:
    lines = _Lines()
    try:
        loader = _Loader(text)
    except yaml.YAMLError as exc:  # characters YAML does not allow
        raise SchemaFileError(f"is not valid YAML: {exc}", file=source) from None
    try:
        node = loader.get_single_node()
        if node is None:
            raise SchemaFileError("is empty", file=source)
        _index_nodes(node, (), _Walk(source, lines))
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or str(exc)
        line = int(mark.line) + 1 if mark is not None else None
        raise SchemaFileError(f"is not valid YAML: {problem}", file=source, line=line) from None
    except yaml.YAMLError as exc:
        raise SchemaFileError(f"is not valid YAML: {exc}", file=source) from None
    finally:
        loader.dispose()
    return data, lines


class _DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def _json_lines(text: str, source: str) -> _Lines:
    """Lines of a JSON file's keys, found by reading it as YAML (JSON is nearly a
    subset); a duplicate key raises here with its line. Best effort: {} when the
    YAML reader disagrees with the JSON one."""
    lines = _Lines()
    try:
        loader = _Loader(text)
    except yaml.YAMLError:
        return lines
    try:
        node = loader.get_single_node()
        if node is not None:
            _index_nodes(node, (), _Walk(source, lines))
    except yaml.YAMLError:
        return _Lines()
    finally:
        loader.dispose()
    return lines


def _parse_json(text: str, source: str) -> tuple[Any, _Lines]:
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise SchemaFileError(f"is not valid JSON: {exc.msg}", file=source, line=exc.lineno) from None
    except _DuplicateKeyError as exc:
        _json_lines(text, source)  # raises with the duplicate's line when it can find it
        raise SchemaFileError(f"duplicate key {exc.key!r}", file=source) from None
    return data, _json_lines(text, source)


# -- structure ------------------------------------------------------------------------------


def _allowed(model: type[pydantic.BaseModel], extra: tuple[str, ...] = ()) -> str:
    return ", ".join([*model.model_fields, *extra])


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(error: Mapping[str, Any], loc: Loc, model: type[pydantic.BaseModel], *, in_field: bool) -> str:
    kind = error["type"]
    key = loc[-1] if loc else None
    if kind == "extra_forbidden":
        if in_field:
            allowed = _allowed(FieldSpec)
        elif loc[:1] == ("card",):
            allowed = _allowed(DatasetCard)
        else:
            allowed = _allowed(model, (SCHEMA_KEY,))
        return f"unknown key {key!r} ({did_you_mean(key, allowed.split(', '))}allowed: {allowed})"
    if kind == "missing":
        return f"missing required key {key!r}"
    if kind == "model_type" and in_field and not loc:  # a field that is not a mapping
        value = error.get("input")
        return (
            f"a field must be a mapping with a codec ({{codec: ..., options: ...}}), "
            f"not {'nothing' if value is None else _shown(value)}"
        )
    message = str(error["msg"]).removeprefix("Value error, ")
    where = ".".join(str(p) for p in loc)
    value = error.get("input")
    got = f" (got {_shown(value)})" if isinstance(value, (str, int, float, bool)) or value is None else ""
    return f"key {where!r}: {message}{got}" if where else message


def _validate(data: Any, lines: _Lines, source: str, model: type[SchemaT]) -> SchemaT:
    if not isinstance(data, dict):
        raise SchemaFileError(
            f"must hold a mapping (name, version, fields), not {type(data).__name__}", file=source, line=1
        )
    data = {key: value for key, value in data.items() if key != SCHEMA_KEY}
    fields = data.get("fields")
    if isinstance(fields, dict):
        for name in fields:
            problem = field_name_problem(name)
            if problem is not None:
                raise SchemaFileError(
                    problem, file=source, line=lines.find(("fields", str(name))), field=str(name)
                )
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise _structure_error(exc, lines, source, model) from None


def _structure_error(
    exc: pydantic.ValidationError, lines: _Lines, source: str, model: type[pydantic.BaseModel]
) -> SchemaFileError:
    problems: list[tuple[int | None, str | None, str]] = []
    for error in exc.errors(include_url=False):
        loc: Loc = tuple(error["loc"])
        field = _field_of(loc)
        rest = loc[2:] if field is not None else loc
        problems.append((lines.find(loc), field, _describe(error, rest, model, in_field=field is not None)))
    if len(problems) == 1:
        line, field, message = problems[0]
        return SchemaFileError(message, file=source, line=line, field=field)
    listing = ""
    for line, field, message in problems:
        where = ", ".join(
            part for part in (f"line {line}" if line else "", f"field {field!r}" if field else "") if part
        )
        listing += f"\n  - {where}: {message}" if where else f"\n  - {message}"
    return SchemaFileError(f"{len(problems)} problems:{listing}", file=source)


# -- codecs ---------------------------------------------------------------------------------


def check_schema(
    schema: SchemaModel,
    *,
    registry: CodecRegistry | None = None,
    source: str = "<string>",
    lines: _Lines | None = None,
) -> None:
    """Check every field's codec and options against ``registry`` (default: the
    installed plugins), then bind the schema; errors name the file, line and field."""
    if registry is None:
        registry = default_registry()
    lines = lines or _Lines()
    for name, spec in schema.fields.items():
        base: Loc = ("fields", name)
        try:
            codec = registry.get(spec.codec)
        except RecordkitError as exc:
            raise exc.with_context(file=source, line=lines.find((*base, "codec")), field=name) from None
        try:
            codec.options_model.model_validate(spec.options)
        except pydantic.ValidationError as exc:
            error = _options_error(exc, spec.codec, codec.options_model, (*base, "options"), lines)
            raise error.with_context(file=source, field=name) from None
    try:
        schema.bind(registry)
    except RecordkitError as exc:
        line = lines.find(("fields", exc.field)) if exc.field else None
        raise exc.with_context(file=source, line=line) from None


def _options_error(
    exc: pydantic.ValidationError, codec: str, model: type[pydantic.BaseModel], base: Loc, lines: _Lines
) -> CodecOptionsError:
    messages: list[str] = []
    first_line: int | None = None
    for error in exc.errors(include_url=False):
        loc: Loc = tuple(error["loc"])
        option = ".".join(str(p) for p in loc)
        if error["type"] == "extra_forbidden":
            message = (
                f"unknown option {option!r} ({did_you_mean(option, model.model_fields)}"
                f"options of codec {codec!r}: {_allowed(model) or 'none'})"
            )
        elif error["type"] == "missing":
            message = f"missing required option {option!r}"
        else:
            value = error.get("input")
            got = f" (got {_shown(value)})" if not isinstance(value, (dict, list)) else ""
            detail = str(error["msg"]).removeprefix("Value error, ")
            message = f"option {option!r}: {detail}{got}" if option else detail
        messages.append(message)
        if first_line is None:
            first_line = lines.find((*base, *loc))
    return CodecOptionsError("; ".join(messages), line=first_line, codec=codec)


# -- writing --------------------------------------------------------------------------------


def schema_data(schema: SchemaModel) -> dict[str, Any]:
    """The schema as a schema file's data: name, version, description when set, and
    each field without the keys left at their defaults."""
    data: dict[str, Any] = {"name": schema.name, "version": schema.version}
    if schema.description:
        data["description"] = schema.description
    data["fields"] = {
        name: spec.model_dump(mode="json", exclude_defaults=True) for name, spec in schema.fields.items()
    }
    if schema.card is not None:
        data["card"] = schema.card.model_dump(mode="json", exclude_defaults=True)
    return data


class _Dumper(yaml.SafeDumper):
    """The safe dumper, writing multi-line text as a literal block (``|``)."""


#: Line breaks other than \n: PyYAML writes them raw in plain, single-quoted and block
#: scalars, where a reader folds them; only double quotes escape them.
_OTHER_BREAKS = frozenset("\x85\u2028\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if _OTHER_BREAKS.intersection(value):
        style: str | None = '"'
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dumps_schema(schema: SchemaModel, format: SchemaFormat = "yaml") -> str:
    """The text of ``schema``'s file; see :meth:`recordkit.Schema.dumps`."""
    data = schema_data(schema)
    if format == "json":
        return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if format == "yaml":
        return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    raise SchemaFileError(f"unknown schema file format {format!r} (yaml or json)")


def dump_schema(schema: SchemaModel, path: str | Path, format: SchemaFormat | None = None) -> None:
    """Write ``schema`` to ``path``; see :meth:`recordkit.Schema.dump`."""
    Path(path).write_text(dumps_schema(schema, format or format_of(path)), encoding="utf-8")
