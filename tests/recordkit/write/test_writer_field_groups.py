"""Appending to a split with field groups (sdk/recordkit/write/_group_shards.py): the
records carry the groups' fields, which go to group shards aligned with the new shards;
what cannot fill the groups is refused, naming the record or the field, before it is
written. (Every reader reading such a split as the same data written inline:
tests/recordkit/tools/test_field_groups.py, its "appended" dataset.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import DatasetError, IncompatibleSchemaError, RecordError

BASE = rk.Schema(
    name="base", fields={"id": rk.FieldSpec(codec="scalar"), "caption": rk.FieldSpec(codec="text")}
)
EMBEDDING = rk.Schema(
    name="e",
    fields={"embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [2]})},
)
SCORE = rk.Schema(
    name="s", fields={"score": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}, optional=True)}
)


def _rows(start: int, count: int, **extra: Any) -> list[dict[str, Any]]:
    return [
        {"id": i, "caption": f"c{i}", **{k: v(i) if callable(v) else v for k, v in extra.items()}}
        for i in range(start, start + count)
    ]


def _vector(i: int) -> np.ndarray:
    return np.array([i, -i], np.float32)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """Five records in shards of 2, with a required embedding and an optional score added."""
    root = tmp_path / "data"
    rk.write_dataset(_rows(0, 5), root, BASE, shard_records=2, progress=False)
    rk.add_fields(root, "train", EMBEDDING, [_vector(i) for i in range(5)])
    rk.add_fields(root, "train", SCORE, [i / 2 for i in range(5)])
    return root


def _append(root: Path, rows: list[dict[str, Any]], schema: rk.Schema | None = None, **options: Any) -> None:
    schema = schema or rk.open(root).schema
    rk.write_dataset(rows, root, schema, shard_records=2, append=True, progress=False, **options)


def _read(root: Path) -> list[tuple[int, list[float], float | None]]:
    return [
        (int(r["id"]), r["embedding"].tolist(), None if r["score"] is None else float(r["score"]))
        for r in rk.iter_records(root)
    ]


def test_appended_records_fill_every_group_and_an_optional_field_they_leave_out_reads_absent(
    path: Path,
) -> None:
    _append(path, _rows(5, 3, embedding=_vector, score=lambda i: i / 2)[:1] + _rows(6, 2, embedding=_vector))
    got = _read(path)
    assert got[:6] == [(i, [i, -i], i / 2) for i in range(6)]
    assert got[6:] == [(6, [6, -6], None), (7, [7, -7], None)]
    leaving_out = rk.Schema(name="base", fields={**BASE.fields, **EMBEDDING.fields})
    _append(path, _rows(8, 1, embedding=_vector), leaving_out, workers=2)  # encoded in this process
    assert _read(path)[8] == (8, [8, -8], None)
    split = rk.Manifest.load(path).split("train")
    assert split.field_groups is not None
    for group in split.field_groups.values():
        assert [s.records for s in group.shards] == [s.records for s in split.shards] == [2, 2, 1, 2, 1, 1]
        assert [s.aligned_with for s in group.shards] == [s.sha256 for s in split.shards]
    result = CliRunner().invoke(main, ["verify", str(path)])
    assert result.exit_code == 0, result.output


def test_a_record_without_a_required_group_field_is_refused_naming_it_and_nothing_of_it_is_written(
    path: Path,
) -> None:
    rows = _rows(5, 4, embedding=_vector)
    del rows[2]["embedding"]
    with pytest.raises(RecordError, match=r"record 2, field 'embedding': missing"):
        _append(path, rows)
    assert [r[0] for r in _read(path)] == list(range(5)), "the split reads as before"
    # The stopped append is resumed, the bad record rejected whole (its split fields too).
    rk.write_dataset(
        rows, path, rk.open(path).schema, shard_records=2, resume=True, on_error="skip", progress=False
    )
    assert [r[0] for r in _read(path)] == [0, 1, 2, 3, 4, 5, 6, 8]
    assert all(embedding == [i, -i] for i, embedding, _ in _read(path)), "each record keeps its own values"


@pytest.mark.parametrize("workers", [0, 2])
def test_a_record_of_another_split_carrying_a_group_field_is_refused_naming_the_group_and_its_split(
    path: Path, workers: int
) -> None:
    schema = rk.open(path).schema  # the split's fields and its groups'
    with pytest.raises(
        RecordError,
        match=r"record 1, field 'embedding': a field of field group 'embedding' of split 'train' only, "
        r"which this split does not have: leave it out of this split's records, or add it to this "
        r"split with recordkit.add_fields",
    ):
        rk.write_dataset(
            _rows(0, 1) + _rows(1, 1, embedding=_vector),
            path,
            schema,
            "test",
            append=True,
            progress=False,
            workers=workers,
        )
    rk.write_dataset(_rows(0, 2), path, schema, "test", resume=True, progress=False, workers=workers)
    assert [sorted(r) for r in rk.iter_records(path, "test")] == [["caption", "id"]] * 2


def test_a_schema_that_cannot_fill_the_groups_is_refused_before_anything_is_written(path: Path) -> None:
    before = sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))
    manifest = (path / "dataset.json").read_bytes()
    with pytest.raises(
        IncompatibleSchemaError, match=r"field 'embedding' of field group 'embedding' is required"
    ):
        _append(path, _rows(5, 1), BASE)
    three = rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [3]})
    other = rk.Schema(name="base", fields={**BASE.fields, "embedding": three})
    with pytest.raises(IncompatibleSchemaError, match=r"field 'embedding': the schema has .*3.*stores"):
        _append(path, _rows(5, 1, embedding=np.zeros(3, np.float32)), other)
    assert (path / "dataset.json").read_bytes() == manifest
    assert sorted(p.relative_to(path).as_posix() for p in path.rglob("*")) == before
    leaving_out = rk.Schema(name="base", fields={**BASE.fields, **EMBEDDING.fields})
    with pytest.raises(RecordError, match=r"record 0, field 'score': not a field of the schema"):
        _append(path, _rows(5, 1, embedding=_vector, score=1.0), leaving_out)


def test_an_append_waits_for_a_group_being_added_and_other_splits_append_as_before(
    path: Path, tmp_path: Path
) -> None:
    with pytest.raises(DatasetError, match=r"values ended after 1 items"):
        rk.add_fields(path, "train", rk.Schema(name="x", fields={"x": rk.FieldSpec(codec="scalar")}), [1])
    (staged,) = [key for key in rk.Manifest.load(path).split("train").field_groups or {} if "~" in key]
    assert re.fullmatch(r"x~[0-9a-f]{8}", staged), "listed under the group's name and its run's token"
    with pytest.raises(DatasetError, match=rf"has a field group being added \({staged}\); finish it"):
        _append(path, _rows(5, 1, embedding=_vector))
    rk.remove_fields(path, "train", staged)
    _append(path, _rows(5, 1, embedding=_vector))
    assert [r[0] for r in _read(path)] == list(range(6))
    rk.write_dataset(_rows(0, 2), path, BASE, "test", append=True, progress=False)
    rk.write_dataset(_rows(2, 1), path, BASE, "test", append=True, progress=False)
    assert sorted(next(rk.iter_records(path, "test"))) == ["caption", "id"]
    assert len(list(rk.iter_records(path, "test"))) == 3
