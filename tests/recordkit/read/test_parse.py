"""feature_spec and make_parser: the parse spec and the batched parser, from the schema."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _reader_support import SCHEMA, assert_record, expected, make_records, rows, write

import recordkit as rk
from recordkit.read._parse import field_plan


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(6, seed=2)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> list[str]:
    path = tmp_path_factory.mktemp("parse") / "data"
    manifest = write(path, records, shard_records=3)
    return [str(path / s.file) for s in manifest.split("train").shards]


def test_the_spec_of_one_field_holds_only_its_keys() -> None:
    spec = rk.feature_spec(SCHEMA, ["image"])
    assert set(spec) == {"image", "image/height", "image/width", "image/channels"}
    assert spec["image"] == tf.io.FixedLenFeature([], tf.string)
    assert set(rk.feature_spec(SCHEMA, "note")) == {"note", "note/present"}
    boxes = rk.feature_spec(SCHEMA, ["objects"])
    assert set(boxes) == {"objects", "objects/labels", "objects/score"}
    assert boxes["objects"] == tf.io.FixedLenFeature([], tf.string)  # packed: one bytes value


def test_schema_feature_spec_is_the_same_spec() -> None:
    assert rk.feature_spec(SCHEMA) == rk.feature_spec(SCHEMA)
    assert rk.feature_spec(SCHEMA, ["label", "words"]) == rk.feature_spec(SCHEMA, ["label", "words"])
    every_key = {key for field in SCHEMA.bind().fields for key in field.keys}
    assert set(rk.feature_spec(SCHEMA)) == every_key


def test_the_parser_decodes_every_field(files: list[str], records: list[dict[str, Any]]) -> None:
    ds = tf.data.TFRecordDataset(files).batch(4).map(rk.make_parser(SCHEMA))
    got = [row for batch in ds for row in rows(batch)]
    for record, row in zip(records, got, strict=True):
        assert_record(expected(record), row)


def test_a_projection_parses_and_decodes_only_its_fields(
    files: list[str], records: list[dict[str, Any]]
) -> None:
    parse = rk.make_parser(SCHEMA, ["caption", "note"])
    graph = tf.function(parse).get_concrete_function(tf.TensorSpec([None], tf.string)).graph
    (op,) = [op for op in graph.get_operations() if op.type.startswith("ParseExample")]
    keys = set()
    for tensor in op.inputs[1:]:
        if tensor.op.type == "Const" and tensor.dtype == tf.string:
            keys |= {k.decode() for k in tf.make_ndarray(tensor.op.get_attr("value")).reshape(-1)}
    assert keys == {"caption", "note", "note/present"}
    assert not {"DecodePng", "DecodeJpeg", "DecodeWav", "DecodeRaw"} & {
        o.type for o in graph.get_operations()
    }
    out = parse(next(iter(tf.data.TFRecordDataset(files).batch(6))))
    assert set(out) == {"caption", "note", "note/present"}
    assert [v.decode() for v in out["caption"].numpy()] == [r["caption"] for r in records]


def test_optional_and_sequence_fields_in_one_batch(tmp_path: Path) -> None:
    schema = rk.Schema(
        name="shapes",
        fields={
            "maybe": rk.FieldSpec(codec="tensor", options={"dtype": "int32", "shape": [2]}, optional=True),
            "many": rk.FieldSpec(
                codec="tensor", options={"dtype": "float32", "shape": [None]}, sequence=True
            ),
            "both": rk.FieldSpec(codec="text", optional=True, sequence=True),
        },
    )
    records = [
        {
            "maybe": np.array([1, 2], np.int32),
            "many": [np.ones(2, np.float32), np.zeros(0, np.float32)],
            "both": ["a", "b"],
        },
        {"maybe": None, "many": [], "both": None},
        {"maybe": np.array([3, 4], np.int32), "many": [np.arange(3, dtype=np.float32)], "both": []},
    ]
    rk.write_dataset(records, schema, tmp_path / "d", progress=False)
    out = next(iter(rk.load_dataset(tmp_path / "d", batch_size=3)))
    assert out["maybe/present"].numpy().tolist() == [True, False, True]
    assert out["maybe"].numpy().tolist() == [[1, 2], [0, 0], [3, 4]]
    assert out["many"].to_list() == [[[1.0, 1.0], []], [], [[0.0, 1.0, 2.0]]]
    assert out["both/present"].numpy().tolist() == [True, False, True]
    assert out["both"].to_list() == [[b"a", b"b"], [], []]


def test_field_plans_are_plain_literals() -> None:
    for field in SCHEMA.bind().fields:
        plan = field_plan(field)
        assert ast.literal_eval(repr(plan)) == plan
