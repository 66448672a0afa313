"""Hostile and damaged field group shards, read whole by tf.data
(sdk/recordkit/read/_whole_shards.py): each is refused as the record-by-record read
(``TFRecordDataset`` and ``tf.io.parse_example``) refuses it, with the same error where
that read names the shard, the offset and the records read; no value of a damaged
record is ever given."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _reader_support import whole_shard_reads

import recordkit as rk
from recordkit.errors import RecordkitError
from recordkit.format._tfrecord import frame_record, iter_tfrecords  # private: rewrites a damaged shard
from recordkit.storage import location

GROUP = rk.Schema(
    name="predictions",
    fields={
        "embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [7]}),
        "predicted": rk.FieldSpec(codec="label", options={"num_classes": 10}),
    },
)
BASE = rk.Schema(name="base", fields={"label": rk.FieldSpec(codec="label", options={"num_classes": 10})})
RECORDS = 120
DAMAGED = 1  # the group shard the faults damage (of three)
MIDDLE = 20  # the record of it they damage
FIELDS = ["embedding", "predicted"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("whole-faults") / "data"
    rk.write_dataset(
        [{"label": i % 10} for i in range(RECORDS)], BASE, root, shard_records=40, progress=False
    )
    rng = np.random.default_rng(7)
    added = [
        {"embedding": rng.normal(size=7).astype(np.float32), "predicted": i % 10} for i in range(RECORDS)
    ]
    rk.add_fields(root, "train", GROUP, added, name="predictions")
    return root


def _group_shard(root: Path) -> Path:
    return sorted((root / "fields" / "train").glob("*.tfrecord"))[DAMAGED]


def _records(path: Path) -> list[bytes]:
    return [data for _, data in iter_tfrecords(location(str(path)))]


def _rewrite(path: Path, records: list[bytes]) -> None:
    path.write_bytes(b"".join(frame_record(data) for data in records))


def _example(data: bytes, change: Callable[[tf.train.Example], None]) -> bytes:
    example = tf.train.Example.FromString(data)
    change(example)
    return example.SerializeToString()


def _list_size(root: Path) -> None:
    """The manifest lists the damaged group shard's new size (a hostile manifest agreeing
    with its file), so that the read's size check passes and the bytes are read."""
    data = json.loads((root / "dataset.json").read_text())
    shard = data["splits"]["train"]["field_groups"]["predictions"]["shards"][DAMAGED]
    shard["bytes"] = _group_shard(root).stat().st_size
    (root / "dataset.json").write_text(json.dumps(data))


def _longer_embedding(root: Path) -> None:
    """A record of another length in the middle: its embedding holds eight numbers
    (CRCs right), and the next one is cut to keep the file's size."""
    path = _group_shard(root)
    records = _records(path)
    longer = _example(
        records[MIDDLE],
        lambda e: e.features.feature["embedding"].bytes_list.value.__setitem__(
            0, e.features.feature["embedding"].bytes_list.value[0] + b"\0\0\0\0"
        ),
    )
    records[MIDDLE] = longer
    _rewrite(path, records)
    _list_size(root)


def _key_renamed(root: Path) -> None:
    """A template byte changed: a record's key ``predicted`` renamed ``predictex`` (CRCs right)."""
    path = _group_shard(root)
    records = _records(path)
    records[MIDDLE] = records[MIDDLE].replace(b"predicted", b"predictex")
    _rewrite(path, records)


def _bit_flip(root: Path) -> None:
    """One bit of a value flipped (its CRC left as written)."""
    path = _group_shard(root)
    data = bytearray(path.read_bytes())
    frame = len(data) // 40
    data[MIDDLE * frame + 12 + 30] ^= 0x10
    path.write_bytes(bytes(data))


def _record_missing(root: Path) -> None:
    """A group shard holding one record fewer than its manifest lists (the manifest's size
    made to agree with the file)."""
    path = _group_shard(root)
    _rewrite(path, _records(path)[:-1])
    _list_size(root)


def _truncated(root: Path) -> None:
    path = _group_shard(root)
    path.write_bytes(path.read_bytes()[:-10])


FAULTS: dict[str, Callable[[Path], None]] = {
    "a record of another length in the middle": _longer_embedding,
    "a key renamed": _key_renamed,
    "a bit flipped in a value": _bit_flip,
    "a record missing": _record_missing,
    "a truncated shard": _truncated,
}


def _outcome(root: Path, whole: bool, monkeypatch: pytest.MonkeyPatch, verify: Any, built: list[int]) -> Any:
    """What a read of the group's fields gives: its values, or the error it raises."""
    with whole_shard_reads(monkeypatch, whole) as builds:
        try:
            ds = rk.open(root, fields=FIELDS, verify=verify).tf(batch_size=16)
            return [batch["embedding"].numpy() for batch in ds]
        except (RecordkitError, tf.errors.OpError) as exc:
            return exc
        finally:
            built.extend(builds)


@pytest.mark.parametrize("verify", [True, False, "sha256"], ids=str)
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_damaged_group_shard_read_whole_is_refused_as_the_record_by_record_read_refuses_it(
    pristine: Path, tmp_path: Path, fault: str, verify: Any, monkeypatch: pytest.MonkeyPatch, fault_cases: Any
) -> None:
    fault_cases.tried("damaged group shards read whole")
    root = tmp_path / "data"
    shutil.copytree(pristine, root)
    FAULTS[fault](root)
    built: list[int] = []
    whole = _outcome(root, True, monkeypatch, verify, built)
    plain = _outcome(root, False, monkeypatch, verify, [])
    assert isinstance(whole, Exception), f"{fault}: read {whole}"
    assert type(whole) is type(plain), (whole, plain)
    name = _group_shard(root).name
    if name in str(plain):
        assert name in str(whole)
    if fault != "a truncated shard" and verify != "sha256":  # else refused before it is built
        assert built == [1], "the read of whole shards was built"
    if fault in ("a bit flipped in a value", "a record missing") and verify != "sha256":
        # The error the framed read gives: the shard, the offset of the first bad record
        # and the records before it.
        assert _recordkit_error(whole) == _recordkit_error(plain)
        assert f"shard fields/train/{name}, offset " in _recordkit_error(whole)
    if fault == "a key renamed" and verify != "sha256":
        # The record-by-record parse names the key alone; read whole, the shard and record too.
        assert "predicted" in str(plain)
        assert f"shard fields/train/{name}, offset " in str(whole)
        assert "predicted" in str(whole)
        assert "holds no such key, where its field stores int64 values" in str(whole)
    if fault == "a truncated shard" and verify is not False:
        assert isinstance(whole, RecordkitError)
        assert name in str(whole)


def _recordkit_error(error: Exception) -> str:
    """The recordkit error a tf.data read raised (TensorFlow's wrapping apart)."""
    text = str(error)
    return text[text.index("recordkit CorruptRecordError") : text.rindex("]")]


@pytest.mark.parametrize("shards", [3, 1])
def test_a_group_shard_cut_after_the_read_was_built_is_named_when_read(
    pristine: Path, tmp_path: Path, shards: int, fault_cases: Any
) -> None:
    fault_cases.tried("damaged group shards read whole")
    root = tmp_path / "data"
    if shards == 1:  # one shard: read in the pipeline too, not when it is built
        labels = [{"label": i % 10} for i in range(RECORDS)]
        rk.write_dataset(labels, BASE, root, shard_records=RECORDS, progress=False)
        added = [{"embedding": np.full(7, i, np.float32), "predicted": i % 10} for i in range(RECORDS)]
        rk.add_fields(root, "train", GROUP, added, name="predictions")
    else:
        shutil.copytree(pristine, root)
    group = sorted((root / "fields" / "train").glob("*.tfrecord"))[-1]
    ds = rk.open(root, fields=FIELDS).tf(batch_size=16)
    group.write_bytes(group.read_bytes()[:-10])
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"recordkit CorruptRecordError: .*{group.name}"):
        list(ds)
