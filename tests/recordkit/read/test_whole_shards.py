"""tf.data reads shards whose records share one layout whole (sdk/recordkit/read/_whole_shards.py):
a field group's shards read alone, and a split's own shards when every field read has a
fixed shape. The batches, values, dtypes and shapes are those of the record-by-record
read (``TFRecordDataset`` and ``tf.io.parse_example``), whatever the batch options; a
shard whose records do not all share the layout is parsed by ``tf.io.parse_example``
instead, with the same values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _reader_support import whole_shard_reads

import recordkit as rk
from recordkit.read import _traced, _whole_shards
from recordkit.read._traced import UNOPTIMIZED_ATTRIBUTE

BASE = rk.Schema(
    name="fixed",
    fields={
        "vector": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [2, 3]}),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 10}),
        "ratio": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}),
    },
)
GROUP = rk.Schema(
    name="predictions",
    fields={
        "embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [7]}),
        "predicted": rk.FieldSpec(codec="label", options={"num_classes": 300}),
    },
)
RECORDS = 230
SHARD_RECORDS = 50


def _write(path: Path, predicted: list[int]) -> Path:
    rng = np.random.default_rng(36)
    base = [
        {
            "vector": rng.normal(size=(2, 3)).astype(np.float32),
            "label": int(rng.integers(0, 10)),
            "ratio": float(np.float32(rng.normal())),
        }
        for _ in range(RECORDS)
    ]
    rk.write_dataset(base, BASE, path, shard_records=SHARD_RECORDS, progress=False)
    embeddings = rng.normal(size=(RECORDS, 7)).astype(np.float32)
    embeddings[3, 0], embeddings[4, 1] = np.float32("nan"), np.float32("-0.0")
    added = [{"embedding": e, "predicted": p} for e, p in zip(embeddings, predicted, strict=True)]
    rk.add_fields(path, "train", GROUP, added, name="predictions")
    return path


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every shard of one record size: labels of one varint byte."""
    predicted = [int(i % 100) for i in range(RECORDS)]
    return _write(tmp_path_factory.mktemp("whole") / "data", predicted)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first shard of one record size, the later ones not (labels of 128 and more take
    two varint bytes): read whole, those are parsed by ``tf.io.parse_example``."""
    predicted = [int(i % 100) if i < SHARD_RECORDS else int((i * 37) % 300) for i in range(RECORDS)]
    return _write(tmp_path_factory.mktemp("mixed") / "data", predicted)


def _read(
    path: Path, fields: list[str], monkeypatch: pytest.MonkeyPatch, whole: bool, **options: Any
) -> tuple[list[dict[str, np.ndarray]], Any, int]:
    """Every batch of the read, its element spec, and how many reads of whole shards it built."""
    with whole_shard_reads(monkeypatch, whole) as built:
        ds = rk.open(path, fields=fields).tf(**options)
    return [tf.nest.map_structure(lambda t: t.numpy(), batch) for batch in ds], ds.element_spec, len(built)


def _assert_same(got: list[dict[str, np.ndarray]], want: list[dict[str, np.ndarray]]) -> None:
    assert len(got) == len(want) > 1
    for got_batch, want_batch in zip(got, want, strict=True):
        assert list(got_batch) == list(want_batch)
        for key in want_batch:
            assert got_batch[key].dtype == want_batch[key].dtype, key
            assert got_batch[key].shape == want_batch[key].shape, key
            if want_batch[key].dtype == object:  # strings: by value, not by their objects' addresses
                assert got_batch[key].tolist() == want_batch[key].tolist(), key
                continue
            # Bit for bit: NaN and -0.0 included.
            assert got_batch[key].tobytes() == want_batch[key].tobytes(), key


OPTIONS = [
    {"batch_size": 16},
    {"batch_size": 16, "drop_remainder": True},
    {"batch_size": 64},
    {"batch_size": 50, "repeat": 2},
    {"batch_size": 7, "shuffle_files": True, "seed": 5, "drop_remainder": True},
    {"batch_size": 7, "shuffle_files": True, "seed": 5, "repeat": 3},
    {"batch_size": 16, "rank": 1, "world_size": 2},  # a share of the shards
]
FIELDS = [["embedding", "predicted"], ["embedding"], ["vector", "label", "ratio"], ["label", "vector"]]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("fields", FIELDS, ids="+".join)
def test_shards_of_one_layout_read_whole_give_the_batches_of_the_record_by_record_read(
    dataset: Path, fields: list[str], options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, whole_spec, built = _read(dataset, fields, monkeypatch, True, **options)
    plain, plain_spec, none = _read(dataset, fields, monkeypatch, False, **options)
    assert (built, none) == (1, 0)
    assert list(whole_spec) == list(plain_spec)
    for key, spec in plain_spec.items():
        assert whole_spec[key].dtype == spec.dtype, key
        assert whole_spec[key].shape[1:] == spec.shape[1:], key
        assert spec.shape.is_compatible_with(whole_spec[key].shape), key
    _assert_same(whole, plain)


def test_shards_whose_records_differ_in_layout_are_parsed_with_the_same_values(
    mixed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, _, built = _read(mixed, ["embedding", "predicted"], monkeypatch, True, batch_size=16)
    plain, _, _ = _read(mixed, ["embedding", "predicted"], monkeypatch, False, batch_size=16)
    assert built == 1
    assert max(int(batch["predicted"].max()) for batch in whole) >= 128
    _assert_same(whole, plain)


@pytest.mark.parametrize(
    ("fields", "options"),
    [
        (["embedding", "label"], {"batch_size": 16}),  # a group's shard joined to the split's
        (["embedding"], {"batch_size": 16, "shuffle_buffer": 32, "seed": 3}),  # records shuffled one by one
        (["embedding"], {"batch_size": 1, "rank": 3, "world_size": 8}),  # a share of the records
        (["embedding"], {"batch_size": 16, "on_corrupt": "skip"}),
        (["embedding"], {}),  # single records
    ],
)
def test_reads_that_need_records_one_by_one_or_joined_keep_the_record_by_record_read(
    dataset: Path, fields: list[str], options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    records, _, built = _read(dataset, fields, monkeypatch, True, **options)
    plain, _, _ = _read(dataset, fields, monkeypatch, False, **options)
    assert built == 0
    assert len(records) == len(plain) > 0


def test_a_split_whose_first_shard_holds_records_of_several_sizes_is_read_record_by_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    predicted = [int((i * 37) % 300) for i in range(RECORDS)]
    path = _write(tmp_path / "data", predicted)
    _, _, built = _read(path, ["embedding", "predicted"], monkeypatch, True, batch_size=16)
    assert built == 0


def test_a_split_with_a_later_shard_over_the_whole_shard_bound_is_read_record_by_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read of whole shards holds each shard it reads: a small first shard must not let
    a larger one appended later in (every listed shard's size is checked, not the first's)."""
    path = tmp_path / "data"
    rows = [{"vector": np.zeros((2, 3), np.float32), "label": 1, "ratio": 0.5} for _ in range(40)]
    rk.write_dataset(rows[:10], path, BASE, shard_records=10, progress=False)
    rk.write_dataset(rows, path, BASE, shard_records=40, append=True, progress=False)
    sizes = [shard.bytes for shard in rk.open(path).manifest.splits["train"].shards]
    assert sizes[0] < sizes[1]
    monkeypatch.setattr(_whole_shards, "WHOLE_SHARD_BYTES", sizes[0])
    records, _, built = _read(path, ["vector", "label"], monkeypatch, True, batch_size=16)
    assert built == 0
    assert sum(len(batch["label"]) for batch in records) == 50
    monkeypatch.setattr(_whole_shards, "WHOLE_SHARD_BYTES", sizes[1])
    records, _, built = _read(path, ["vector", "label"], monkeypatch, True, batch_size=16)
    assert built == 1
    assert sum(len(batch["label"]) for batch in records) == 50


def _graph(read: Any) -> tuple[list[Any], dict[str, Any]]:
    """The nodes of ``read``'s serialized graph and its functions by name."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef.FromString(read._as_serialized_graph().numpy())
    return list(graph.node), {function.signature.name: function for function in graph.library.function}


def test_a_whole_shard_read_rebatches_without_a_map_and_its_shard_function_skips_grappler(
    dataset: Path,
) -> None:
    """No identity map before the rebatch (``Dataset.rebatch`` adds one, traced at every
    build and called at every batch), and no function started for each shard: one
    parallel map reads the shards, its function giving each as a dataset of its blocks
    (unbatched: tensors of their own, never slices, which the rebatch would log a
    ``Tensor RefCount`` line for), one interleave of those datasets with the identity
    function; both functions carry the attribute that keeps TensorFlow from optimizing
    them again at each iterator."""
    nodes, functions = _graph(rk.open(dataset, fields=["embedding", "predicted"]).tf(batch_size=16))
    ops = [node.op for node in nodes]
    assert "MapDataset" not in ops
    assert "ParallelInterleaveDatasetV4" not in ops
    assert ops.count("RebatchDatasetV2") == 1
    (interleave,) = [node for node in nodes if node.op == "InterleaveDataset"]
    itself = functions[interleave.attr["f"].func.name]
    assert itself.attr[UNOPTIMIZED_ATTRIBUTE].b
    assert not [node for node in itself.node_def if node.op != "Identity"]
    (load,) = [node for node in nodes if node.op == "ParallelMapDatasetV2"]
    blocks = functions[load.attr["f"].func.name]
    assert blocks.attr[UNOPTIMIZED_ATTRIBUTE].b
    block_ops = [node.op for node in blocks.node_def]
    assert "PyFuncStateless" in block_ops
    assert block_ops.count("UnbatchDataset") == 2
    assert "RebatchDatasetV2" not in block_ops


@pytest.mark.parametrize(
    "options", [{"batch_size": 16}, {"batch_size": 7, "repeat": 2, "drop_remainder": True}]
)
def test_a_tensorflow_without_the_internals_gets_the_plain_interleave_and_rebatch_and_the_same_batches(
    dataset: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    fields = ["embedding", "predicted"]
    marked, _, built = _read(dataset, fields, monkeypatch, True, **options)
    monkeypatch.setattr(_traced, "MARKED_MAP_RELEASES", ("1.0.",))
    plain_read = rk.open(dataset, fields=fields).tf(**options)
    nodes, functions = _graph(plain_read)
    (interleave,) = [node for node in nodes if node.op == "InterleaveDataset"]
    assert not functions[interleave.attr["f"].func.name].attr[UNOPTIMIZED_ATTRIBUTE].b
    (load,) = [node for node in nodes if node.op == "ParallelMapDatasetV2"]
    assert not functions[load.attr["f"].func.name].attr[UNOPTIMIZED_ATTRIBUTE].b
    assert "MapDataset" in [node.op for node in nodes]
    plain, _, plain_built = _read(dataset, fields, monkeypatch, True, **options)
    assert (built, plain_built) == (1, 1)
    _assert_same(marked, plain)


def test_reads_of_one_layout_reuse_one_traced_function_and_each_reads_its_own_shards(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shard function of a read of whole shards is traced once for its fields' layout
    and reused by the next read of that layout (its shards come through the place each
    element names, not through the trace): another dataset of the same schema, read
    after, gives its own values."""
    other = _write(tmp_path / "other", [int((i * 7) % 10) for i in range(RECORDS)])
    fields = ["embedding", "predicted"]
    first, second = (rk.open(path, fields=fields).tf(batch_size=16) for path in (dataset, other))
    names = []
    for read in (first, second):
        nodes, _ = _graph(read)
        (load,) = [node for node in nodes if node.op == "ParallelMapDatasetV2"]
        names.append(load.attr["f"].func.name)
    assert names[0] == names[1]
    for path, read in ((dataset, first), (other, second)):
        plain, _, built = _read(path, fields, monkeypatch, False, batch_size=16)
        assert built == 0
        _assert_same([{key: value.numpy() for key, value in batch.items()} for batch in read], plain)


def test_an_iterator_outlives_its_dropped_pipeline_and_a_dropped_read_releases_its_shards(
    dataset: Path,
) -> None:
    import gc

    from recordkit.read import _whole_shards  # private: the loaders the traced reads dispatch to

    fields = ["embedding", "predicted"]
    gc.collect()
    before = len(_whole_shards._LOADERS)
    iterator = iter(rk.open(dataset, fields=fields).tf(batch_size=16))
    gc.collect()
    assert sum(int(batch["embedding"].shape[0]) for batch in iterator) == RECORDS
    del iterator
    for _ in range(3):
        rk.open(dataset, fields=fields).tf(batch_size=16)
    gc.collect()
    assert len(_whole_shards._LOADERS) == before


RAW = rk.Schema(
    name="raw",
    fields={
        "flags": rk.FieldSpec(codec="tensor", options={"dtype": "bool", "shape": [3]}),
        "counts": rk.FieldSpec(codec="tensor", options={"dtype": "uint32", "shape": [2]}),
        "half": rk.FieldSpec(codec="tensor", options={"dtype": "float16", "shape": [2, 2]}),
        "wide": rk.FieldSpec(codec="tensor", options={"dtype": "int64", "shape": [5]}),
        "numbers": rk.FieldSpec(
            codec="tensor", options={"dtype": "float32", "shape": [3], "stored": "numbers"}
        ),
        "tag": rk.FieldSpec(codec="label", options={"num_classes": 10}),
        "note": rk.FieldSpec(codec="scalar", options={"dtype": "str"}),  # bytes cut by substr
    },
)


@pytest.fixture(scope="module")
def raw_dataset(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dataset`` copied, with a group of raw arrays of several dtypes (and a tensor
    stored as a list of numbers, which is no raw array)."""
    import shutil

    path = tmp_path_factory.mktemp("raw") / "data"
    shutil.copytree(dataset, path)
    rng = np.random.default_rng(7)
    values = [
        {
            "flags": rng.integers(0, 2, size=3).astype(bool),
            "counts": rng.integers(0, 2**32, size=2, dtype=np.uint64).astype(np.uint32),
            "half": rng.normal(size=(2, 2)).astype(np.float16),
            "wide": rng.integers(-(2**62), 2**62, size=5),
            "numbers": rng.normal(size=3).astype(np.float32),
            "tag": int(rng.integers(0, 10)),
            "note": f"note {i % 10}",
        }
        for i in range(RECORDS)
    ]
    rk.add_fields(path, "train", RAW, values, name="raw")
    return path


@pytest.mark.parametrize("options", [{"batch_size": 16}, {"batch_size": 7, "shuffle_files": True, "seed": 2}])
def test_raw_arrays_of_every_dtype_come_out_of_the_shard_decoded_as_the_codec_decodes_them(
    raw_dataset: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    """Fields stored as raw arrays (``rk.DecodedAsRawArray``: ``tensor`` of a fixed shape
    stored as bytes) are cut out of the shard's frames as one slice and bitcast, with no
    ``substr`` or ``decode_raw`` a record: the values, dtypes and shapes are the codec's
    decode's."""
    fields = list(RAW.fields)
    whole, whole_spec, built = _read(raw_dataset, fields, monkeypatch, True, **options)
    plain, plain_spec, _ = _read(raw_dataset, fields, monkeypatch, False, **options)
    assert built == 1
    assert {key: spec.dtype for key, spec in whole_spec.items()} == {
        key: spec.dtype for key, spec in plain_spec.items()
    }
    _assert_same(whole, plain)
    _, functions = _graph(rk.open(raw_dataset, fields=["flags", "counts", "half", "wide"]).tf(batch_size=16))
    ops = {node.op for function in functions.values() for node in function.node_def}
    assert "PyFuncStateless" in ops
    assert not ops & {"Substr", "DecodeRaw"}
    assert "Bitcast" in ops  # the frames' bytes cut as one slice, then bitcast


def test_a_shard_of_one_layout_whose_raw_arrays_are_all_short_is_refused_naming_its_first_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every record of the second shard one size and one layout, each embedding one float
    short (a faulty writer): the shard's column is not cut as raw arrays of the wrong
    size, the read stops naming the shard, its first record's offset and number and the
    field, as the record-by-record read does."""
    import recordkit.schema._encoder as encoder_module  # private: lets a faulty writer store short values
    from recordkit_codecs import tensor

    encode = tensor.TensorCodec.encode

    def short(self: Any, value: Any) -> Any:
        wire = encode(self, value)
        return {**wire, "": wire[""][:-4]} if float(np.asarray(value).reshape(-1)[0]) >= 100 else wire

    path = tmp_path / "data"
    rk.write_dataset(
        [{"ratio": float(i)} for i in range(4 * SHARD_RECORDS)],
        path,
        rk.Schema(name="ratios", fields={"ratio": BASE.fields["ratio"]}),
        shard_records=SHARD_RECORDS,
        progress=False,
    )
    values = np.repeat(np.arange(4 * SHARD_RECORDS, dtype=np.float32)[:, None], 7, axis=1)
    values[: 2 * SHARD_RECORDS] = 1.0
    with monkeypatch.context() as patch:
        patch.setattr(tensor.TensorCodec, "encode", short)
        patch.setattr(encoder_module, "_check_size", lambda *args: None)
        rk.add_fields(
            path,
            "train",
            rk.Schema(name="e", fields={"embedding": GROUP.fields["embedding"]}),
            values,
            name="e",
        )
    group = rk.Manifest.load(path).split("train").field_groups["e"]  # type: ignore[index]
    with (
        whole_shard_reads(monkeypatch, True) as built,
        pytest.raises(tf.errors.InvalidArgumentError) as raised,
    ):
        for _ in rk.open(path, fields=["embedding"]).tf(batch_size=16):
            pass
    message = str(raised.value).replace("\\'", "'")
    assert built == [1]
    assert f"shard {group.shards[2].file}, offset 0, record 100, field 'embedding'" in message
    assert "holds 24 bytes" in message
