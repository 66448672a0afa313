"""Helpers for the codec tests: write records to a real TFRecord file, read them back
through tf.data with the generated parser, or without TensorFlow through numpy."""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import recordkit as rk
from recordkit.format._example import decode_example  # private: the stored wire values, without TensorFlow
from recordkit.format._tfrecord import (  # private: frames records by hand, to build or damage shards
    Compression,
    frame_record,
    iter_tfrecords,
)
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)
from recordkit.storage import location
from recordkit.write._shard_file import ShardFile  # private: writes a shard exactly as the writer does


def bind(**fields: rk.FieldSpec | Mapping[str, Any]) -> rk.BoundSchema:
    """A bound schema named ``test`` with ``fields`` (FieldSpecs or their dicts)."""
    specs = {name: f if isinstance(f, rk.FieldSpec) else rk.FieldSpec(**f) for name, f in fields.items()}
    return rk.Schema(name="test", fields=specs).bind()


def write(bound: rk.BoundSchema, records: Iterable[Mapping[str, Any]], path: Path) -> Path:
    """Encode ``records`` with rk.RecordEncoder into a TFRecord file at ``path``."""
    encoder = rk.RecordEncoder(bound)
    shard = ShardFile(location(path), Compression.NONE, durable=False)
    try:
        for i, record in enumerate(records):
            shard.add(frame_record(encoder.encode(record, i)))
    except BaseException:
        shard.discard()
        raise
    shard.commit()
    return path


def read_tf(bound: rk.BoundSchema, path: Path, batch: int) -> list[dict[str, Any]]:
    """The decoded batches of ``path`` through ``tf.data`` and ``rk.make_parser``."""
    import tensorflow as tf

    dataset = tf.data.TFRecordDataset(str(path)).batch(batch).map(rk.make_parser(bound))
    return list(dataset)


def read_numpy(bound: rk.BoundSchema, path: Path) -> list[dict[str, Any]]:
    """The records of ``path`` decoded without TensorFlow."""
    return [
        decode_record_numpy(bound.fields, data, index=i)
        for i, (_, data) in enumerate(iter_tfrecords(location(path)))
    ]


def field_round_trip(
    bound: rk.BoundSchema, field: str, values: list[Any], path: Path, batch: int | None = None
) -> tuple[list[Any], list[Any]]:
    """Write one record ``{field: value}`` per value to a TFRecord file at ``path``; read
    ``field`` back in batches of ``batch`` (default: all in one) through tf.data, and one
    record at a time through numpy. Returns (the batches' values, the records' values)."""
    write(bound, ({field: value} for value in values), path)
    batches = [out[field] for out in read_tf(bound, path, batch or len(values))]
    return batches, [record[field] for record in read_numpy(bound, path)]


def parse_eager(bound: rk.BoundSchema, serialized: list[bytes]) -> dict[str, Any]:
    """One batch of serialized Examples through the generated parser, eagerly (fast for
    property tests; the file-based tests cover tf.data)."""
    import tensorflow as tf

    return rk.make_parser(bound)(tf.constant(serialized, dtype=tf.string))


def encode_error(
    bound: rk.BoundSchema, record: Mapping[str, Any], index: int = 0
) -> rk.errors.RecordkitError:
    """The recordkit error encoding ``record`` raises (the test fails if none)."""
    with pytest.raises(rk.errors.RecordkitError) as info:
        rk.RecordEncoder(bound).encode(record, index)
    return info.value


def field_error(bound: rk.BoundSchema, field: str, value: Any, index: int = 3) -> rk.errors.InvalidValueError:
    """The error encoding ``{field: value}`` as record ``index`` raises: checked to be an
    InvalidValueError whose message names the record and the field."""
    error = encode_error(bound, {field: value}, index)
    assert isinstance(error, rk.errors.InvalidValueError), repr(error)
    assert f"record {index}, field {field!r}" in str(error), str(error)
    return error


def field_share(bound: rk.BoundSchema, field: str, value: Any) -> tuple[bytes, int, int]:
    """Encode the record ``{field: value}``; return its serialized bytes, the bytes
    ``rk.byte_breakdown`` charges to ``field``, and the framing allowed on top of the
    field's payload: each of its Example keys' name plus 16 bytes (map entry, feature
    and list tags and lengths, and the varint of an int64 such as a height)."""
    data = rk.RecordEncoder(bound).encode({field: value})
    sizes = rk.byte_breakdown(bound, data)
    assert sum(sizes.values()) == len(data)
    framing = sum(len(key) + 16 for key in bound[field].keys)
    return data, sizes[field], framing


def assert_stored_near_payload(bound: rk.BoundSchema, field: str, value: Any, payload: int) -> int:
    """Assert that ``{field: value}`` costs its ``payload`` bytes, plus at most 1% and a
    few bytes of framing, by the record's byte breakdown; return the field's share."""
    _, share, framing = field_share(bound, field, value)
    assert payload <= share <= payload * 1.01 + framing, (field, payload, share, framing)
    return share


@dataclass(frozen=True)
class SingleField:
    """A schema of one ``codec`` field named ``name`` and the ways the codec tests use it:
    the wrappers each test module used to define for itself. The conftest hands one per
    codec to the tests as a fixture (``image_field``, ``mask_field``, ``audio_field``)."""

    codec: str
    name: str
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def schema(self, **options: Any) -> rk.Schema:
        """The schema of the field with ``options`` over the harness's defaults."""
        spec = rk.FieldSpec(codec=self.codec, options={**self.defaults, **options})
        return rk.Schema(name=self.name, fields={self.name: spec})

    def bound(self, **options: Any) -> rk.BoundSchema:
        return self.schema(**options).bind()

    def encode(self, value: Any, **options: Any) -> bytes:
        """The serialized Example of the record ``{name: value}``."""
        return rk.RecordEncoder(self.bound(**options)).encode({self.name: value}, 0)

    def wire(self, value: Any, **options: Any) -> dict[str, Any]:
        """The first value of each Example key the field writes, by the key's suffix
        (``""`` for the key named as the field, ``"height"`` for ``name/height``)."""
        parsed = decode_example(self.encode(value, **options))
        prefix = f"{self.name}/"
        return {
            key.removeprefix(prefix) if key != self.name else "": values[0]
            for key, (_, values) in parsed.items()
            if (key == self.name or key.startswith(prefix)) and len(values)
        }

    def stored_bytes(self, value: Any, **options: Any) -> bytes:
        """The encoded bytes the field stores for ``value``."""
        stored: bytes = self.wire(value, **options)[""]
        return stored

    def error(self, value: Any, **options: Any) -> rk.errors.InvalidValueError:
        """The error of encoding ``value`` as record 3 (checked to name record and field)."""
        return field_error(self.bound(**options), self.name, value)

    def round_trip(
        self, tmp_path: Path, values: list[Any], batch: int | None = None, **options: Any
    ) -> tuple[list[Any], list[Any]]:
        """Write one record per value to a real TFRecord file; read the field back in
        batches of ``batch`` (default: all) with tf.data and one by one with numpy.
        Returns (the TF batches' values, the numpy values)."""
        path = tmp_path / f"{self.name}.tfrecord"
        return field_round_trip(self.bound(**options), self.name, values, path, batch)


DOCS = Path(__file__).resolve().parents[2] / "docs" / "codecs"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def run_doc_examples(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the ```python blocks of docs/codecs/``page`` in order, in one namespace, in
    ``tmp_path`` (where they write their files); return how many ran."""
    blocks = _python_blocks(page)
    _run_blocks(page, list(enumerate(blocks)), tmp_path, monkeypatch)
    return len(blocks)


def run_doc_example_first(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Run the last ```python block of docs/codecs/``page`` (its worked example), then the
    snippets before it, which use its results; return the namespace they ran in."""
    blocks = list(enumerate(_python_blocks(page)))
    assert blocks, f"docs/codecs/{page} has no python example"
    return _run_blocks(page, [blocks[-1], *blocks[:-1]], tmp_path, monkeypatch)


def _python_blocks(page: str) -> list[str]:
    blocks: list[str] = _PYTHON_BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    return blocks


def _run_blocks(
    page: str, blocks: list[tuple[int, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """Run the numbered ``blocks`` of ``page`` in one namespace, in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": f"docs_{page}"}
    for i, block in blocks:
        exec(compile(block, f"{page} (python block {i + 1})", "exec"), namespace)
    return namespace


def png_with_header(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims ``width x height`` (8-bit gray) with a tiny, valid chunk
    structure: the shape of a decompression bomb."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + payload))
        return struct.pack(">I", len(payload)) + kind + payload + crc

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    data = chunk(b"IDAT", zlib.compress(b"\0" * 64))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + data + chunk(b"IEND", b"")
