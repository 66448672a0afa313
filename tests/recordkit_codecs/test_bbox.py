"""The ``bbox`` codec: formats, canonical storage, tolerance, labels, image-size checks."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _codec_io import (
    assert_stored_near_payload,
    bind,
    encode_error,
    field_error,
    parse_eager,
    read_numpy,
    read_tf,
    run_doc_examples,
    write,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import recordkit as rk
from recordkit.format._example import decode_example  # private: the stored wire values, without TensorFlow
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)
from recordkit.read._parse import (  # private: the batched parse that load_dataset(pad=True) runs
    make_padded_parser,
)
from recordkit.testing import BadInput, CodecCase, check_codec
from recordkit_codecs.bbox import BOX_FORMATS, BBoxCodec, _as_boxes, _plain_boxes, convert_boxes

# Normalized xyxy boxes per record: 2 boxes, none, 3 (one touching the border).
XYXY = [
    np.array([[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 1.0, 1.0]]),
    np.zeros((0, 4)),
    np.array([[0.25, 0.125, 0.75, 0.375], [0.3, 0.3, 0.3, 0.3], [0.9, 0.01, 1.0, 0.99]]),
]


def _in(fmt: str, xyxy: np.ndarray) -> np.ndarray:
    return convert_boxes(xyxy, "xyxy", fmt)


@pytest.mark.parametrize("fmt", BOX_FORMATS)
def test_each_format_round_trips_within_1e_6(tmp_path: Path, fmt: str) -> None:
    bound = bind(boxes={"codec": "bbox", "options": {"format": fmt}})
    given_boxes = [_in(fmt, b) for b in XYXY]
    path = write(bound, [{"boxes": b.tolist()} for b in given_boxes], tmp_path / "b.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    boxes = batch["boxes"]
    assert isinstance(boxes, tf.RaggedTensor)
    assert boxes.dtype == tf.float32
    assert boxes.shape.as_list() == [3, None, 4]
    assert boxes.row_lengths().numpy().tolist() == [2, 0, 3]
    for want, got in zip(given_boxes, boxes, strict=True):
        np.testing.assert_allclose(got.numpy().reshape(-1, 4), want, rtol=0, atol=1e-6)
    for want, row in zip(given_boxes, read_numpy(bound, path), strict=True):
        assert row["boxes"].dtype == np.float32
        assert row["boxes"].shape == want.shape
        np.testing.assert_allclose(row["boxes"], want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("layout", ["packed", "lists"])
@pytest.mark.parametrize("fmt", BOX_FORMATS)
def test_boxes_are_stored_as_float32_xyxy_whatever_the_format(fmt: str, layout: str) -> None:
    bound = bind(b={"codec": "bbox", "options": {"format": fmt, "layout": layout}})
    stored = decode_example(rk.RecordEncoder(bound).encode({"b": _in(fmt, XYXY[2])}))
    kind, values = stored["b"]
    if layout == "packed":  # one bytes value: the float32 numbers, little-endian
        assert kind is rk.WireKind.BYTES
        assert len(values) == 1
        values = np.frombuffer(values[0], "<f4")
    else:
        assert kind is rk.WireKind.FLOAT
    np.testing.assert_allclose(values.reshape(-1, 4), XYXY[2], rtol=0, atol=1e-7)


def test_the_format_is_a_decode_option_left_out_of_the_fingerprint() -> None:
    # Stored as xyxy whatever the format: what is stored, and so the fingerprint, is the same.
    prints = {bind(b={"codec": "bbox", "options": {"format": f}}).fingerprint() for f in BOX_FORMATS}
    assert len(prints) == 1
    assert BBoxCodec.decode_options == {"format"}
    pixels = bind(b={"codec": "bbox", "options": {"normalized": False}}).fingerprint()
    assert pixels not in prints  # what the numbers mean is stored meaning


def test_a_reader_gets_the_boxes_in_the_format_its_schema_asks_for(tmp_path: Path) -> None:
    written = rk.Schema(name="det", fields={"b": rk.FieldSpec(codec="bbox", options={"format": "xywh"})})
    records = [{"b": _in("xywh", XYXY[2])}, {"b": _in("xywh", XYXY[1])}]
    rk.write_dataset(records, written, tmp_path, progress=False)
    for fmt in BOX_FORMATS:
        reading = rk.Schema(name="det", fields={"b": rk.FieldSpec(codec="bbox", options={"format": fmt})})
        report = rk.check_compatibility(written, reading)
        assert report.compatible
        if fmt != "xywh":
            assert [(d.kind, d.compatible) for d in report.differences] == [("options", True)]
            assert f"format: 'xywh' -> '{fmt}'" in report.differences[0].detail
        rows = list(rk.iter_records(tmp_path, schema=reading))
        batch = next(iter(rk.load_dataset(tmp_path, schema=reading, batch_size=2)))
        for i, want in enumerate([_in(fmt, XYXY[2]), _in(fmt, XYXY[1])]):
            np.testing.assert_allclose(rows[i]["b"], want, rtol=0, atol=1e-6)
            np.testing.assert_allclose(batch["b"][i].numpy(), want, rtol=0, atol=1e-6)


def test_many_boxes_cost_their_float32_values_by_the_byte_breakdown() -> None:
    """5000 boxes with labels and scores: the field's share of the record
    (rk.byte_breakdown) is 16 bytes a box (four float32), one varint byte a label and
    4 bytes a score, plus a few bytes of keys, tags and lengths."""
    rng = np.random.default_rng(0)
    count = 5000
    low = rng.uniform(0, 0.5, (count, 2))
    boxes = np.concatenate([low, low + rng.uniform(0, 0.5, (count, 2))], axis=1)
    value = {"boxes": boxes, "labels": rng.integers(0, 3, count), "score": rng.uniform(0, 1, count)}
    bound = bind(objects={"codec": "bbox", "options": {"labels": ["a", "b", "c"], "extras": ["score"]}})
    payload = count * (16 + 1 + 4)
    share = assert_stored_near_payload(bound, "objects", value, payload)
    assert share - payload < 100  # three keys, their tags and lengths


def test_pixel_boxes(tmp_path: Path) -> None:
    bound = bind(b={"codec": "bbox", "options": {"format": "xywh", "normalized": False}})
    given_boxes = [np.array([[10, 20, 300, 400], [0, 0, 4000, 3000]]), np.array([[12.5, 7.25, 0.5, 100.75]])]
    path = write(bound, [{"b": b} for b in given_boxes], tmp_path / "px.tfrecord")
    rows = read_numpy(bound, path)
    (batch,) = read_tf(bound, path, batch=2)
    for want, row, got in zip(given_boxes, rows, batch["b"], strict=True):
        np.testing.assert_array_equal(row["b"], want.astype(np.float32))  # exact in float32
        np.testing.assert_array_equal(got.numpy(), want.astype(np.float32))


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ([[0.0, 0.0, 1.0000000000000002, 1.0]], [0.0, 0.0, 1.0, 1.0]),
        ([[-1e-9, 0.5, 0.5, 1.0 + 5e-7]], [0.0, 0.5, 0.5, 1.0]),
        ([[0.5, 0.2, 0.5 - 1e-7, 0.3]], [0.5, 0.2, 0.5, 0.3]),  # min > max by noise
    ],
)
def test_coordinates_within_tolerance_are_clamped(value: list[list[float]], stored: list[float]) -> None:
    bound = bind(b={"codec": "bbox"})
    decoded = decode_record_numpy(bound.fields, rk.RecordEncoder(bound).encode({"b": value}))["b"]
    np.testing.assert_allclose(decoded, [stored], rtol=0, atol=1e-7)
    assert decoded.min() >= 0.0
    assert decoded.max() <= 1.0


def test_tolerance_is_an_option() -> None:
    strict = bind(b={"codec": "bbox", "options": {"tolerance": 0}})
    loose = bind(b={"codec": "bbox", "options": {"tolerance": 0.02}})
    box = {"b": [[0.0, 0.0, 1.01, 0.5]]}
    assert "x_max 1.01 is outside [0, 1] (tolerance 0)" in str(encode_error(strict, box))
    decoded = decode_record_numpy(loose.fields, rk.RecordEncoder(loose).encode(box))["b"]
    np.testing.assert_allclose(decoded, [[0.0, 0.0, 1.0, 0.5]], atol=1e-7)


def test_labels_and_extras_in_both_input_forms(tmp_path: Path) -> None:
    options = {"labels": ["cat", "dog", "person"], "extras": ["score", "iou"], "format": "cxcywh"}
    bound = bind(objects={"codec": "bbox", "options": options})
    records = [
        {"objects": {"boxes": [[0.5, 0.5, 0.2, 0.4], [0.2, 0.3, 0.1, 0.1]], "labels": ["dog", 2],
                     "score": [0.9, 0.25], "iou": [1.0, 0.5]}},
        {"objects": []},
        {"objects": [{"box": [0.5, 0.5, 1.0, 1.0], "label": "cat", "score": 0.5, "iou": 0.0}]},
        {"objects": {"boxes": np.zeros((0, 4)), "labels": [], "score": [], "iou": []}},
    ]  # fmt: skip
    path = write(bound, records, tmp_path / "l.tfrecord")
    want_boxes = [[[0.5, 0.5, 0.2, 0.4], [0.2, 0.3, 0.1, 0.1]], [], [[0.5, 0.5, 1.0, 1.0]], []]

    (batch,) = read_tf(bound, path, batch=4)
    objects = batch["objects"]
    assert set(objects) == {"boxes", "labels", "score", "iou"}
    assert objects["labels"].dtype == tf.int64
    assert objects["labels"].to_list() == [[1, 2], [], [0], []]
    np.testing.assert_allclose(objects["score"].flat_values.numpy(), [0.9, 0.25, 0.5], rtol=1e-7)
    assert objects["iou"].to_list() == [[1.0, 0.5], [], [0.0], []]
    for want, got in zip(want_boxes, objects["boxes"], strict=True):
        np.testing.assert_allclose(got.numpy().reshape(-1, 4), np.reshape(want, (-1, 4)), atol=1e-6)

    rows = read_numpy(bound, path)
    assert [r["objects"]["labels"].tolist() for r in rows] == [[1, 2], [], [0], []]
    assert rows[0]["objects"]["score"].dtype == np.float32
    for want, row in zip(want_boxes, rows, strict=True):
        np.testing.assert_allclose(row["objects"]["boxes"], np.reshape(want, (-1, 4)), atol=1e-6)


@pytest.mark.parametrize(
    ("options", "value", "reason"),
    [
        ({}, [[0.1, np.nan, 0.2, 0.3]], r"box 0 \[0.1, nan, 0.2, 0.3\] \(xyxy\) has a non-finite coordinate"),
        ({}, [[0.1, 0.1, 0.2, 0.2], [0.1, 0.1, np.inf, 0.3]], r"box 1 .* non-finite"),
        ({}, [[0.6, 0.1, 0.2, 0.3]], r"box 0 \[0.6, 0.1, 0.2, 0.3\] \(xyxy\): x_min 0.6 > x_max 0.2"),
        ({"format": "xywh"}, [[0.1, 0.1, 0.2, -0.05]], r"\(xywh\): y_min 0.1 > y_max 0.05"),
        ({"format": "yxyx"}, [[0.1, 0.2, 0.3, 1.5]], r"\(yxyx\): x_max 1.5 is outside \[0, 1\]"),
        ({}, [[0.1, 0.1, 1.2, 0.3]], r"x_max 1.2 is outside \[0, 1\] .*set normalized: false"),
        ({"normalized": False}, [[-3, 0, 10, 10]], r"x_min -3 is negative"),
        ({"normalized": False}, [[0, 0, 1e39, 10]], r"overflows float32"),
        ({}, [0.1, 0.1, 0.2, 0.2], r"for one box give \[\[a, b, c, d\]\]"),
        ({}, [[0.1, 0.1, 0.2]], r"boxes must be an \(n, 4\) array, got shape \(1, 3\)"),
        ({}, [["a", "b", "c", "d"]], r"boxes must be numbers"),
        ({}, [[0.1, 0.2, 0.3, 0.4], [0.1]], r"boxes are not an \(n, 4\) array"),
        ({}, {"boxes": [[0, 0, 1, 1]], "labels": [0]}, r"unknown keys \['labels'\]"),
        ({"labels": ["a"]}, [[0, 0, 1, 1]], r"this field has labels for each box: give \{'boxes'"),
        ({"labels": ["a"]}, {"boxes": [[0, 0, 1, 1]]}, r"missing keys \['labels'\]"),
        ({"labels": ["a", "b"]}, {"boxes": [[0, 0, 1, 1]], "labels": []}, r"1 boxes but 0 labels"),
        ({"labels": ["a", "b"]}, {"boxes": [[0, 0, 1, 1]], "labels": ["c"]}, r"box 0: unknown label 'c'"),
        ({"labels": ["a", "b"]}, {"boxes": [[0, 0, 1, 1]], "labels": [2]}, r"label id 2 is out of range"),
        ({"labels": ["a", "b"]}, {"boxes": [[0, 0, 1, 1]], "labels": "a"}, r"labels must be a list, got str"),
        ({"labels": ["a"]}, {"boxes": [[0, 0, 1, 1]], "labels": [0.5]}, r"got float 0.5"),
        ({"extras": ["score"]}, {"boxes": [[0, 0, 1, 1]], "score": [np.nan]}, r"score nan is not a finite"),
        (
            {"extras": ["score"]},
            {"boxes": [[0, 0, 1, 1]], "score": [1, 2]},
            r"1 boxes but 2 values of 'score'",
        ),
        (
            {"labels": ["a"]},
            [{"box": [0, 0, 1, 1]}],
            r"box 0: has keys \['box'\], expected \['box', 'label'\]",
        ),
        ({}, [{"box": [0, 0, 1, 1]}, [0, 0, 1, 1]], r"mixes per-box dicts with other values"),
    ],
)
def test_bad_boxes_name_field_record_and_reason(options: dict[str, Any], value: Any, reason: str) -> None:
    bound = bind(objects={"codec": "bbox", "options": options})
    error = field_error(bound, "objects", value, index=9)
    assert re.search(reason, str(error)), str(error)


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"format": "xyzw"}, r"option format"),
        ({"labels": ["a", "a"]}, r"labels lists a class name twice"),
        ({"labels": []}, r"at least one"),
        ({"extras": ["labels"]}, r"invalid extra name 'labels'"),
        ({"extras": ["a/b"]}, r"invalid extra name 'a/b'"),
        ({"extras": ["s", "s"]}, r"extras lists a name twice"),
        ({"tolerance": -1}, r"option tolerance"),
    ],
)
def test_invalid_options(options: dict[str, Any], reason: str) -> None:
    with pytest.raises(rk.errors.CodecOptionsError, match=reason):
        bind(b={"codec": "bbox", "options": options})


def _image_schema(**bbox_options: Any) -> rk.BoundSchema:
    options = {"normalized": False, "image_field": "image", **bbox_options}
    return bind(image={"codec": "image"}, boxes={"codec": "bbox", "options": options})


def test_pixel_boxes_are_checked_against_the_linked_image(tmp_path: Path) -> None:
    bound = _image_schema(format="xywh")
    image = np.zeros((48, 64, 3), dtype=np.uint8)  # height 48, width 64
    fits = {"image": image, "boxes": [[0, 0, 64, 48], [10, 10, 54.0000005, 38]]}
    path = write(bound, [fits], tmp_path / "img.tfrecord")
    np.testing.assert_allclose(
        read_numpy(bound, path)[0]["boxes"], [[0, 0, 64, 48], [10, 10, 54, 38]], atol=1e-5
    )

    error = encode_error(bound, {"image": image, "boxes": [[0, 0, 10, 10], [60, 0, 10, 10]]}, index=4)
    assert "record 4, field 'boxes'" in str(error)
    assert "box 1: x_max 70 is outside the width 64 of image field 'image'" in str(error)
    error = encode_error(bound, {"image": image, "boxes": [[0, 40, 10, 10]]})
    assert "y_max 50 is outside the height 48" in str(error)


def test_image_link_needs_an_existing_field_with_a_size() -> None:
    with pytest.raises(rk.errors.SchemaError, match="refers to field 'picture'"):
        bind(boxes={"codec": "bbox", "options": {"normalized": False, "image_field": "picture"}})
    bound = bind(
        caption={"codec": "text"},
        boxes={"codec": "bbox", "options": {"normalized": False, "image_field": "caption"}},
    )
    error = encode_error(bound, {"caption": "x", "boxes": [[0, 0, 1, 1]]})
    assert "image_field 'caption' stores no 'height'" in str(error)


def test_normalized_boxes_with_an_image_link_skip_the_pixel_check(tmp_path: Path) -> None:
    bound = _image_schema(normalized=True)
    record = {"image": np.zeros((4, 4), dtype=np.uint8), "boxes": [[0.5, 0.5, 1.0, 1.0]]}
    path = write(bound, [record], tmp_path / "n.tfrecord")
    np.testing.assert_allclose(read_numpy(bound, path)[0]["boxes"], [[0.5, 0.5, 1.0, 1.0]])


def test_optional_default_and_sequence_fields(tmp_path: Path) -> None:
    bound = bind(
        maybe={"codec": "bbox", "options": {"format": "xywh"}, "optional": True},
        dflt={"codec": "bbox", "default": []},
        frames={"codec": "bbox", "options": {"labels": ["a", "b"]}, "sequence": True},
    )
    records: list[dict[str, Any]] = [
        {"maybe": [[0.1, 0.1, 0.2, 0.2]], "dflt": [[0, 0, 1, 1]],
         "frames": [{"boxes": [[0, 0, 0.5, 0.5]], "labels": ["b"]}, []]},
        {"frames": []},
        {"maybe": [], "frames": [{"boxes": [[0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]], "labels": [0, 1]}]},
    ]  # fmt: skip
    path = write(bound, records, tmp_path / "o.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    assert batch["maybe/present"].numpy().tolist() == [True, False, True]
    np.testing.assert_allclose(
        batch["maybe"].flat_values.numpy().reshape(-1), [0.1, 0.1, 0.2, 0.2], atol=1e-6
    )
    assert batch["maybe"].row_lengths().numpy().tolist() == [1, 0, 0]
    assert batch["dflt"].row_lengths().numpy().tolist() == [1, 0, 0]
    frames = batch["frames"]
    assert frames["labels"].to_list() == [[[1], []], [], [[0, 1]]]
    assert frames["boxes"].row_lengths().numpy().tolist() == [2, 0, 1]
    np.testing.assert_allclose(frames["boxes"][2][0].numpy(), [[0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1]], atol=1e-6)

    rows = read_numpy(bound, path)
    assert rows[1]["maybe"] is None
    assert rows[2]["maybe"].shape == (0, 4)
    assert [len(r["frames"]) for r in rows] == [2, 0, 1]
    assert rows[0]["frames"][0]["labels"].tolist() == [1]
    assert rows[0]["frames"][1]["boxes"].shape == (0, 4)


def _normalized_xyxy() -> st.SearchStrategy[np.ndarray]:
    """(n, 4) normalized xyxy boxes with min <= max, including degenerate ones and 0/1."""
    unit = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0]))
    corners = hnp.arrays(np.float64, st.tuples(st.integers(0, 5), st.just(4)), elements=unit)
    return corners.map(
        lambda a: np.stack(
            [np.minimum(a[:, 0], a[:, 2]), np.minimum(a[:, 1], a[:, 3]),
             np.maximum(a[:, 0], a[:, 2]), np.maximum(a[:, 1], a[:, 3])], axis=1
        )
    )  # fmt: skip


@given(st.lists(_normalized_xyxy(), min_size=1, max_size=4), st.sampled_from(BOX_FORMATS))
def test_random_boxes_round_trip_within_1e_6_in_every_format(records: list[np.ndarray], fmt: str) -> None:
    bound = bind(b={"codec": "bbox", "options": {"format": fmt}})
    encoder = rk.RecordEncoder(bound)
    given_boxes = [_in(fmt, xyxy) for xyxy in records]  # may stray 1e-16 outside [0, 1]
    serialized = [encoder.encode({"b": b}, i) for i, b in enumerate(given_boxes)]
    parsed = parse_eager(bound, serialized)["b"]
    for i, want in enumerate(given_boxes):
        np.testing.assert_allclose(parsed[i].numpy().reshape(-1, 4), want, rtol=0, atol=1e-6)
        np.testing.assert_allclose(
            decode_record_numpy(bound.fields, serialized[i])["b"], want, rtol=0, atol=1e-6
        )


@given(
    hnp.arrays(np.float64, st.tuples(st.integers(0, 6), st.just(4)), elements=st.floats(-1e4, 1e4)),
    st.sampled_from(list(itertools.permutations(BOX_FORMATS, 2))),
)
def test_convert_boxes_is_invertible_in_numpy_and_tensorflow(
    boxes: np.ndarray, formats: tuple[str, str]
) -> None:
    source, target = formats
    there = convert_boxes(boxes, source, target)
    assert there.dtype == np.float64
    assert there.shape == boxes.shape
    np.testing.assert_allclose(convert_boxes(there, target, source), boxes, rtol=0, atol=1e-8)
    in_tf = convert_boxes(tf.constant(boxes), source, target)
    np.testing.assert_allclose(in_tf.numpy(), there, rtol=0, atol=1e-9)


@pytest.mark.parametrize("fmt", BOX_FORMATS)
def test_convert_boxes_to_its_own_format_is_a_copy_of_the_same_numbers(fmt: str) -> None:
    stored = np.array([[0.1, 0.2, 0.5, 0.8], [3.0, 4.0, 5.0, 9.5]], dtype=np.float32)
    same = convert_boxes(stored, fmt, fmt)
    assert same.dtype == np.float32
    np.testing.assert_array_equal(same, stored)
    assert not np.shares_memory(same, stored)
    ints = convert_boxes(np.array([[1, 2, 3, 4]]), fmt, fmt)
    assert ints.dtype == np.float64  # as every conversion computes: in float64
    np.testing.assert_array_equal(ints, [[1.0, 2.0, 3.0, 4.0]])


def test_convert_boxes_known_values_and_types() -> None:
    xyxy = np.array([[0.1, 0.2, 0.5, 0.8]], dtype=np.float32)
    expected = {
        "xyxy": [[0.1, 0.2, 0.5, 0.8]],
        "xywh": [[0.1, 0.2, 0.4, 0.6]],
        "yxyx": [[0.2, 0.1, 0.8, 0.5]],
        "cxcywh": [[0.3, 0.5, 0.4, 0.6]],
    }
    for fmt, want in expected.items():
        got = convert_boxes(xyxy, "xyxy", fmt)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, atol=1e-7)
    ragged = tf.ragged.constant([[[0.1, 0.2, 0.5, 0.8]], []], ragged_rank=1, dtype=tf.float32)
    converted = convert_boxes(ragged, "xyxy", "cxcywh")
    assert isinstance(converted, tf.RaggedTensor)
    assert converted.dtype == tf.float32
    np.testing.assert_allclose(converted.flat_values.numpy(), expected["cxcywh"], atol=1e-7)
    assert converted.row_lengths().numpy().tolist() == [1, 0]
    assert convert_boxes([[1, 2, 3, 4]], "xywh", "xyxy").tolist() == [[1.0, 2.0, 4.0, 6.0]]
    with pytest.raises(ValueError, match="unknown box format 'xy'"):
        convert_boxes(xyxy, "xy", "xyxy")
    with pytest.raises(ValueError, match="4 numbers in their last dimension"):
        convert_boxes(np.zeros((2, 3)), "xyxy", "xywh")


def test_parsed_ragged_boxes_convert_to_another_format(tmp_path: Path) -> None:
    bound = bind(b={"codec": "bbox", "options": {"format": "xyxy"}})
    path = write(bound, [{"b": XYXY[0]}, {"b": XYXY[1]}], tmp_path / "c.tfrecord")
    (batch,) = read_tf(bound, path, batch=2)
    cxcywh = convert_boxes(batch["b"], "xyxy", "cxcywh")
    np.testing.assert_allclose(cxcywh[0].numpy(), _in("cxcywh", XYXY[0]), atol=1e-6)
    assert cxcywh[1].shape[0] == 0


def test_conformance_plain(tmp_path: Path) -> None:
    check_codec(
        BBoxCodec({"format": "cxcywh"}),
        cases=[
            CodecCase(_in("cxcywh", XYXY[0]), atol=1e-6),
            CodecCase(np.zeros((0, 4)), expected=[]),
            CodecCase(_in("cxcywh", XYXY[2]).tolist(), atol=1e-6),
        ],
        bad_inputs=[BadInput([[0.5, 0.5, 2.0, 0.1]], match=r"x_min -0.5 is outside \[0, 1\]")],
        tmp_path=tmp_path,
    )


def test_conformance_with_labels(tmp_path: Path) -> None:
    def objects(boxes: np.ndarray, labels: list[int], scores: list[float]) -> dict[str, Any]:
        return {"boxes": boxes, "labels": labels, "score": scores}

    check_codec(
        BBoxCodec({"labels": ["cat", "dog"], "extras": ["score"]}),
        cases=[
            CodecCase(objects(XYXY[0], [1, 0], [0.5, 0.25]), atol=1e-6),
            CodecCase(objects(XYXY[1], [], []), expected=objects(np.zeros((0, 4)), [], [])),
            CodecCase(
                {"boxes": XYXY[2], "labels": ["dog", "dog", "cat"], "score": [1, 0, 0.5]},
                expected=objects(XYXY[2], [1, 1, 0], [1.0, 0.0, 0.5]),
                atol=1e-6,
            ),
        ],
        bad_inputs=[
            BadInput({"boxes": XYXY[0], "labels": ["cow", 0], "score": [0, 0]}, match="unknown label 'cow'")
        ],
        tmp_path=tmp_path,
    )


def test_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_doc_examples("bbox.md", tmp_path, monkeypatch) >= 1


@pytest.mark.parametrize("count", [3, 40])  # few boxes are checked in Python, many with numpy
@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ([0.1, 0.2, np.nan, 0.6], r"non-finite coordinate"),
        ([0.1, 0.2, np.inf, 0.6], r"non-finite coordinate"),
        ([0.5, 0.2, 0.1, 0.6], r"x_min 0.5 > x_max 0.1"),
        ([0.1, 0.2, 0.5, 1.5], r"y_max 1.5 is outside \[0, 1\]"),
        ([-0.5, 0.2, 0.5, 0.6], r"x_min -0.5 is outside \[0, 1\]"),
    ],
)
def test_one_bad_box_among_many_is_found(count: int, bad: list[float], reason: str) -> None:
    boxes = np.tile([[0.1, 0.2, 0.5, 0.6]], (count, 1))
    boxes[count - 1] = bad
    error = encode_error(bind(objects={"codec": "bbox"}), {"objects": boxes}, index=4)
    assert f"box {count - 1}" in str(error)
    assert re.search(reason, str(error)), str(error)


@pytest.mark.parametrize("count", [3, 40])
def test_valid_boxes_are_stored_exactly_as_float32(count: int) -> None:
    rng = np.random.default_rng(count)
    low = rng.uniform(0, 0.5, (count, 2))
    boxes = np.concatenate([low, low + rng.uniform(0, 0.5, (count, 2))], axis=1)
    stored = BBoxCodec({"layout": "lists"}).encode(boxes)[""]
    assert stored.dtype == np.float32
    assert np.array_equal(stored, boxes.astype(np.float32))
    assert BBoxCodec({}).encode(boxes)[""] == boxes.astype("<f4").tobytes()


_COORDINATE = st.one_of(
    st.floats(-0.1, 1.1),
    st.sampled_from([0.0, 1.0, 1.0000000000000002, -1e-300, 0.5]),
    st.integers(-2, 3000),
    st.floats(allow_nan=True, allow_infinity=True),
)


@given(
    st.data(),
    st.sampled_from(BOX_FORMATS),
    st.booleans(),
    st.sampled_from(["list", "tuple", "float array", "float32 array", "int array", "many boxes"]),
)
def test_the_plain_path_agrees_with_the_full_numpy_path_to_the_bit(
    data: st.DataObject, fmt: str, normalized: bool, form: str
) -> None:
    """Plainly valid boxes take a short path (the writer's hot path: arrays column-wise,
    a few boxes of Python numbers box by box): whatever it accepts, the full numpy path
    stores identically; what it declines, the full path decides (clamps within
    tolerance, or refuses with the reason)."""
    scale = 1.0 if normalized else data.draw(st.sampled_from([1.0, 640.0, 3.0e9]))
    boxes = (_in(fmt, data.draw(_normalized_xyxy())) * scale).tolist()
    if boxes and data.draw(st.booleans()):  # one coordinate anything at all
        row, column = data.draw(st.integers(0, len(boxes) - 1)), data.draw(st.integers(0, 3))
        boxes[row][column] = data.draw(_COORDINATE)
    value: Any = boxes
    if form == "tuple":
        value = tuple(tuple(box) for box in boxes)
    elif form != "list":
        value = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        if form == "int array":
            value = np.round(np.clip(np.nan_to_num(value), -1e15, 1e15)).astype(np.int64)
        elif form == "float32 array":
            with np.errstate(over="ignore"):  # a float64 beyond float32 becomes inf, refused below
                value = value.astype(np.float32)
        elif form == "many boxes":  # more than a few: checked column-wise too
            value = np.tile(value, (20, 1))
    codec = BBoxCodec({"format": fmt, "normalized": normalized})
    fast = _plain_boxes(value, fmt, normalized)
    try:
        slow = codec._canonical(_as_boxes(value))
    except rk.errors.InvalidValueError:
        assert fast is None  # the plain path never accepts what numpy refuses
        return
    if fast is None:
        return
    assert fast.dtype == slow.dtype == np.float32
    assert fast.shape == slow.shape
    assert fast.tobytes() == slow.tobytes()
    assert codec.encode(value)[""] == slow.astype("<f4").tobytes()  # packed: the same numbers
    lists = BBoxCodec({"format": fmt, "normalized": normalized, "layout": "lists"})
    assert lists.encode(value)[""].tobytes() == slow.tobytes()


@pytest.mark.parametrize("form", ["list", "float array", "float32 array"])
def test_a_negative_zero_is_stored_as_a_positive_zero_by_both_paths(form: str) -> None:
    """-0.0 equals 0.0, but its bytes differ: the short path and the full check must store
    the same zero, or the same boxes would give different shard bytes and sha256."""
    boxes: Any = [[-0.0, 0.0, 0.5, 0.5]]
    if form != "list":
        boxes = np.asarray(boxes, dtype=np.float32 if form == "float32 array" else np.float64)
    codec = BBoxCodec({"format": "xyxy", "normalized": True})
    positive = np.asarray([[0.0, 0.0, 0.5, 0.5]], dtype="<f4").tobytes()
    assert codec._canonical(_as_boxes(boxes)).tobytes() == positive
    plain = _plain_boxes(boxes, "xyxy", True)
    assert plain is not None
    assert plain.tobytes() == positive
    assert codec.encode(boxes)[""] == positive


@pytest.mark.parametrize("labels", [["dog", "cat"], [1, 0], ("dog", 0), np.array([1, 0]), [np.int64(1), 0]])
def test_labels_in_every_form_store_the_same_ids(labels: Any) -> None:
    value = {"boxes": [[0, 0, 1, 1], [0, 0, 0.5, 0.5]], "labels": labels, "score": [1, 0.25]}
    wire = BBoxCodec({"labels": ["cat", "dog"], "extras": ["score"], "layout": "lists"}).encode(value)
    assert wire["labels"].dtype == np.int64
    assert wire["labels"].tolist() == [1, 0]
    assert wire["score"].dtype == np.float32
    assert wire["score"].tolist() == [1.0, 0.25]
    packed = BBoxCodec({"labels": ["cat", "dog"], "extras": ["score"]}).encode(value)
    assert packed["labels"] == bytes([1, 0])  # two classes: one byte an id
    assert packed["score"] == np.array([1.0, 0.25], "<f4").tobytes()


def test_label_ids_given_as_an_array_are_range_checked() -> None:
    bound = bind(objects={"codec": "bbox", "options": {"labels": ["cat", "dog"]}})
    boxes = [[0, 0, 1, 1], [0, 0, 0.5, 0.5]]
    error = encode_error(bound, {"objects": {"boxes": boxes, "labels": np.array([1, 2])}}, index=0)
    assert "box 1: label id 2 is out of range (ids are [0, 2))" in str(error)
    stored = BBoxCodec({"labels": ["cat", "dog"]}).encode({"boxes": boxes, "labels": np.array([1, 0])})
    assert stored["labels"] == bytes([1, 0])


# -- the packed layout (version 2) against the lists layout (version 1's) -----------------


def _labelled_records(classes: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(classes)
    records = []
    for count in (3, 0, 1, 6):
        low = rng.uniform(0, 0.5, (count, 2))
        boxes = np.concatenate([low, low + rng.uniform(0, 0.5, (count, 2))], axis=1)
        ids = rng.integers(0, classes, count)
        ids[:1] = classes - 1  # the largest id needs the whole width
        records.append({"objects": {"boxes": boxes, "labels": ids, "score": rng.uniform(0, 1, count)}})
    return records


@pytest.mark.parametrize(("classes", "width"), [(2, 1), (256, 1), (257, 2), (65_536, 2), (65_537, 4)])
def test_packed_and_lists_layouts_read_the_same_values(tmp_path: Path, classes: int, width: int) -> None:
    """Packed class ids take the narrowest width that holds every id; whatever the width,
    both readers of both layouts give the same boxes, int64 labels and extras."""
    names = [f"c{i}" for i in range(classes)]
    records = _labelled_records(classes)
    read: dict[str, list[Any]] = {}
    for layout in ("packed", "lists"):
        options = {"labels": names, "extras": ["score"], "layout": layout}
        bound = bind(objects={"codec": "bbox", "options": options})
        path = write(bound, records, tmp_path / f"{layout}.tfrecord")
        read[layout + " numpy"] = [r["objects"] for r in read_numpy(bound, path)]
        for batch in (4, 1):
            rows = []
            for out in read_tf(bound, path, batch):
                rows += [{k: v[i] for k, v in out["objects"].items()} for i in range(batch)]
            read[f"{layout} tf {batch}"] = rows
        if layout == "packed":
            first = decode_example(rk.RecordEncoder(bound).encode(records[0]))
            assert len(first["objects/labels"][1][0]) == 3 * width
    for name, rows in read.items():
        for want, got in zip(records, rows, strict=True):
            got_labels = np.asarray(got["labels"])
            assert got_labels.dtype == np.int64, name
            assert got_labels.tolist() == want["objects"]["labels"].tolist(), name
            np.testing.assert_array_equal(
                np.asarray(got["boxes"]), want["objects"]["boxes"].astype(np.float32)
            )
            np.testing.assert_array_equal(
                np.asarray(got["score"]), want["objects"]["score"].astype(np.float32)
            )


def test_the_packed_layout_is_the_default_but_for_other_tools_records() -> None:
    def kinds(options: dict[str, Any], keys: dict[str, Any] | None = None) -> list[str]:
        spec = rk.FieldSpec(codec="bbox", options=options, keys=keys or {})
        return [k.feature.kind.value for k in bind(b=spec).fields[0].features]

    assert kinds({}) == ["bytes"]
    assert kinds({"labels": ["a"]}) == ["bytes", "bytes"]
    assert kinds({"stored": "yxyx"}) == ["float"]  # TensorFlow Datasets' float lists
    assert kinds({"labels": ["a"]}, {"": "image/object/bbox"}) == ["float", "int64"]  # mapped keys
    assert kinds({"stored": "yxyx", "layout": "packed"}) == ["bytes"]
    assert kinds({"layout": "packed"}, {"": "image/object/bbox"}) == ["bytes"]
    assert kinds({"layout": "lists"}) == ["float"]
    packed = bind(b={"codec": "bbox"}).fingerprint()
    assert packed != bind(b={"codec": "bbox", "options": {"layout": "lists"}}).fingerprint()
    spec = rk.feature_spec(bind(b={"codec": "bbox", "options": {"labels": ["a"]}}))
    assert spec["b"] == tf.io.FixedLenFeature([], tf.string)
    assert spec["b/labels"] == tf.io.FixedLenFeature([], tf.string)


def _packed_example(boxes: bytes, labels: bytes) -> bytes:
    feature = {
        "objects": tf.train.Feature(bytes_list=tf.train.BytesList(value=[boxes])),
        "objects/labels": tf.train.Feature(bytes_list=tf.train.BytesList(value=[labels])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.mark.parametrize(
    ("boxes", "labels", "numpy_reason"),
    [
        (bytes(17), bytes(1), "packed boxes hold 17 bytes, not a whole number of 16-byte items"),
        (bytes(32), bytes(1), "2 boxes but 1 values of 'labels'"),
        (bytes(16), bytes(3), "1 boxes but 3 values of 'labels'"),
    ],
)
def test_packed_values_that_do_not_fit_their_boxes_are_decode_errors(
    boxes: bytes, labels: bytes, numpy_reason: str
) -> None:
    bound = bind(objects={"codec": "bbox", "options": {"labels": ["a", "b"]}})
    serialized = _packed_example(boxes, labels)
    with pytest.raises(rk.errors.DecodeError, match=re.escape(numpy_reason)):
        decode_record_numpy(bound.fields, serialized, index=7)
    with pytest.raises(tf.errors.InvalidArgumentError, match="bbox codec: packed boxes that are not whole"):
        parse_eager(bound, [_packed_example(bytes(16), bytes(1)), serialized])


#: A dataset written by recordkit with bbox version 1 (commit e3a820e, before the packed
#: layout): boxes, labels and extras as float and int64 lists. Its records are below.
V1_DATASET = Path(__file__).with_name("data") / "bbox-v1"
V1_RECORDS: list[dict[str, Any]] = [
    {
        "objects": {
            "boxes": [[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 1.0, 1.0]],
            "labels": [0, 2],
            "score": [0.9, 0.25],
        },
        "pixels": [[10, 20, 30, 40]],
        "frames": [[[0.1, 0.1, 0.2, 0.2]], []],
        "maybe": [[0.5, 0.5, 0.75, 0.75]],
    },
    {"objects": {"boxes": [], "labels": [], "score": []}, "pixels": [], "frames": [], "maybe": None},
    {
        "objects": {"boxes": [[0.25, 0.125, 0.75, 0.375]], "labels": [1], "score": [0.5]},
        "pixels": [[0, 0, 640, 480], [1.5, 2.5, 3.5, 4.5]],
        "frames": [[[0.0, 0.0, 1.0, 1.0], [0.3, 0.3, 0.4, 0.4]]],
        "maybe": [],
    },
]


def _boxes_close(got: Any, want: Any) -> None:
    np.testing.assert_allclose(
        np.asarray(got, np.float64).reshape(-1, 4), np.reshape(want, (-1, 4)), atol=1e-6
    )


def test_a_dataset_written_by_version_1_reads_as_it_was_written(tmp_path: Path) -> None:
    root = shutil.copytree(V1_DATASET, tmp_path / "v1")
    manifest = json.loads((root / "dataset.json").read_text(encoding="utf-8"))
    assert manifest["codecs"]["bbox"]["version"] == "1"
    assert "layout" not in json.dumps(manifest["schema"])  # version 1 had no layouts
    assert BBoxCodec.version == "2"
    # numpy, the dataset's own schema and a reader's schema that asks for packed boxes:
    # the manifest's version decides how the records are read.
    reading = rk.Schema.model_validate(manifest["schema"])
    for schema in (None, reading):
        for want, row in zip(V1_RECORDS, rk.iter_records(root, schema=schema), strict=True):
            _boxes_close(row["objects"]["boxes"], want["objects"]["boxes"])
            assert row["objects"]["labels"].tolist() == want["objects"]["labels"]
            np.testing.assert_allclose(row["objects"]["score"], want["objects"]["score"], atol=1e-6)
            _boxes_close(row["pixels"], want["pixels"])
            assert len(row["frames"]) == len(want["frames"])
            for got_frame, want_frame in zip(row["frames"], want["frames"], strict=True):
                _boxes_close(got_frame, want_frame)
            if want["maybe"] is None:
                assert row["maybe"] is None
            else:
                _boxes_close(row["maybe"], want["maybe"])
    # tf.data, batched and record by record
    batch = next(iter(rk.load_dataset(root, fields=["objects", "pixels"], batch_size=3)))
    singles = list(rk.load_dataset(root, fields=["objects", "pixels"]))
    for i, want in enumerate(V1_RECORDS):
        single = singles[i]
        read = [
            (batch["objects"]["boxes"][i], batch["objects"]["labels"][i], batch["pixels"][i]),
            (single["objects"]["boxes"], single["objects"]["labels"], single["pixels"]),
        ]
        for boxes, labels, pixels in read:
            _boxes_close(boxes.numpy(), want["objects"]["boxes"])
            assert labels.numpy().tolist() == want["objects"]["labels"]
            _boxes_close(pixels.numpy(), want["pixels"])


def test_appending_to_a_version_1_dataset_is_refused_naming_both_versions(tmp_path: Path) -> None:
    root = shutil.copytree(V1_DATASET, tmp_path / "v1")
    schema = rk.Schema.model_validate(
        json.loads((root / "dataset.json").read_text(encoding="utf-8"))["schema"]
    )
    before = sorted(p.name for p in root.iterdir())
    with pytest.raises(
        rk.errors.IncompatibleSchemaError, match="codec 'bbox' version '1' stored, '2' installed"
    ) as info:
        rk.write_dataset(V1_RECORDS[:1], schema, root, append=True, progress=False)
    assert "rk.write_dataset(rk.iter_records(old), new, schema)" in str(info.value)
    assert len(list(rk.iter_records(root))) == len(V1_RECORDS)  # nothing lost
    assert sorted(p.name for p in root.iterdir() if p.name != ".recordkit.lock") == before


def test_a_version_1_dataset_rewritten_stores_packed_boxes_with_the_same_values(tmp_path: Path) -> None:
    """What docs/codecs/bbox.md says to do to append: write the old records again."""
    old = shutil.copytree(V1_DATASET, tmp_path / "v1")
    schema = rk.Schema.model_validate(
        json.loads((old / "dataset.json").read_text(encoding="utf-8"))["schema"]
    )
    rk.write_dataset(rk.iter_records(old), tmp_path / "v2", schema, progress=False)
    manifest = rk.Manifest.load(tmp_path / "v2")
    assert manifest.codec_versions["bbox"] == "2"
    kinds = {k.key: k.feature.kind.value for f in manifest.schema.bind().fields for k in f.features}
    assert kinds["objects"] == kinds["objects/labels"] == kinds["pixels"] == "bytes"
    for before, after in zip(rk.iter_records(old), rk.iter_records(tmp_path / "v2"), strict=True):
        np.testing.assert_array_equal(after["objects"]["boxes"], before["objects"]["boxes"])
        np.testing.assert_array_equal(after["objects"]["labels"], before["objects"]["labels"])
        np.testing.assert_array_equal(after["pixels"], before["pixels"])
        assert len(after["frames"]) == len(before["frames"])
        assert (after["maybe"] is None) == (before["maybe"] is None)


@pytest.mark.parametrize("fmt", ["xyxy", "cxcywh"])
def test_packed_values_decode_to_arrays_of_their_own(fmt: str) -> None:
    """The numpy decode reads packed bytes through views (read-only: views of bytes), and
    returns copies, which the caller may write to."""
    bound = bind(
        objects={"codec": "bbox", "options": {"format": fmt, "labels": ["a", "b"], "extras": ["score"]}}
    )
    value = {"boxes": _in(fmt, np.array([[0.1, 0.2, 0.3, 0.4]])), "labels": [1], "score": [0.5]}
    objects = decode_record_numpy(bound.fields, rk.RecordEncoder(bound).encode({"objects": value}))["objects"]
    for name in ("boxes", "labels", "score"):
        assert objects[name].flags.writeable, name


def test_a_parser_generated_from_a_version_1_dataset_reads_it(tmp_path: Path) -> None:
    """Generated from the dataset (its manifest), the standalone parser reads the boxes as
    version 1 stored them, and its FINGERPRINT is the dataset's: the codegen guide's
    guard (the stored fingerprint equals the module's) holds."""
    root = shutil.copytree(V1_DATASET, tmp_path / "v1")
    manifest = rk.Manifest.load(root)
    namespace: dict[str, Any] = {}
    exec(rk.generate_parser_code(manifest, ["objects", "pixels"]), namespace)
    assert namespace["FINGERPRINT"] == manifest.fingerprint
    assert rk.generate_parser_code(manifest.schema) != rk.generate_parser_code(manifest)  # packed there
    files = [str(path) for path in root.glob("*.tfrecord")]
    (batch,) = list(namespace["dataset"](files, batch_size=3))
    for i, want in enumerate(V1_RECORDS):
        _boxes_close(batch["objects"]["boxes"][i].numpy(), want["objects"]["boxes"])
        assert batch["objects"]["labels"][i].numpy().tolist() == want["objects"]["labels"]
        _boxes_close(batch["pixels"][i].numpy(), want["pixels"])


# -- padded reads: decoded straight from the packed bytes ---------------------------------


def _padded_batches(root: Path) -> list[dict[str, Any]]:
    batches = rk.load_dataset(root, batch_size=2, pad=True)
    return [tf.nest.map_structure(lambda t: t.numpy(), b) for b in batches]


@pytest.mark.parametrize("fmt", BOX_FORMATS)
@pytest.mark.parametrize("extras", [True, False])
def test_padded_packed_boxes_equal_the_lists_layouts_boxes_padded(
    tmp_path: Path, fmt: str, extras: bool
) -> None:
    """``pad=True`` decodes packed boxes straight into their padded form; the values, the
    padding (zeros, in every format) and the shapes are those of the lists layout, whose
    ragged boxes the reader pads; a batch of records without boxes pads to none."""
    records = _labelled_records(3) + [{"objects": {"boxes": np.zeros((0, 4)), "labels": [], "score": []}}] * 2
    if not extras:
        records = [{"objects": r["objects"]["boxes"]} for r in records]
    read = {}
    for layout in ("packed", "lists"):
        options: dict[str, Any] = {"format": fmt, "layout": layout}
        if extras:
            options.update(labels=["a", "b", "c"], extras=["score"])
        schema = rk.Schema(name="boxes", fields={"objects": rk.FieldSpec(codec="bbox", options=options)})
        given = [
            {
                "objects": _in(fmt, r["objects"])
                if not extras
                else {**r["objects"], "boxes": _in(fmt, r["objects"]["boxes"])}
            }
            for r in records
        ]
        rk.write_dataset(given, schema, tmp_path / layout, progress=False, durable=False)
        read[layout] = _padded_batches(tmp_path / layout)
    assert len(read["packed"]) == 3
    for packed, lists in zip(read["packed"], read["lists"], strict=True):
        assert packed.keys() == lists.keys()
        for key in packed:
            flat_packed, flat_lists = tf.nest.flatten(packed[key]), tf.nest.flatten(lists[key])
            for got, want in zip(flat_packed, flat_lists, strict=True):
                assert got.dtype == want.dtype, key
                np.testing.assert_array_equal(got, want, err_msg=key)
    last = read["packed"][-1]
    boxes = last["objects"]["boxes"] if extras else last["objects"]
    assert boxes.shape == (2, 0, 4)


def test_padded_packed_values_that_do_not_fit_their_boxes_are_decode_errors() -> None:
    bound = bind(objects={"codec": "bbox", "options": {"labels": ["a", "b"]}})
    parse = make_padded_parser(bound.fields, {"objects"})
    batch = tf.constant([_packed_example(bytes(16), bytes(1)), _packed_example(bytes(32), bytes(1))])
    with pytest.raises(tf.errors.InvalidArgumentError, match="bbox codec: packed boxes that are not whole"):
        parse(batch)
    good = parse(tf.constant([_packed_example(bytes(16), bytes(1)), _packed_example(bytes(0), bytes(0))]))
    assert good["objects"]["boxes"].shape == (2, 1, 4)
    assert good["objects/labels/shape"].numpy().tolist() == [[1], [0]]
    assert good["objects/boxes/shape"].numpy().tolist() == [[1, 4], [0, 4]]
