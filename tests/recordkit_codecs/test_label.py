"""The ``label`` codec: names and ids, single and multi-label, multi-hot, bad labels."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _codec_io import bind, encode_error, parse_eager, read_numpy, read_tf, run_doc_examples, write
from hypothesis import given
from hypothesis import strategies as st

import recordkit as rk
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)
from recordkit.testing import BadInput, CodecCase, check_codec
from recordkit_codecs.label import LabelCodec

NAMES = ["cat", "dog", "bird"]


def test_single_label_by_name_or_id(tmp_path: Path) -> None:
    bound = bind(label={"codec": "label", "options": {"names": NAMES}})
    values = ["dog", 2, np.int64(0), "cat", np.uint8(1)]
    path = write(bound, [{"label": v} for v in values], tmp_path / "l.tfrecord")

    (batch,) = read_tf(bound, path, batch=5)
    assert batch["label"].dtype.name == "int64"
    assert batch["label"].shape == (5,)
    assert batch["label"].numpy().tolist() == [1, 2, 0, 0, 1]
    rows = read_numpy(bound, path)
    assert [r["label"] for r in rows] == [1, 2, 0, 0, 1]
    assert all(type(r["label"]) is int for r in rows)


def test_ids_without_names_are_bounded_by_num_classes(tmp_path: Path) -> None:
    bound = bind(label={"codec": "label", "options": {"num_classes": 10}})
    path = write(bound, [{"label": 9}, {"label": 0}], tmp_path / "n.tfrecord")
    assert [r["label"] for r in read_numpy(bound, path)] == [9, 0]
    error = encode_error(bound, {"label": 10}, index=4)
    assert "record 4, field 'label'" in str(error)
    assert "label id 10 is out of range (ids are [0, 10))" in str(error)


def test_multi_label_decodes_to_ragged_ids(tmp_path: Path) -> None:
    bound = bind(tags={"codec": "label", "options": {"names": NAMES, "multi": True}})
    values: list[Any] = [["bird", "cat"], [], [1], ("dog", 0, "bird"), np.array([2])]
    path = write(bound, [{"tags": v} for v in values], tmp_path / "m.tfrecord")
    expected = [[2, 0], [], [1], [1, 0, 2], [2]]

    (batch,) = read_tf(bound, path, batch=5)
    assert batch["tags"].dtype.name == "int64"
    assert batch["tags"].to_list() == expected
    rows = read_numpy(bound, path)
    assert [r["tags"].tolist() for r in rows] == expected
    assert all(r["tags"].dtype == np.int64 for r in rows)


def test_multi_hot_decodes_to_dense_float_vectors(tmp_path: Path) -> None:
    bound = bind(tags={"codec": "label", "options": {"names": NAMES, "multi": True, "multi_hot": True}})
    path = write(bound, [{"tags": ["bird", "cat"]}, {"tags": []}, {"tags": ["dog"]}], tmp_path / "h.tfrecord")
    expected = [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]

    (batch,) = read_tf(bound, path, batch=3)
    assert batch["tags"].dtype.name == "float32"
    assert batch["tags"].numpy().tolist() == expected
    rows = read_numpy(bound, path)
    assert [r["tags"].tolist() for r in rows] == expected
    assert rows[0]["tags"].dtype == np.float32


@pytest.mark.parametrize(
    ("options", "value", "reason"),
    [
        ({"names": NAMES}, "unicorn", r"unknown label 'unicorn' \(names: 'cat', 'dog', 'bird'\)"),
        ({"names": NAMES}, 3, r"label id 3 is out of range \(ids are \[0, 3\)\)"),
        ({"names": NAMES}, -1, r"label id -1 is out of range"),
        ({}, -2, r"label id -2 is out of range \(ids are non-negative\)"),
        ({"num_classes": 4}, "cat", r"label 'cat' is a name, but the field declares no names"),
        ({"names": NAMES}, 1.5, r"a label is a class name or an integer id, got float 1.5"),
        ({"names": NAMES}, True, r"got bool True"),
        ({"names": NAMES}, None, r"missing"),
        ({"names": NAMES, "multi": True}, "cat", r"a multi-label field takes a list of labels, got str"),
        ({"names": NAMES, "multi": True}, ["cat", "unicorn"], r"unknown label 'unicorn'"),
        ({"names": NAMES, "multi": True}, ["cat", 0], r"label 0 is given more than once"),
        ({"names": NAMES, "multi": True}, [7], r"label id 7 is out of range"),
    ],
)
def test_bad_labels_name_field_record_and_label(options: dict[str, Any], value: Any, reason: str) -> None:
    bound = bind(label={"codec": "label", "options": options})
    error = encode_error(bound, {"label": value}, index=2)
    assert "record 2, field 'label'" in str(error)
    assert re.search(reason, str(error)), str(error)


def test_long_name_lists_are_abbreviated_in_errors() -> None:
    names = [f"class{i}" for i in range(50)]
    error = encode_error(bind(label={"codec": "label", "options": {"names": names}}), {"label": "nope"})
    assert "... (50 in all)" in str(error)
    assert "class49" not in str(error)


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"names": ["a", "b", "a"]}, r"names are listed twice: \['a'\]"),
        ({"names": []}, r"at least one class"),
        ({"names": ["a", ""]}, r"non-empty"),
        ({"names": ["a", "b"], "num_classes": 3}, r"num_classes is 3 but names lists 2"),
        ({"num_classes": 0}, r"num_classes"),
        ({"multi_hot": True, "num_classes": 3}, r"multi_hot needs multi: true"),
        ({"multi": True, "multi_hot": True}, r"multi_hot needs names or num_classes"),
    ],
)
def test_invalid_options(options: dict[str, Any], reason: str) -> None:
    with pytest.raises(rk.errors.CodecOptionsError, match=reason) as info:
        bind(label={"codec": "label", "options": options})
    assert info.value.field == "label"


def test_optional_default_and_sequence_fields(tmp_path: Path) -> None:
    bound = bind(
        maybe={"codec": "label", "options": {"names": NAMES}, "optional": True},
        fallback={"codec": "label", "options": {"names": NAMES}, "default": "cat"},
        several={"codec": "label", "options": {"names": NAMES}, "sequence": True},
        multis={"codec": "label", "options": {"names": NAMES, "multi": True}, "sequence": True},
        hot={
            "codec": "label",
            "options": {"names": NAMES, "multi": True, "multi_hot": True},
            "optional": True,
        },
    )
    records: list[dict[str, Any]] = [
        {
            "maybe": "bird",
            "fallback": "dog",
            "several": ["dog", "dog"],
            "multis": [["cat"], [], ["dog", "bird"]],
        },
        {"several": [], "multis": [], "hot": ["dog", "bird"]},
        {"maybe": 0, "several": ["bird"], "multis": [[2]]},
    ]
    path = write(bound, records, tmp_path / "o.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    assert batch["maybe/present"].numpy().tolist() == [True, False, True]
    assert batch["maybe"].numpy().tolist() == [2, 0, 0]
    assert batch["fallback"].numpy().tolist() == [1, 0, 0]
    assert batch["several"].to_list() == [[1, 1], [], [2]]
    assert batch["multis"].to_list() == [[[0], [], [1, 2]], [], [[2]]]
    assert batch["hot/present"].numpy().tolist() == [False, True, False]
    assert batch["hot"].numpy().tolist() == [[0, 0, 0], [0, 1, 1], [0, 0, 0]]

    rows = read_numpy(bound, path)
    assert [r["maybe"] for r in rows] == [2, None, 0]
    assert [r["fallback"] for r in rows] == [1, 0, 0]
    assert [r["several"] for r in rows] == [[1, 1], [], [2]]
    assert [[m.tolist() for m in r["multis"]] for r in rows] == [[[0], [], [1, 2]], [], [[2]]]
    assert rows[0]["hot"] is None
    assert rows[1]["hot"].tolist() == [0, 1, 1]


@given(st.lists(st.integers(0, 999), min_size=1, max_size=8))
def test_random_single_ids_round_trip(ids: list[int]) -> None:
    bound = bind(label={"codec": "label", "options": {"num_classes": 1000}})
    encoder = rk.RecordEncoder(bound)
    serialized = [encoder.encode({"label": i}) for i in ids]
    assert parse_eager(bound, serialized)["label"].numpy().tolist() == ids
    assert [decode_record_numpy(bound.fields, s)["label"] for s in serialized] == ids


@given(st.lists(st.lists(st.integers(0, 19), unique=True, max_size=20), min_size=1, max_size=6))
def test_random_multi_labels_round_trip(labels: list[list[int]]) -> None:
    names = [f"c{i}" for i in range(20)]
    ragged = bind(tags={"codec": "label", "options": {"names": names, "multi": True}})
    hot = bind(tags={"codec": "label", "options": {"names": names, "multi": True, "multi_hot": True}})
    given_names = [[names[i] for i in row] for row in labels]
    serialized = [rk.RecordEncoder(ragged).encode({"tags": row}) for row in given_names]
    assert parse_eager(ragged, serialized)["tags"].to_list() == labels
    assert [decode_record_numpy(ragged.fields, s)["tags"].tolist() for s in serialized] == labels
    vectors = parse_eager(hot, serialized)["tags"].numpy()
    assert [sorted(np.flatnonzero(v).tolist()) for v in vectors] == [sorted(row) for row in labels]


def test_conformance_single(tmp_path: Path) -> None:
    report = check_codec(
        LabelCodec({"names": NAMES}),
        cases=[CodecCase("dog", expected=1), CodecCase(2), CodecCase("cat", expected=0)],
        bad_inputs=[BadInput("fish", match="unknown label 'fish'"), BadInput(3, match="out of range")],
        tmp_path=tmp_path,
    )
    assert "column decode equals the record-by-record decode" in report.checks


def test_conformance_multi(tmp_path: Path) -> None:
    check_codec(
        LabelCodec({"names": NAMES, "multi": True}),
        cases=[CodecCase(["dog", "cat"], expected=[1, 0]), CodecCase([], expected=[]), CodecCase([2])],
        bad_inputs=[
            BadInput("dog", match="list of labels"),
            BadInput(["dog", "dog"], match="more than once"),
        ],
        tmp_path=tmp_path,
    )


def test_conformance_multi_hot(tmp_path: Path) -> None:
    check_codec(
        LabelCodec({"names": NAMES, "multi": True, "multi_hot": True}),
        cases=[
            CodecCase(["dog", "cat"], expected=np.array([1.0, 1.0, 0.0], np.float32)),
            CodecCase([], expected=np.zeros(3, np.float32)),
            CodecCase([2], expected=np.array([0.0, 0.0, 1.0], np.float32)),
        ],
        bad_inputs=[BadInput(["bird", 7], match=r"label id 7 is out of range \(ids are \[0, 3\)\)")],
        tmp_path=tmp_path,
    )


def test_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_doc_examples("label.md", tmp_path, monkeypatch) >= 1
