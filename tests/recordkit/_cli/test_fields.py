"""``recordkit add-fields`` and ``remove-fields`` (sdk/recordkit/_cli/fields.py): field
groups from JSON Lines and CSV tables keyed by record index or by a field, checked by
``recordkit verify``, and every bad table refused naming its line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner, Result

import recordkit as rk
from recordkit.cli import main

FIELDS_YAML = """\
name: predictions
fields:
  score: {codec: scalar, options: {dtype: float32}}
  embedding: {codec: tensor, options: {dtype: float32, shape: [3]}}
"""
TRAIN = 12


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _schema(tmp_path: Path, text: str = FIELDS_YAML) -> str:
    path = tmp_path / "fields.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_add_fields_from_jsonl_rows_keyed_by_record_index_in_any_order(dataset: Path, tmp_path: Path) -> None:
    table = tmp_path / "preds.jsonl"
    lines = [json.dumps({"index": i, "score": i / 2, "embedding": [i, i, i]}) for i in reversed(range(TRAIN))]
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run("add-fields", str(dataset), str(table), "--schema", _schema(tmp_path), "--name", "preds")
    assert result.exit_code == 0, result.output
    assert result.output == "added score, embedding to 12 records of split 'train' in 3 shards\n"
    got = list(rk.iter_records(dataset, fields=["score", "embedding", "label"]))
    assert [float(r["score"]) for r in got] == [i / 2 for i in range(TRAIN)]
    np.testing.assert_array_equal(got[5]["embedding"], np.full(3, 5, np.float32))
    stats = run("stats", str(dataset))
    assert stats.exit_code == 0, stats.output
    assert "score (scalar)" in stats.output
    verified = run("verify", str(dataset), "-q")
    assert verified.exit_code == 0, verified.output
    # train's 3 shards and its group's 3, test's 1; the group's records are not counted twice
    assert "verified 7 shards of 2 splits: 15 records" in verified.output
    group = (rk.Manifest.load(dataset).split("train").field_groups or {})["preds"]
    damaged = dataset / group.shards[1].file
    damaged.write_bytes(damaged.read_bytes()[:-1] + b"\0")
    failed = run("verify", str(dataset), "-q")
    assert failed.exit_code == 1
    assert f"FAIL  {group.shards[1].file}" in failed.output
    assert "sha256" in failed.output
    damaged.unlink()
    removed = run("remove-fields", str(dataset), "preds")
    assert removed.exit_code == 0, removed.output
    assert "score" not in next(rk.iter_records(dataset))


def test_add_fields_from_a_csv_keyed_by_a_field_of_the_split(tmp_path: Path) -> None:
    root = tmp_path / "data"
    schema = rk.Schema(name="items", fields={"name": rk.FieldSpec(codec="text")})
    rk.write_dataset([{"name": f"item-{i}"} for i in range(7)], schema, root, shard_records=3, progress=False)
    table = tmp_path / "scores.csv"
    table.write_text("name,score\n" + "".join(f"item-{i},{10 * i}\n" for i in (3, 1, 0, 6, 5, 4, 2)))
    fields = _schema(tmp_path, "name: s\nfields:\n  score: {codec: scalar, options: {dtype: float32}}\n")
    result = run("add-fields", str(root), str(table), "--schema", fields, "--key", "name")
    assert result.exit_code == 0, result.output
    assert [float(r["score"]) for r in rk.iter_records(root)] == [10.0 * i for i in range(7)]
    again = run("add-fields", str(root), str(table), "--schema", fields, "--key", "name")
    assert again.exit_code == 1
    assert "already has a field group 'score'" in again.output
    assert "--replace" in again.output
    assert "Traceback" not in again.output


def test_a_table_that_does_not_fit_is_refused_naming_its_line(dataset: Path, tmp_path: Path) -> None:
    fields = _schema(tmp_path)
    cases = {
        "dup.jsonl": (
            '{"index": 0, "score": 1}\n{"index": 0, "score": 2}\n',
            "line 2: index 0 is also on line 1",
        ),
        "far.jsonl": (
            '{"index": 99, "score": 1}\n',
            "line 1: index 99 is not a record of the split (0 to 11)",
        ),
        "few.jsonl": (
            '{"index": 0, "score": 1, "embedding": [1, 2, 3]}\n',
            "has no row for records 1, 2, 3, 4, 5 ...",
        ),
        "extra.jsonl": (
            '{"index": 0, "colour": 1}\n',
            "line 1: has columns that are not fields of the group: colour",
        ),
        "nokey.jsonl": ('{"score": 1}\n', "line 1: has no 'index' column"),
    }
    for name, (text, message) in cases.items():
        table = tmp_path / name
        table.write_text(text, encoding="utf-8")
        result = run("add-fields", str(dataset), str(table), "--schema", fields)
        assert result.exit_code == 1, (name, result.output)
        assert message in result.output, (name, result.output)
        assert "Traceback" not in result.output
    assert "score" not in next(rk.iter_records(dataset))
