"""Helpers for the codec tests: write records to a real TFRecord file, read them back
through tf.data with the generated parser, or without TensorFlow through numpy."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

import recordkit as rk
from recordkit._numpy_decode import decode_record_numpy
from recordkit._tfrecord import TFRecordFileWriter, iter_tfrecords


def bind(**fields: rk.FieldSpec | Mapping[str, Any]) -> rk.BoundSchema:
    """A bound schema named ``test`` with ``fields`` (FieldSpecs or their dicts)."""
    specs = {name: f if isinstance(f, rk.FieldSpec) else rk.FieldSpec(**f) for name, f in fields.items()}
    return rk.Schema(name="test", fields=specs).bind()


def write(bound: rk.BoundSchema, records: Iterable[Mapping[str, Any]], path: Path) -> Path:
    """Encode ``records`` with rk.RecordEncoder into a TFRecord file at ``path``."""
    encoder = rk.RecordEncoder(bound)
    writer = TFRecordFileWriter(path)
    try:
        for i, record in enumerate(records):
            writer.write(encoder.encode(record, i))
    finally:
        writer.close()
    return path


def read_tf(bound: rk.BoundSchema, path: Path, batch: int) -> list[dict[str, Any]]:
    """The decoded batches of ``path`` through ``tf.data`` and ``rk.make_parser``."""
    import tensorflow as tf

    dataset = tf.data.TFRecordDataset(str(path)).batch(batch).map(rk.make_parser(bound))
    return list(dataset)


def read_numpy(bound: rk.BoundSchema, path: Path) -> list[dict[str, Any]]:
    """The records of ``path`` decoded without TensorFlow."""
    return [
        decode_record_numpy(bound.fields, data, index=i) for i, (_, data) in enumerate(iter_tfrecords(path))
    ]


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


DOCS = Path(__file__).resolve().parents[2] / "docs" / "codecs"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def run_doc_examples(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the ```python blocks of docs/codecs/``page`` in order, in one namespace, in
    ``tmp_path`` (where they write their files); return how many ran."""
    blocks = _PYTHON_BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": f"docs_{page}"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{page} (python block {i + 1})", "exec"), namespace)
    return len(blocks)
