"""A record whose field of a fixed shape holds another number of values (an embedding of 15
floats where the schema says 16), read by the ``tf.data`` reads that parse each record
alone (pictures padded or fitted: :mod:`recordkit.read._record_parse`) and by the
``tf_epochs`` readers (a Python generator of serialized records, a mixture's from its
sources): each stops with the batch parse's error, naming the file, the record's offset
and number, and the field (sdk/recordkit/read/_record_checks.py; before, the per-record
parse gave TensorFlow's ``DecodeRaw requires input size`` or ``Can't parse serialized
Example``, naming none of them)."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _writer_support import tensor_bytes_counted, tensor_one_value_short
from PIL import Image

import recordkit as rk
from recordkit.read._dataset import Dataset

tf = pytest.importorskip("tensorflow")

N = 10
BAD = 7  # the record whose embedding is one value short: in shard 1 (records 5 to 9)


def _schema(stored: str) -> rk.Schema:
    options = {"dtype": "float32", "shape": [16], "stored": stored}
    return rk.Schema(
        name="s",
        fields={
            "image": rk.FieldSpec(codec="image"),
            "embedding": rk.FieldSpec(codec="tensor", options=options),
        },
    )


def _png(i: int) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.full((8 + i, 9, 3), i, np.uint8)).save(out, "PNG")
    return out.getvalue()


def _records(first: float = 0.0) -> list[dict[str, Any]]:
    return [{"image": _png(i), "embedding": np.full(16, first + i, np.float32)} for i in range(N)]


@pytest.fixture
def one_value_short(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with tensor_one_value_short(monkeypatch, BAD):
        yield


def _unquoted(error: BaseException) -> str:
    """The error's message as recordkit wrote it (TensorFlow escapes its quotes)."""
    return str(error).replace("\\'", "'")


FIT = rk.Layout(image_size=(8, 8))
PAD = rk.Layout(pad=True)
READS: dict[str, Callable[[Dataset], Any]] = {
    "tf, pictures fitted": lambda ds: ds.tf(batch_size=4, layout=FIT),
    "tf, pictures padded": lambda ds: ds.tf(batch_size=4, layout=PAD),
    "tf_epochs, pictures fitted": lambda ds: ds.tf_epochs(batch_size=4, layout=FIT).dataset(),
    "tf_epochs, shuffled, pictures padded": lambda ds: ds.tf_epochs(
        batch_size=3, shuffle=True, layout=PAD
    ).dataset(),
    "tf_epochs, the embedding alone": lambda ds: ds.select(["embedding"]).tf_epochs(batch_size=4).dataset(),
    "tf_epochs, single records": lambda ds: ds.select(["embedding"]).tf_epochs().dataset(),
}


@pytest.mark.parametrize("stored", ["bytes", "numbers"])
@pytest.mark.parametrize("read", sorted(READS))
def test_a_record_of_a_wrong_count_is_named_by_the_per_record_and_epoch_reads(
    tmp_path: Path, one_value_short: Any, stored: str, read: str
) -> None:
    root = tmp_path / "data"
    rk.write_dataset(_records(), root, _schema(stored), shard_records=5, progress=False)
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(READS[read](rk.open(root)))
    message = _unquoted(raised.value)
    where = rf"DecodeError: shard train-00001\.tfrecord, offset \d+, record {BAD}, field 'embedding'"
    assert re.search(where, message), message
    assert ("holds 60 bytes" if stored == "bytes" else "holds 15 values") in message


@pytest.mark.parametrize("count", [2, 0])
@pytest.mark.parametrize("read", sorted(READS))
def test_a_bytes_stored_tensor_of_a_wrong_value_count_is_named_by_the_per_record_and_epoch_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: str, count: int
) -> None:
    """Two values, or none, each of the right size: before, the per-record parse's
    ``tf.io.parse_example`` refused the record with TensorFlow's own error."""
    root = tmp_path / "data"
    with tensor_bytes_counted(monkeypatch, BAD, count):
        rk.write_dataset(_records(), root, _schema("bytes"), shard_records=5, progress=False)
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(READS[read](rk.open(root)))
    message = _unquoted(raised.value)
    where = rf"DecodeError: shard train-00001\.tfrecord, offset \d+, record {BAD}, field 'embedding'"
    assert re.search(where, message), message
    assert f"holds {count} values" in message


@pytest.mark.parametrize("layout", [None, FIT], ids=["batched parse", "per-record parse"])
def test_a_mixture_names_the_source_that_holds_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: rk.Layout | None
) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    rk.write_dataset(_records(first=100.0), good, _schema("bytes"), shard_records=5, progress=False)
    with tensor_one_value_short(monkeypatch, BAD):
        rk.write_dataset(_records(), bad, _schema("bytes"), shard_records=5, progress=False)
    mixture = rk.mix({rk.open(good): 0.5, rk.open(bad): 0.5})
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(mixture.tf_epochs(batch_size=4, layout=layout).dataset())
    where = f"shard {bad}/train-00001.tfrecord, offset "
    message = _unquoted(raised.value)
    assert where in message, message
    assert f"record {BAD}, field 'embedding'" in message


@pytest.mark.parametrize("stored", ["bytes", "numbers"])
def test_right_counts_read_as_before(tmp_path: Path, stored: str) -> None:
    root = tmp_path / "data"
    rk.write_dataset(_records(), root, _schema(stored), shard_records=5, progress=False)
    want = np.repeat(np.arange(N, dtype=np.float32)[:, None], 16, axis=1)
    ds = rk.open(root)
    for name in ("tf, pictures fitted", "tf, pictures padded", "tf_epochs, pictures fitted"):
        got = np.concatenate([batch["embedding"].numpy() for batch in READS[name](ds)])
        np.testing.assert_array_equal(got, want, err_msg=name)
    got = np.stack([record["embedding"].numpy() for record in READS["tf_epochs, single records"](ds)])
    np.testing.assert_array_equal(got, want)
