"""The ``bbox`` codec's column decode (``decode_numpy_column``): many records' packed boxes
at once in the numpy reader, to exactly what each record's ``decode_numpy`` gives."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

import recordkit as rk
from recordkit.format._tfrecord import frame_record, iter_tfrecords  # private: rewrites a shard's records
from recordkit.storage import location
from recordkit.testing import CodecCase, check_codec
from recordkit_codecs.bbox import BOX_FORMATS, BBoxCodec, convert_boxes

COLUMN_CHECK = "column decode equals the record-by-record decode"

#: Option sets of every kind the column decode takes: formats, stored order, units,
#: labels of each stored width, extras, an image field (which decoding does not read).
OPTION_SETS: list[dict[str, Any]] = [
    {},
    {"format": "cxcywh"},
    {"format": "xywh", "labels": ["cat", "dog"], "extras": ["score", "area"]},
    {"format": "yxyx", "layout": "packed", "stored": "yxyx", "labels": ["a"]},
    {"normalized": False, "labels": [f"c{i}" for i in range(300)], "image_field": "image"},
    {"labels": [f"c{i}" for i in range(70_000)], "extras": ["score"]},
]


def _records(codec: BBoxCodec, counts: list[int], seed: int = 0) -> list[dict[str, Any]]:
    """Records of ``counts`` boxes each, as ``codec`` takes them (in its format and units)."""
    rng = np.random.default_rng(seed)
    classes = len(codec.options.labels or ())
    scale = 1.0 if codec.options.normalized else 640.0
    out = []
    for n in counts:
        low = rng.uniform(0, 0.5, (n, 2))
        xyxy = np.concatenate([low, low + rng.uniform(0, 0.5, (n, 2))], axis=1) * scale
        value: dict[str, Any] = {"boxes": convert_boxes(xyxy, "xyxy", codec.options.format)}
        if classes:
            value["labels"] = rng.integers(0, classes, n)
        value.update({name: rng.normal(size=n).tolist() for name in codec.options.extras})
        out.append(value)
    return out


def _column(codec: BBoxCodec, wires: list[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Records' wire values as the numpy reader hands them to the column decode: a list
    of each record's bytes per wire feature (empty lists for no records)."""
    return {feature.name: [wire[feature.name] for wire in wires] for feature in codec.wire_spec()}


def _assert_same(want: Any, got: Any, others: list[np.ndarray]) -> None:
    """``got`` is ``want`` to the bit: type, keys, dtype, shape and bytes; each array
    writable, and sharing no memory with ``others`` (the arrays decoded before it)."""
    assert type(got) is type(want)
    pairs = list(want.items()) if isinstance(want, dict) else [("boxes", want)]
    if isinstance(want, dict):
        assert list(got) == list(want)
    for name, array in pairs:
        value = got[name] if isinstance(got, dict) else got
        assert isinstance(value, np.ndarray), name
        assert (value.dtype, value.shape) == (array.dtype, array.shape), name
        assert value.tobytes() == array.tobytes(), name
        assert value.flags.writeable, name
        assert not any(np.shares_memory(value, other) for other in others), name
        others.append(value)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(OPTION_SETS),
    st.sampled_from(BOX_FORMATS),
    st.lists(st.integers(0, 40), max_size=12),
    st.integers(0, 2**32 - 1),
)
def test_the_column_decode_gives_each_records_own_decode_to_the_bit(
    options: dict[str, Any], fmt: str, counts: list[int], seed: int
) -> None:
    """Records of any number of boxes (none included), with each option set and format:
    the column decode equals ``decode_numpy`` of each record, arrays of their own."""
    codec = BBoxCodec({**options, "format": fmt})
    wires = [codec.encode(value) for value in _records(codec, counts, seed)]
    got = codec.decode_numpy_column(_column(codec, wires), len(counts))
    assert got is not None
    assert len(got) == len(counts)
    decoded: list[np.ndarray] = []
    for wire, value in zip(wires, got, strict=True):
        _assert_same(codec.decode_numpy(wire), value, decoded)


def test_the_lists_layout_is_decoded_record_by_record() -> None:
    """Lists (variable-length features) have no column: the codec declines them."""
    codec = BBoxCodec({"layout": "lists", "labels": ["a"]})
    wires = [codec.encode(value) for value in _records(codec, [1, 2])]
    assert codec.decode_numpy_column(_column(codec, wires), 2) is None


@pytest.mark.parametrize(
    ("boxes", "labels", "reason"),
    [
        (bytes(17), bytes(1), "packed boxes hold 17 bytes, not a whole number of 16-byte items"),
        (bytes(32), bytes(1), "2 boxes but 1 values of 'labels'"),
        (bytes(16), bytes(3), "1 boxes but 3 values of 'labels'"),
        (bytes(15), bytes(0), "packed boxes hold 15 bytes"),
    ],
)
def test_values_that_do_not_fit_their_boxes_refuse_the_column(
    boxes: bytes, labels: bytes, reason: str
) -> None:
    """A record whose byte counts ``decode_numpy`` refuses makes the whole column raise a
    DecodeError (the reader then decodes record by record, giving the record's error)."""
    codec = BBoxCodec({"labels": ["a", "b"]})
    good = [codec.encode(value) for value in _records(codec, [2, 0, 3])]
    bad = {"": boxes, "labels": labels}
    with pytest.raises(rk.errors.DecodeError, match=re.escape(reason)):
        codec.decode_numpy(bad)
    with pytest.raises(rk.errors.DecodeError):
        codec.decode_numpy_column(_column(codec, [*good, bad]), 4)


@pytest.mark.parametrize("options", OPTION_SETS[:4], ids=lambda o: ",".join(o) or "defaults")
def test_conformance_runs_the_column_check(tmp_path: Path, options: dict[str, Any]) -> None:
    codec = BBoxCodec(options)
    values = _records(codec, [2, 0, 5, 1])
    if not codec.options.labels and not codec.options.extras:
        values = [value["boxes"] for value in values]
    report = check_codec(codec, cases=[CodecCase(v, atol=1e-5) for v in values], tmp_path=tmp_path)
    assert COLUMN_CHECK in report.checks


# -- end to end, in the numpy reader ------------------------------------------------------

SCHEMA = rk.Schema(
    name="annotations",
    fields={
        "objects": rk.FieldSpec(codec="bbox", options={"labels": ["a", "b", "c"], "extras": ["score"]}),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 10}),
    },
)


def _dataset(tmp_path: Path, count: int) -> tuple[Path, list[dict[str, Any]]]:
    codec = BBoxCodec(SCHEMA.fields["objects"].options)
    counts = [i % 7 for i in range(count)]
    records = [{"objects": value, "label": i % 10} for i, value in enumerate(_records(codec, counts))]
    path = tmp_path / "annotations"
    rk.write_dataset(records, path, SCHEMA, progress=False)
    return path, records


def test_the_numpy_reader_decodes_a_chunks_boxes_from_their_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records of 0 to 6 boxes, parsed together, are decoded in one call a chunk, to the
    values each record's own decode gives."""
    path, records = _dataset(tmp_path, 90)
    decoded: list[int] = []
    column_decode = BBoxCodec.decode_numpy_column

    def counted(self: BBoxCodec, wire: Any, count: int) -> Any:
        values = column_decode(self, wire, count)
        decoded.append(len(values or ()))
        return values

    monkeypatch.setattr(BBoxCodec, "decode_numpy_column", counted)
    read = list(rk.open(path).records())
    assert sum(decoded) == len(records)
    codec = BBoxCodec(SCHEMA.fields["objects"].options)
    for record, got in zip(records, read, strict=True):
        want = codec.decode_numpy(codec.encode(record["objects"]))
        _assert_same(want, got["objects"], [])
        assert got["label"] == record["label"]


def test_a_record_whose_boxes_do_not_fit_is_that_records_error(tmp_path: Path) -> None:
    """A record whose packed boxes are not whole boxes (its framing sound: a byte moved
    from its boxes to its labels) refuses the chunk's column decode; the records before it
    are given, then its own error, naming its field, its number and the byte count."""
    path, records = _dataset(tmp_path, 40)
    (shard,) = path.glob("*.tfrecord")
    stored = [data for _, data in iter_tfrecords(location(shard))]
    example = tf.train.Example.FromString(stored[17])
    features = example.features.feature
    boxes = features["objects"].bytes_list.value[0]  # record 17 has 3 boxes
    features["objects"].bytes_list.value[0] = boxes[:-1]
    features["objects/labels"].bytes_list.value[0] += b"\x00"
    damaged = example.SerializeToString()
    assert len(damaged) == len(stored[17])  # the shard's index still holds
    stored[17] = damaged
    shard.write_bytes(b"".join(frame_record(data) for data in stored))
    read: list[dict[str, Any]] = []
    with pytest.raises(rk.errors.DecodeError, match=r"packed boxes hold 47 bytes") as err:
        read.extend(rk.open(path).records())
    assert (err.value.field, err.value.record) == ("objects", 17)
    assert [record["label"] for record in read] == [record["label"] for record in records[:17]]
