"""A record whose field of a fixed shape holds another number of values (an embedding of 15
floats where the schema says 16), read through ``tf.data``: every read stops with an error
naming the file that holds the field (a field group's shard, for a group's field), the
record's offset and number, and the field, as the numpy reader's error does
(sdk/recordkit/read/_wire_checks.py; before, TensorFlow's parse or decode error named
none of them)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _writer_support import tensor_bytes_counted, tensor_one_value_short

import recordkit as rk
from recordkit.errors import DecodeError

tf = pytest.importorskip("tensorflow")

N = 10
BAD = 7  # the record whose embedding is one float short: in shard 1 (records 5 to 9)
IDS = rk.Schema(name="ids", fields={"id": rk.FieldSpec(codec="scalar")})


def _embedding(stored: str) -> rk.Schema:
    options = {"dtype": "float32", "shape": [16], "stored": stored}
    return rk.Schema(name="e", fields={"embedding": rk.FieldSpec(codec="tensor", options=options)})


def _values() -> np.ndarray:
    return np.repeat(np.arange(N, dtype=np.float32)[:, None], 16, axis=1)


@pytest.fixture
def one_float_short(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Writers store the embedding of record ``BAD`` (its values all ``BAD``) one float short."""
    with tensor_one_value_short(monkeypatch, BAD):
        yield


def _unquoted(error: BaseException) -> str:
    """The error's message as recordkit wrote it (TensorFlow escapes its quotes)."""
    return str(error).replace("\\'", "'")


READS: dict[str, Callable[[Path], Any]] = {
    "split and group, batched": lambda root: rk.load_dataset(root, batch_size=4),
    "the group alone, batched (shards read whole)": lambda root: rk.load_dataset(
        root, fields=["embedding"], batch_size=4
    ),
    "the group alone, record by record": lambda root: rk.load_dataset(root, fields=["embedding"]),
    "ds.tf": lambda root: rk.open(root).tf(batch_size=3),
}


@pytest.mark.parametrize("stored", ["bytes", "numbers"])
@pytest.mark.parametrize("read", sorted(READS))
def test_a_group_record_of_a_wrong_float_count_is_named_by_every_tf_read(
    tmp_path: Path, one_float_short: Any, stored: str, read: str
) -> None:
    root = tmp_path / "data"
    rk.write_dataset([{"id": i} for i in range(N)], root, IDS, shard_records=5, progress=False)
    rk.add_fields(root, "train", _embedding(stored), _values())
    group_shard = rk.Manifest.load(root).split("train").field_groups["embedding"].shards[1].file  # type: ignore[index]
    with pytest.raises(DecodeError, match=f"record {BAD}, field 'embedding'"):
        list(rk.iter_records(root))  # the numpy reader's error, for comparison
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(READS[read](root))
    message = _unquoted(raised.value)
    assert f"shard {group_shard}, offset " in message
    assert f"record {BAD}, field 'embedding'" in message
    assert ("holds 60 bytes" if stored == "bytes" else "holds 15 values") in message


@pytest.mark.parametrize("count", [2, 0])
@pytest.mark.parametrize("read", sorted(READS))
def test_a_bytes_stored_tensor_of_a_wrong_value_count_is_named_by_every_tf_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: str, count: int
) -> None:
    """A tensor stored as raw bytes whose key holds two values, or none, each of the right
    size (its count wrong, not its size): before, the batch parse's ``tf.io.parse_example``
    refused it (``Key: embedding, Index: 2. Can't parse serialized Example``)."""
    root = tmp_path / "data"
    rk.write_dataset([{"id": i} for i in range(N)], root, IDS, shard_records=5, progress=False)
    with tensor_bytes_counted(monkeypatch, BAD, count):
        rk.add_fields(root, "train", _embedding("bytes"), _values())
    group_shard = rk.Manifest.load(root).split("train").field_groups["embedding"].shards[1].file  # type: ignore[index]
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(READS[read](root))
    message = _unquoted(raised.value)
    assert f"shard {group_shard}, offset " in message, message
    assert f"record {BAD}, field 'embedding'" in message
    assert f"holds {count} values" in message


def test_a_split_record_of_a_wrong_count_names_the_split_shard(tmp_path: Path, one_float_short: Any) -> None:
    root = tmp_path / "data"
    schema = rk.Schema(name="s", fields={**IDS.fields, **_embedding("bytes").fields})
    records = [{"id": i, "embedding": row} for i, row in enumerate(_values())]
    rk.write_dataset(records, root, schema, shard_records=5, progress=False)
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(rk.load_dataset(root, batch_size=10))
    where = rf"shard train-00001\.tfrecord, offset \d+, record {BAD}, field 'embedding': Example key"
    assert re.search(where, _unquoted(raised.value)), _unquoted(raised.value)


def test_make_parser_names_the_field_of_a_record_of_a_wrong_count(
    tmp_path: Path, one_float_short: Any
) -> None:
    """Given serialized records alone, the parser cannot say where they came from: it
    names the field, the key and the record's place in the batch (with no Python call in
    its graph, so that it can still be exported)."""
    root = tmp_path / "data"
    schema = rk.Schema(name="s", fields={**IDS.fields, **_embedding("numbers").fields})
    records = [{"id": i, "embedding": row} for i, row in enumerate(_values())]
    rk.write_dataset(records, root, schema, shard_records=5, progress=False)
    files = [str(root / shard.file) for shard in rk.Manifest.load(root).split("train").shards]
    batches = tf.data.TFRecordDataset(files).batch(10).map(rk.make_parser(schema))
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(batches)
    message = "field 'embedding': Example key 'embedding' holds 15 values in record 7 of the batch"
    assert message in _unquoted(raised.value)


@pytest.mark.parametrize("count", [2, 0])
def test_make_parser_names_a_bytes_stored_tensor_of_a_wrong_value_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    root = tmp_path / "data"
    schema = rk.Schema(name="s", fields={**IDS.fields, **_embedding("bytes").fields})
    records = [{"id": i, "embedding": row} for i, row in enumerate(_values())]
    with tensor_bytes_counted(monkeypatch, BAD, count):
        rk.write_dataset(records, root, schema, shard_records=5, progress=False)
    files = [str(root / shard.file) for shard in rk.Manifest.load(root).split("train").shards]
    batches = tf.data.TFRecordDataset(files).batch(10).map(rk.make_parser(schema))
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(batches)
    message = f"field 'embedding': Example key 'embedding' holds {count} values in record {BAD} of the batch"
    assert message in _unquoted(raised.value)


@pytest.mark.parametrize("stored", ["bytes", "numbers"])
def test_right_counts_read_as_before(tmp_path: Path, stored: str) -> None:
    root = tmp_path / "data"
    rk.write_dataset([{"id": i} for i in range(N)], root, IDS, shard_records=5, progress=False)
    rk.add_fields(root, "train", _embedding(stored), _values())
    for read in READS.values():
        got = [batch["embedding"].numpy().reshape(-1, 16) for batch in read(root)]
        np.testing.assert_array_equal(np.concatenate(got), _values())


def _split_with_embedding(root: Path, shard_records: int) -> None:
    """Records of varying sizes (ids of one and two bytes): no shard is read whole."""
    schema = rk.Schema(name="s", fields={**IDS.fields, **_embedding("bytes").fields})
    records = [{"id": i * 1000, "embedding": row} for i, row in enumerate(_values())]
    rk.write_dataset(records, root, schema, shard_records=shard_records, progress=False)


def _map_functions(read: Any) -> list[str]:
    """The names of the functions of ``read``'s parallel maps (from its serialized graph)."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef.FromString(read._as_serialized_graph().numpy())
    return [node.attr["f"].func.name for node in graph.node if node.op == "ParallelMapDatasetV2"]


def test_reads_of_one_layout_reuse_one_checked_parse_and_each_names_its_own_file(
    tmp_path: Path, one_float_short: Any
) -> None:
    """The checked parse is traced once for a layout (the trace reaches a read's shards
    through its locator's token, not through a closure): a read of another dataset of
    the same schema reuses it, and each read names its own shard on its bad record."""
    first, second = tmp_path / "first", tmp_path / "second"
    _split_with_embedding(first, 5)  # record 7 in train-00001 (records 5 to 9)
    _split_with_embedding(second, 3)  # record 7 in train-00002 (records 6 to 8)
    reads = [rk.load_dataset(root, batch_size=4) for root in (first, second, first)]
    names = [_map_functions(read) for read in reads]
    assert len(names[0]) == 1
    assert names[0] == names[1] == names[2]
    for read, shard in zip(reads, ("train-00001", "train-00002", "train-00001"), strict=True):
        with pytest.raises(tf.errors.InvalidArgumentError) as raised:
            list(read)
        where = rf"shard {shard}\.tfrecord, offset \d+, record {BAD}, field 'embedding': Example key"
        assert re.search(where, _unquoted(raised.value)), _unquoted(raised.value)


def test_an_iterator_outlives_its_dropped_read_and_a_dropped_read_releases_its_shards(
    tmp_path: Path, one_float_short: Any
) -> None:
    """The pipeline holds its read's locator (the traced parse holds its token alone, the
    locators' table holds it weakly): an iterator of a dropped pipeline still names the
    bad record's shard, and once the iterator and its pipeline are gone, so is the
    locator, with the shards it holds."""
    import gc

    from recordkit.read import _wire_checks  # private: the locators the traced parses dispatch to

    root = tmp_path / "data"
    _split_with_embedding(root, 5)
    gc.collect()
    before = len(_wire_checks._LOCATORS)
    iterator = iter(rk.load_dataset(root, batch_size=4))
    gc.collect()
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        list(iterator)
    assert "shard train-00001.tfrecord, offset " in _unquoted(raised.value)
    del iterator, raised
    for _ in range(3):
        rk.load_dataset(root, batch_size=4)
    gc.collect()
    assert len(_wire_checks._LOCATORS) == before


def test_a_read_built_in_a_graph_traces_its_own_parse_and_names_its_file(
    tmp_path: Path, one_float_short: Any
) -> None:
    """A pipeline built in a ``tf.compat.v1`` graph does not share the trace kept for
    reads built eagerly (its captured inputs are that graph's): it traces its own, and a
    bad record is named as in an eager read."""
    root = tmp_path / "data"
    _split_with_embedding(root, 5)
    rk.load_dataset(root, batch_size=4)  # an eager read of the layout: its trace kept
    graph = tf.Graph()
    with graph.as_default():
        batch = tf.compat.v1.data.make_one_shot_iterator(rk.load_dataset(root, batch_size=4)).get_next()
        with tf.compat.v1.Session(graph=graph) as session:

            def read_all() -> None:
                while True:
                    session.run(batch)

            with pytest.raises(tf.errors.InvalidArgumentError) as raised:
                read_all()
    where = rf"shard train-00001\.tfrecord, offset \d+, record {BAD}, field 'embedding': Example key"
    assert re.search(where, _unquoted(raised.value)), _unquoted(raised.value)
