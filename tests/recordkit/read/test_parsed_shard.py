"""The numpy reader parses and decodes records of one layout many at a time
(sdk/recordkit/read/_parsed_shard.py): ``ds.records()`` gives exactly the values, types
and errors of the record-by-record read, for every codec of fixed size and for records
whose layouts differ."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import assert_same

import recordkit as rk
from recordkit.dataset._shards import split_shards  # private: the shard a read is given
from recordkit.errors import CorruptRecordError, DecodeError
from recordkit.format._tfrecord import Compression  # private: the compression a reader passes
from recordkit.read import (
    _iter_records,  # private: to count the records decoded together
    _parsed_shard,  # private: to fail the parse of a mapped shard
)
from recordkit.storage import location
from recordkit_codecs.label import LabelCodec
from recordkit_codecs.scalar import ScalarCodec
from recordkit_codecs.tensor import TensorCodec

NUMBERS = "numbers"
SCHEMA = rk.Schema(
    name="small",
    fields={
        "embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [4, 3]}),
        "counts": rk.FieldSpec(codec="tensor", options={"dtype": "int16", "shape": [5], "stored": NUMBERS}),
        "scores": rk.FieldSpec(codec="tensor", options={"dtype": "float64", "shape": [2], "stored": NUMBERS}),
        "flags": rk.FieldSpec(codec="tensor", options={"dtype": "bool", "shape": [3]}),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 1000}),
        "tags": rk.FieldSpec(codec="label", options={"num_classes": 5, "multi": True}),
        "hot": rk.FieldSpec(codec="label", options={"num_classes": 5, "multi": True, "multi_hot": True}),
        "count": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
        "ratio": rk.FieldSpec(codec="scalar", options={"dtype": "float64"}),
        "weight": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}),
        "code": rk.FieldSpec(codec="text"),
        "extra": rk.FieldSpec(codec="tensor", options={"dtype": "uint8", "shape": [2]}, optional=True),
    },
)


def make_records(count: int, *, seed: int, varied: bool) -> list[dict[str, Any]]:
    """Records of one layout (``varied``: with labels, counts, tags and optional values that
    change the layout from record to record)."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(count):
        records.append(
            {
                "embedding": rng.normal(size=(4, 3)).astype(np.float32),
                "counts": (rng.integers(-300, 300, size=5) if varied else np.arange(5)).astype(np.int16),
                "scores": rng.normal(size=2).astype(np.float32).astype(np.float64),
                "flags": rng.integers(0, 2, size=3).astype(bool),
                "label": int(rng.integers(0, 1000 if varied else 100)),
                "tags": [int(t) for t in rng.permutation(5)[: (1 + i % 3 if varied else 2)]],
                "hot": [1, 3],
                "count": int(rng.integers(-(2**40), 2**40)) if varied else 2**40 + i,
                "ratio": float(rng.normal()) if varied else float(abs(rng.normal())),  # a negative: 10 bytes
                "weight": float(np.float32(rng.normal())),
                "code": f"c{i % 10}",
                "extra": None if varied and i % 4 == 0 else np.array([i % 256, 7], np.uint8),
            }
        )
    return records


@pytest.fixture(scope="module", params=["one layout", "varied layouts"])
def dataset(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp(request.param.replace(" ", "-")) / "data"
    varied = request.param == "varied layouts"
    rk.write_dataset(make_records(70, seed=3, varied=varied), SCHEMA, path, shard_records=30, progress=False)
    return path


@pytest.mark.parametrize("fields", [None, ["embedding", "label"], ["extra"], ["tags", "count", "code"]])
def test_records_read_together_equal_those_read_one_by_one(
    dataset: Path, fields: list[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    decode = _iter_records.decode_columns_numpy
    together_count = []

    def counted(*args: Any) -> Any:
        records = decode(*args)
        together_count.append(0 if records is None else len(records))
        return records

    monkeypatch.setattr(_iter_records, "decode_columns_numpy", counted)
    ds = rk.open(dataset, fields=fields)
    together = list(ds.records())
    if "one-layout" in dataset.parent.name:
        assert sum(together_count) == 70  # every record was decoded with the others of its shard
    monkeypatch.setattr(_iter_records, "decode_columns_numpy", decode)
    # A report reads record by record (the path that skips damage); threads decode one by one.
    one_by_one = list(ds.records(on_corrupt="skip", report=rk.CorruptionReport()))
    in_threads = list(ds.records(num_threads=2))
    assert len(together) == 70
    assert_same(one_by_one, together, "records")
    assert_same(one_by_one, in_threads, "records")


def test_each_record_owns_its_values(dataset: Path) -> None:
    first, second = list(rk.open(dataset, fields=["embedding", "counts"]).records())[:2]
    before = second["embedding"].copy()
    first["embedding"][:] = 0
    first["counts"][:] = 0
    assert np.array_equal(second["embedding"], before)


def test_a_resumed_sliced_or_shared_read_gives_the_same_records(dataset: Path) -> None:
    ds = rk.open(dataset, "train[5:60]", fields=["embedding", "tags", "extra"])
    expected = list(ds.records(on_corrupt="skip", report=rk.CorruptionReport()))
    assert_same(expected, list(ds.records()), "slice")
    assert_same(expected[17:], list(ds.records(start=17)), "resumed")
    shares = [list(ds.records(rank=r, world_size=2)) for r in range(2)]
    assert sum(len(s) for s in shares) == len(expected)


def shard_files(path: Path) -> list[Path]:
    manifest = json.loads((path / "dataset.json").read_text())
    return [path / s["file"] for s in manifest["splits"]["train"]["shards"]]


def test_a_damaged_record_is_reported_as_before_after_the_records_before_it(
    dataset: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for item in dataset.iterdir():
        (copy / item.name).write_bytes(item.read_bytes())
    shard = shard_files(copy)[1]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    read: list[dict[str, Any]] = []
    records = rk.open(copy, fields=["embedding", "label"]).records()
    with pytest.raises(CorruptRecordError) as err:
        read.extend(records)
    assert err.value.shard == shard.name
    assert 30 <= len(read) < 60
    expected = list(rk.open(dataset, fields=["embedding", "label"]).records())[: len(read)]
    assert_same(expected, read, "before the damage")


def test_fixed_tensors_labels_and_numbers_are_decoded_a_chunk_at_a_time_by_their_codecs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The codecs' ``decode_numpy_column`` (rk.DecodedInColumns) takes each chunk's
    columns; values equal to the record-by-record read's."""
    path = tmp_path / "data"
    rk.write_dataset(make_records(40, seed=5, varied=False), SCHEMA, path, shard_records=30, progress=False)
    decoded: collections.Counter[str] = collections.Counter()
    for codec_class in (TensorCodec, LabelCodec, ScalarCodec):
        column_decode = codec_class.decode_numpy_column

        def counted(self: Any, wire: Any, count: int, column_decode: Any = column_decode) -> Any:
            values = column_decode(self, wire, count)
            decoded[self.name] += 0 if values is None else len(values)
            return values

        monkeypatch.setattr(codec_class, "decode_numpy_column", counted)
    ds = rk.open(path, fields=["embedding", "label", "count", "ratio"])
    together = list(ds.records())
    assert decoded == {"tensor": 40, "label": 40, "scalar": 80}
    assert_same(list(ds.records(num_threads=2)), together, "records")


def test_an_error_while_a_shard_read_whole_is_parsed_is_raised_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "data"
    rk.write_dataset(make_records(20, seed=4, varied=False), SCHEMA, path, progress=False)
    mapped: list[Any] = []

    def failing(buffer: Any, offsets: np.ndarray, keys: Any) -> Any:
        view = np.frombuffer(buffer, dtype=np.uint8)  # alive in this frame's traceback
        mapped.append(type(buffer).__name__)
        raise RuntimeError(f"parse failed with {len(view)} bytes read")

    monkeypatch.setattr(_parsed_shard, "parsed_records", failing)
    with pytest.raises(RuntimeError, match="parse failed with"):
        list(rk.open(path).records())
    assert mapped == ["mmap"]  # the shard read whole into anonymous memory (its file never mapped)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files through /proc")
def test_a_parsed_read_of_a_shard_opens_no_file_before_its_first_record_and_closes_them_when_closed(
    tmp_path: Path,
) -> None:
    """The shard's files are opened inside the generator: one that is never started (a
    read given up before it reached the shard) holds no file open."""
    path = tmp_path / "data"
    rk.write_dataset(make_records(20, seed=4, varied=False), SCHEMA, path, progress=False)
    (shard,) = split_shards(location(path), rk.Manifest.load(path), "train")

    def open_files() -> set[str]:
        return set(os.listdir("/proc/self/fd"))

    before = open_files()
    stream = _parsed_shard.parsed_shard_records(
        shard, Compression.NONE, ["label"], fallback=lambda: _iter_records.iter_shard_records(shard)
    )
    assert open_files() == before, "files opened before the first record was asked for"
    offset, first = next(stream)
    assert offset == 0
    assert isinstance(first, dict)  # read through the mapping, parsed with the others (not bytes)
    assert open_files() != before
    stream.close()
    assert open_files() == before


def _failing_column_decode(exc: Exception) -> Any:
    def decode_numpy_column(self: Any, wire: Any, count: int) -> Any:
        raise exc

    return decode_numpy_column


def test_a_codec_column_decode_that_fails_with_a_bug_stops_the_read_naming_the_codec_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``decode_numpy_column`` that raises anything but a refusal of a value (here a
    ``TypeError``) is a fault of the codec: the read stops naming the codec and the field,
    instead of going on one record at a time without a word."""
    path = tmp_path / "data"
    rk.write_dataset(make_records(20, seed=4, varied=False), SCHEMA, path, progress=False)
    monkeypatch.setattr(TensorCodec, "decode_numpy_column", _failing_column_decode(TypeError("a bug")))
    with pytest.raises(
        DecodeError, match=r"codec 'tensor' failed in decode_numpy_column .*TypeError: a bug"
    ) as got:
        list(rk.open(path, fields=["embedding", "label"]).records())
    assert got.value.field == "embedding"


def test_a_codec_column_decode_that_refuses_a_value_falls_back_to_the_records_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``ValueError`` from ``decode_numpy_column`` (a value it refuses) is not a fault:
    the records are decoded one by one, which gives their values (or the record's own
    error)."""
    path = tmp_path / "data"
    rk.write_dataset(make_records(20, seed=4, varied=False), SCHEMA, path, progress=False)
    expected = list(rk.open(path, fields=["embedding", "label"]).records())
    monkeypatch.setattr(TensorCodec, "decode_numpy_column", _failing_column_decode(ValueError("refused")))
    assert_same(list(rk.open(path, fields=["embedding", "label"]).records()), expected, "records")


def test_a_chunk_decoded_whole_slices_no_record_out_of_its_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records' bytes, which only a record parsed or decoded alone needs, are not
    sliced for a chunk whose records were all decoded together (a copy a record, thrown
    away); where a record is left to the per-record path, they are, and the values are
    those of the record-by-record read."""
    sliced: list[int] = []
    data = _parsed_shard._data

    def counted(buffers: Any, offsets: Any) -> Any:
        sliced.append(len(offsets[0]) - 1)
        return data(buffers, offsets)

    monkeypatch.setattr(_parsed_shard, "_data", counted)
    path = tmp_path / "data"
    rk.write_dataset(make_records(70, seed=3, varied=False), SCHEMA, path, shard_records=30, progress=False)
    together = list(rk.open(path).records())
    assert len(together) == 70
    assert sliced == []
    varied = tmp_path / "varied"
    rk.write_dataset(make_records(70, seed=3, varied=True), SCHEMA, varied, shard_records=30, progress=False)
    read = list(rk.open(varied).records())
    assert sliced, "a chunk of several layouts gives its records' bytes to the per-record path"
    one_by_one = rk.open(varied).records(on_corrupt="skip", report=rk.CorruptionReport())
    assert_same(list(one_by_one), read, "records")
