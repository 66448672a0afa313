"""The error hierarchy (sdk/recordkit/errors.py): context in messages, the documented tree,
and errors crossing process boundaries."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import re
from typing import Any

import pytest

import recordkit as rk
from recordkit import errors


def _raise(kind: str) -> None:
    """Raise one of recordkit's errors in a worker process (see the pickling test)."""
    if kind == "record":
        inner = [
            errors.InvalidValueError("expected a str, got int", field="label", record=4),
            errors.RecordError("missing", field="image", record=4),
        ]
        raise errors.RecordError("2 invalid fields", errors=inner, record=4)
    if kind == "incompatible":
        raise errors.IncompatibleSchemaError("cannot read", differences=["field 'a': codec changed"])
    if kind == "extra":
        raise errors.MissingExtraError("apache_beam", "beam", purpose="writing with Beam")
    try:
        raise ValueError("bad import")
    except ValueError as exc:
        raise errors.PluginLoadError("could not be imported", plugin="kp", distribution="kp-dist") from exc


def all_error_classes() -> list[type[errors.RecordkitError]]:
    found: list[type[errors.RecordkitError]] = []
    pending: list[type[errors.RecordkitError]] = [errors.RecordkitError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return [cls for cls in found if cls.__module__ == errors.__name__]


# -- messages carry their context ----------------------------------------------------------


def test_message_without_context_is_the_reason() -> None:
    assert str(errors.SchemaError("a schema needs at least one field")) == "a schema needs at least one field"


def test_message_lists_every_part_of_the_context_in_a_fixed_order() -> None:
    error = errors.CorruptRecordError(
        "data CRC mismatch", shard="train-00001.tfrecord", offset=4096, record=12, field="image"
    )
    assert str(error) == (
        "shard train-00001.tfrecord, offset 4096, record 12, field 'image': data CRC mismatch"
    )
    assert (error.shard, error.record, error.field) == ("train-00001.tfrecord", 12, "image")


def test_a_record_key_is_quoted_and_an_index_is_not() -> None:
    assert str(errors.RecordError("bad", record="cat_001.jpg")) == "record key 'cat_001.jpg': bad"
    assert str(errors.RecordError("bad", record=0)) == "record 0: bad"


def test_plugin_errors_name_plugin_and_distribution() -> None:
    error = errors.PluginLoadError("could not be imported", plugin="kp", distribution="kp-dist")
    assert str(error) == "plugin 'kp', distribution 'kp-dist': could not be imported"
    assert error.plugin == "kp"


def test_schema_file_errors_name_file_and_line() -> None:
    error = errors.SchemaFileError("unknown key 'codek'", file="pets.yaml", line=7, field="photo")
    assert str(error) == "file pets.yaml, line 7, field 'photo': unknown key 'codek'"


def test_with_context_adds_what_is_missing_and_keeps_what_is_known() -> None:
    error = errors.InvalidValueError("expected a str, got int")
    assert error.with_context(field="label", record=3) is error
    assert str(error) == "record 3, field 'label': expected a str, got int"
    # A deeper, more precise field path is not overwritten by its parent's.
    error.with_context(field="labels", record=99, shard="s.tfrecord")
    assert (error.field, error.record, error.shard) == ("label", 3, "s.tfrecord")


def test_record_error_keeps_each_fields_error() -> None:
    inner = [errors.InvalidValueError("bad", field="a"), errors.RecordError("missing", field="b")]
    error = errors.RecordError("2 invalid fields", errors=inner, record=1)
    assert error.errors == inner
    assert error.errors is not inner


def test_incompatible_schema_lists_each_difference() -> None:
    error = errors.IncompatibleSchemaError("cannot append", differences=["field 'a': x", "field 'b': y"])
    assert str(error) == "cannot append\n  - field 'a': x\n  - field 'b': y"
    assert error.differences == ["field 'a': x", "field 'b': y"]


def test_missing_extra_names_what_to_install_and_is_an_import_error() -> None:
    error = errors.MissingExtraError("apache_beam", "beam", purpose="writing with Beam")
    assert isinstance(error, ImportError)
    assert "pip install 'recordkit[beam]'" in str(error)
    assert "'apache_beam'" in str(error)
    with pytest.raises(ImportError):
        raise error


# -- the tree in the module docstring is the real one ---------------------------------------


def test_every_error_derives_from_recordkit_error_and_is_exported() -> None:
    classes = all_error_classes()
    assert {cls.__name__ for cls in classes} == {n for n in errors.__all__ if n.endswith("Error")}
    for cls in classes:
        assert issubclass(cls, rk.errors.RecordkitError)
        assert cls.__doc__, f"{cls.__name__} has no docstring"


def test_the_docstring_tree_matches_the_class_hierarchy() -> None:
    assert errors.__doc__ is not None
    drawn: dict[str, str | None] = {}
    parents: list[str] = []  # the chain of names above the current line, by depth
    root_column: int | None = None
    for line in errors.__doc__.splitlines():
        match = re.match(r"^[\s│├└─]*?(\w+Error)\b", line)
        if not match:
            continue
        name, column = match.group(1), match.start(1)
        if root_column is None:
            root_column = column
        depth = (column - root_column) // 4  # each level of the drawing is 4 columns
        del parents[depth:]
        drawn[name] = parents[-1] if parents else None
        parents.append(name)
    actual = {cls.__name__: cls.__bases__[0].__name__ for cls in all_error_classes()}
    actual["RecordkitError"] = None  # type: ignore[assignment]
    assert drawn == actual


# -- errors cross process boundaries (the writer's worker processes) ------------------------


@pytest.fixture(scope="module")
def worker() -> Any:
    context = multiprocessing.get_context("spawn")  # no fork: TensorFlow may be loaded here
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        yield pool


@pytest.mark.slow
def test_errors_raised_in_a_worker_keep_type_reason_and_context(worker: Any) -> None:
    with pytest.raises(errors.PluginLoadError) as info:
        worker.submit(_raise, "plugin").result()
    assert str(info.value) == "plugin 'kp', distribution 'kp-dist': could not be imported"
    assert info.value.context == errors.ErrorContext(plugin="kp", distribution="kp-dist")


@pytest.mark.slow
def test_nested_record_errors_survive_the_trip(worker: Any) -> None:
    with pytest.raises(errors.RecordError) as info:
        worker.submit(_raise, "record").result()
    assert [type(e) for e in info.value.errors] == [errors.InvalidValueError, errors.RecordError]
    assert [str(e) for e in info.value.errors] == [
        "record 4, field 'label': expected a str, got int",
        "record 4, field 'image': missing",
    ]
    assert info.value.record == 4


@pytest.mark.slow
def test_errors_with_their_own_constructor_survive_the_trip(worker: Any) -> None:
    with pytest.raises(errors.IncompatibleSchemaError) as info:
        worker.submit(_raise, "incompatible").result()
    assert info.value.differences == ["field 'a': codec changed"]
    assert str(info.value) == "cannot read\n  - field 'a': codec changed"
    with pytest.raises(errors.MissingExtraError, match=r"recordkit\[beam\]"):
        worker.submit(_raise, "extra").result()


@pytest.mark.slow
def test_context_added_after_the_trip_still_merges(worker: Any) -> None:
    with pytest.raises(errors.RecordError) as info:
        worker.submit(_raise, "record").result()
    info.value.with_context(shard="train-00000.tfrecord")
    assert str(info.value).startswith("shard train-00000.tfrecord, record 4: 2 invalid fields")
