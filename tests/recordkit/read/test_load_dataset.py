"""recordkit.load_dataset: a dataset as a tf.data pipeline of decoded dicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _reader_support import (
    EVERY_CODEC,
    NOT_STANDALONE,
    SCHEMA,
    assert_record,
    dumps,
    every_codec_expected,
    every_codec_records,
    expected,
    make_records,
    record_offsets,
    rows,
    run_generated,
    write,
)

import recordkit as rk
from recordkit.errors import CorruptRecordError, DatasetError, IncompatibleSchemaError, UnknownCodecError

N = 10


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("reader") / "data"
    write(path, records)  # 3 shards of 4, 4 and 2 records
    return path


@pytest.fixture(scope="module")
def every_codec_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nine records of every built-in codec in shards of three, written once for the
    tests that only read them."""
    path = tmp_path_factory.mktemp("every-codec") / "data"
    rk.write_dataset(every_codec_records(9), EVERY_CODEC, path, shard_records=3, progress=False)
    return path


def read_rows(ds: Any) -> list[dict[str, Any]]:
    return [row for batch in ds for row in rows(batch)]


def flip_bit(shard: Path, at: int) -> None:
    data = bytearray(shard.read_bytes())
    data[at] ^= 0x08
    shard.write_bytes(bytes(data))


def shard_files(path: Path) -> list[Path]:
    manifest = json.loads((path / "dataset.json").read_text())
    return [path / s["file"] for s in manifest["splits"]["train"]["shards"]]


def test_batches_decode_every_field_equal_to_what_was_written(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    ds = rk.load_dataset(dataset, batch_size=4)
    spec = ds.element_spec
    assert isinstance(spec["image"], tf.RaggedTensorSpec)  # variable-size images come ragged
    assert spec["image"].shape.rank == 4  # [B, (H), (W), C]
    assert spec["image"].ragged_rank == 2
    assert isinstance(spec["objects"]["boxes"], tf.RaggedTensorSpec)
    got = read_rows(ds)
    assert len(got) == N
    for record, row in zip(records, got, strict=True):
        assert_record(expected(record), row)


def test_single_records_are_dense_per_record(dataset: Path, records: list[dict[str, Any]]) -> None:
    ds = rk.load_dataset(dataset)
    assert isinstance(ds.element_spec["image"], tf.TensorSpec)
    assert ds.element_spec["image"].shape.rank == 3
    assert isinstance(ds.element_spec["words"], tf.TensorSpec)  # a list of strings per record
    got = list(ds)
    assert len(got) == N
    for record, row in zip(records, got, strict=True):
        assert_record(expected(record), row)


def test_one_field_is_all_that_is_parsed_and_decoded(dataset: Path, records: list[dict[str, Any]]) -> None:
    ds = rk.load_dataset(dataset, "train", ["label"], batch_size=3)
    assert set(ds.element_spec) == {"label"}
    labels = [int(v) for batch in ds for v in batch["label"]]
    assert labels == [expected(r)["label"] for r in records]


def pipeline(ds: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The dataset ops of ``ds``'s graph by op type, and its functions by name."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef.FromString(ds._as_serialized_graph().numpy())
    ops = {node.op: node for node in graph.node if node.op.endswith("Dataset") or "DatasetV" in node.op}
    return ops, {f.signature.name: f for f in graph.library.function}


def parse_keys(function: Any) -> dict[str, set[str]]:
    """The Example keys each ``ParseExampleV2`` input of ``function`` names, by input."""
    consts = {n.name: n for n in function.node_def if n.op == "Const"}
    (parse,) = [n for n in function.node_def if n.op == "ParseExampleV2"]
    keys = {}
    for kind, ref in zip(("sparse_keys", "dense_keys", "ragged_keys"), parse.input[2:5], strict=True):
        tensor = consts[ref.split(":")[0]].attr["value"].tensor
        keys[kind] = {v.decode() for v in tensor.string_val}
    return keys


def test_the_pipeline_interleaves_batches_parses_only_the_requested_keys_and_prefetches(
    dataset: Path,
) -> None:
    """The tf.data graph load_dataset builds: shards read in parallel and interleaved,
    records batched *before* one parse_example per batch that names only the requested
    fields' keys, decoded in a parallel map, then prefetched."""
    for deterministic in (True, False):
        ds = rk.load_dataset(
            dataset, fields=["label", "note", "objects"], batch_size=4, deterministic=deterministic
        )
        ops, functions = pipeline(ds)
        interleave, decode = ops["ParallelInterleaveDatasetV4"], ops["ParallelMapDatasetV2"]
        assert interleave.attr["deterministic"].s == (b"true" if deterministic else b"false")
        assert decode.attr["deterministic"].s == (b"true" if deterministic else b"false")
        assert decode.input[0].split("/")[0] == "RebatchDatasetV2"  # batched, then parsed
        assert ops["PrefetchDataset"].input[0] == decode.name
        keys = parse_keys(functions[decode.attr["f"].func.name])
        assert keys == {
            "sparse_keys": set(),
            "dense_keys": {
                "note/present",
                "objects",
                "objects/labels",
                "objects/score",
            },  # packed boxes
            # A fixed numeric key is parsed ragged, its counts checked, then made dense
            # (a record holding another count is named: recordkit/read/_wire_checks.py).
            "ragged_keys": {"label", "note"},
        }
        assert set().union(*keys.values()) == set(rk.feature_spec(SCHEMA, ["label", "note", "objects"]))


def test_keys_of_fields_not_requested_are_never_parsed(tmp_path: Path) -> None:
    """Records whose ``image`` key holds floats instead of PNG bytes: reading the label
    alone works, because the image key is not in the parse spec; asking for the image
    fails in TensorFlow's parse."""
    path = tmp_path / "odd.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for label in (0, 2, 1):
            features = {
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                "image": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5, 0.25])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    ds = rk.load_dataset(path, fields=["label"], schema=SCHEMA, batch_size=3)
    assert next(iter(ds))["label"].numpy().tolist() == [0, 2, 1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="image"):
        list(rk.load_dataset(path, fields=["label", "image"], schema=SCHEMA, batch_size=3))


def test_batch_size_and_drop_remainder(dataset: Path) -> None:
    sizes = [int(b["label"].shape[0]) for b in rk.load_dataset(dataset, fields=["label"], batch_size=3)]
    assert sizes == [3, 3, 3, 1]
    kept = [
        int(b["label"].shape[0])
        for b in rk.load_dataset(dataset, fields=["label"], batch_size=3, drop_remainder=True)
    ]
    assert kept == [3, 3, 3]
    # the manifest's counts give the number of steps (Keras, tf.distribute)
    assert int(rk.load_dataset(dataset, fields=["label"], batch_size=3).cardinality()) == 4
    assert (
        int(
            rk.load_dataset(
                dataset, fields=["label"], batch_size=3, drop_remainder=True, repeat=2
            ).cardinality()
        )
        == 6
    )
    assert int(rk.load_dataset(dataset, fields=["label"], on_corrupt="skip").cardinality()) < 0  # unknown


def test_shuffling_with_a_seed_is_reproducible_and_complete(dataset: Path) -> None:
    def order(seed: int) -> list[str]:
        ds = rk.load_dataset(
            dataset, fields=["caption"], shuffle_files=True, shuffle_buffer=8, seed=seed, repeat=2
        )
        return [r["caption"].numpy().decode() for r in ds]

    first, again, other = order(1), order(1), order(2)
    assert first == again
    assert first != other
    assert sorted(first) == sorted(f"record {i} — ünïcode" for i in range(N) for _ in range(2))
    assert first[:N] != first[N:]  # each epoch is shuffled anew


def test_unshuffled_reading_keeps_the_written_order_and_repeat_counts(dataset: Path) -> None:
    ds = rk.load_dataset(dataset, fields=["label"], repeat=3, block_length=1, cycle_length=1)
    labels = [int(r["label"]) for r in ds]
    assert labels == [i % 3 for i in range(N)] * 3


def test_pad_gives_dense_batches_with_each_true_shape(dataset: Path, records: list[dict[str, Any]]) -> None:
    ds = rk.load_dataset(dataset, fields=["image", "objects", "caption"], batch_size=4, pad=True)
    batch = next(iter(ds))
    assert isinstance(batch["image"], tf.Tensor)
    assert isinstance(batch["objects"]["boxes"], tf.Tensor)
    shapes = batch["image/shape"].numpy()
    heights = [r["image"].shape[0] for r in records[:4]]
    widths = [r["image"].shape[1] for r in records[:4]]
    assert shapes.tolist() == [[h, w, 3] for h, w in zip(heights, widths, strict=True)]
    assert batch["image"].shape == (4, max(heights), max(widths), 3)
    for i, record in enumerate(records[:4]):
        h, w = record["image"].shape[:2]
        np.testing.assert_array_equal(batch["image"][i, :h, :w].numpy(), record["image"])
        assert not batch["image"][i, h:].numpy().any()
    counts = batch["objects/boxes/shape"].numpy()[:, 0]
    assert counts.tolist() == [len(r["objects"]["boxes"]) for r in records[:4]]
    assert batch["objects"]["labels"].shape == (4, max(counts))
    assert "caption/shape" not in batch  # a dense field is left alone


def test_images_brought_to_a_named_size(dataset: Path, records: list[dict[str, Any]]) -> None:
    for fit in ("resize", "resize_with_pad", "crop_or_pad"):
        ds = rk.load_dataset(
            dataset, fields=["image", "mask"], batch_size=5, image_size=(4, 6), image_fit=fit
        )
        batch = next(iter(ds))
        assert batch["image"].shape == (5, 4, 6, 3)
        assert batch["image"].dtype == tf.uint8
        assert batch["mask"].shape == (5, 4, 6)
        assert batch["mask"].dtype == tf.uint8
        assert batch["image/shape"].numpy().tolist() == [list(r["image"].shape) for r in records[:5]]
        # masks are resized with nearest neighbour: only indices that exist (or the
        # ignore index 255, the masks' padding)
        for i, record in enumerate(records[:5]):
            assert set(np.unique(batch["mask"][i].numpy())) <= {255, *np.unique(record["mask"])}
    # crop_or_pad does not resample: the centre crop (or zero padding) of the original
    batch = next(iter(rk.load_dataset(dataset, fields=["image"], image_size=(3, 3), image_fit="crop_or_pad")))
    want = tf.image.resize_with_crop_or_pad(records[0]["image"], 3, 3).numpy()
    np.testing.assert_array_equal(batch["image"].numpy(), want)


def test_image_size_for_single_records(dataset: Path) -> None:
    ds = rk.load_dataset(dataset, fields=["image"], image_size={"image": (5, 5)})
    assert ds.element_spec["image"].shape.as_list()[:2] == [5, 5]
    assert len(list(ds)) == N


def test_input_context_splits_the_shards_or_the_records(dataset: Path) -> None:
    def captions(pipelines: int, index: int) -> list[str]:
        context = tf.distribute.InputContext(num_input_pipelines=pipelines, input_pipeline_id=index)
        ds = rk.load_dataset(dataset, fields=["caption"], input_context=context)
        return [r["caption"].numpy().decode() for r in ds]

    for pipelines in (2, 4):  # 3 shards: by shard for 2, by record for 4
        parts = [captions(pipelines, i) for i in range(pipelines)]
        everything = [c for part in parts for c in part]
        assert sorted(everything) == sorted(f"record {i} — ünïcode" for i in range(N))
        assert all(parts)


def test_a_workers_share_is_the_same_through_every_form_and_both_readers(dataset: Path) -> None:
    """num_workers/worker_index and an input_context give one share, and iter_records
    (without TensorFlow) reads the same records as load_dataset, in the same order."""
    for workers in (2, 4):  # 3 shards: by shard for 2, by record for 4
        for index in range(workers):
            context = tf.distribute.InputContext(num_input_pipelines=workers, input_pipeline_id=index)
            by_context = rk.load_dataset(dataset, fields=["caption"], input_context=context)
            by_numbers = rk.load_dataset(dataset, fields=["caption"], num_workers=workers, worker_index=index)
            want = [r["caption"].numpy().decode() for r in by_context]
            assert [r["caption"].numpy().decode() for r in by_numbers] == want
            assert by_numbers.cardinality().numpy() == len(want)
            numpy = rk.iter_records(dataset, fields=["caption"], num_workers=workers, worker_index=index)
            assert [r["caption"] for r in numpy] == want, (workers, index)
    with pytest.raises(ValueError, match=r"worker_index must be in 0\.\.1"):
        rk.load_dataset(dataset, num_workers=2, worker_index=2)
    with pytest.raises(ValueError, match="not both"):
        rk.load_dataset(dataset, input_context=context, num_workers=2, worker_index=0)


def test_a_reader_schema_is_checked_against_the_stored_one(dataset: Path) -> None:
    fields = dict(SCHEMA.fields)
    fields["extra"] = rk.FieldSpec(codec="text", optional=True)
    newer = SCHEMA.model_copy(update={"fields": fields})
    batch = next(iter(rk.load_dataset(dataset, fields=["label", "extra"], batch_size=4, schema=newer)))
    assert not batch["extra/present"].numpy().any()  # not in the stored data: absent
    fields["label"] = rk.FieldSpec(codec="label", options={"names": ["x", "y"]})
    changed = SCHEMA.model_copy(update={"fields": fields})
    with pytest.raises(IncompatibleSchemaError, match="'label'"):
        rk.load_dataset(dataset, schema=changed)
    # a field the reader does not ask for does not matter
    rk.load_dataset(dataset, fields=["caption"], schema=changed)


def test_a_missing_codec_names_the_distribution_that_wrote_it(dataset: Path) -> None:
    registry = rk.load_plugins(allow=["scalar", "text", "label"]).registry
    with pytest.raises(UnknownCodecError) as err:
        rk.load_dataset(dataset, registry=registry)
    assert err.value.context.codec == "image"
    assert "distribution 'recordkit'" in str(err.value)
    assert "pip install recordkit" in str(err.value)
    # the fields whose codecs are installed still read
    assert len(list(rk.load_dataset(dataset, fields=["label", "caption"], registry=registry))) == N


def test_a_flipped_bit_names_the_shard_and_skip_reports_the_loss(
    dataset: Path, tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(dataset, broken)
    shard = shard_files(broken)[1]  # records 4 to 7
    offsets = record_offsets(shard)
    flip_bit(shard, offsets[2] + 30)  # inside the data of the shard's third record, record 6
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"CorruptRecordError: shard {shard.name}, offset {offsets[2]}: .*; 2 of 4 records",
    ):
        list(rk.load_dataset(broken, fields=["caption"], batch_size=4))
    report = rk.CorruptionReport()
    got = [
        r["caption"].numpy().decode()
        for r in rk.load_dataset(broken, fields=["caption"], on_corrupt="skip", report=report)
    ]
    # TensorFlow's reader cannot go past a bad record: the rest of the shard is lost
    assert got == [records[i]["caption"] for i in (0, 1, 2, 3, 4, 5, 8, 9)]
    (skipped,) = report.skipped
    assert (skipped.shard, skipped.offset, skipped.records) == (shard.name, offsets[2], 2)
    assert report.records_skipped == 2
    assert f"shard {shard.name}, offset {offsets[2]}: skipped 2 records" in str(report)
    with pytest.raises(CorruptRecordError, match="sha256") as err:
        rk.load_dataset(broken, verify_sha256=True)
    assert err.value.shard == shard.name
    assert err.value.context.offset is not None


def test_a_truncated_shard_is_named_before_reading(dataset: Path, tmp_path: Path) -> None:
    broken = tmp_path / "truncated"
    shutil.copytree(dataset, broken)
    shard = shard_files(broken)[0]
    shard.write_bytes(shard.read_bytes()[:-7])
    with pytest.raises(CorruptRecordError, match="truncated") as err:
        rk.load_dataset(broken)
    assert err.value.shard == shard.name
    report = rk.CorruptionReport()
    got = list(rk.load_dataset(broken, fields=["label"], on_corrupt="skip", report=report))
    assert len(got) == N - 1
    assert report.records_skipped == 1


def test_files_without_a_manifest_need_a_schema(dataset: Path) -> None:
    shards = shard_files(dataset)
    with pytest.raises(DatasetError, match="pass schema="):
        rk.load_dataset(shards)
    ds = rk.load_dataset([str(s) for s in shards], fields=["label"], schema=SCHEMA)
    assert len(list(ds)) == N
    pattern = str(dataset / "train-*.tfrecord")
    assert len(list(rk.load_dataset(pattern, fields=["label"], schema=SCHEMA, batch_size=4))) == 3


def test_compressed_datasets_read_and_check(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    write(tmp_path / "gz", records[:5], compression="GZIP")
    got = read_rows(rk.load_dataset(tmp_path / "gz", batch_size=2))
    for record, row in zip(records[:5], got, strict=True):
        assert_record(expected(record), row)


def test_bad_options_are_errors(dataset: Path) -> None:
    with pytest.raises(ValueError, match="on_corrupt"):
        rk.load_dataset(dataset, on_corrupt="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="image_size"):
        rk.load_dataset(dataset, image_size={"nope": (2, 2)})
    with pytest.raises(ValueError, match="pad"):
        rk.load_dataset(dataset, pad=["nope"])


def test_a_field_the_records_lack_reads_as_the_readers_default(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    fields = dict(SCHEMA.fields)
    fields["source"] = rk.FieldSpec(codec="text", default="unknown")
    fields["boxes2"] = rk.FieldSpec(codec="bbox", default=[[0.0, 0.0, 0.5, 0.5]])
    newer = SCHEMA.model_copy(update={"fields": fields})
    wanted = ["label", "source", "boxes2"]
    batch = next(iter(rk.load_dataset(dataset, fields=wanted, schema=newer, batch_size=4)))
    assert list(batch) == wanted
    assert batch["source"].numpy().tolist() == [b"unknown"] * 4
    assert batch["boxes2"].to_list() == [[[0.0, 0.0, 0.5, 0.5]]] * 4
    rows = list(rk.iter_records(dataset, fields=wanted, schema=newer))
    assert [r["source"] for r in rows] == ["unknown"] * N
    assert [r["label"] for r in rows] == [expected(r)["label"] for r in records]
    np.testing.assert_array_equal(rows[0]["boxes2"], [[0.0, 0.0, 0.5, 0.5]])


@pytest.mark.slow
def test_everything_written_reads_back_equal_through_every_reader(tmp_path: Path) -> None:
    """The writer's records, through load_dataset, make_parser, iter_records and the
    generated standalone module (run where recordkit cannot be imported): each equals
    what was written, and the TensorFlow readers agree value for value."""
    records = every_codec_records(7)
    manifest = rk.write_dataset(records, EVERY_CODEC, tmp_path / "data", shard_records=3, progress=False)
    registry = rk.default_registry()
    built_in = {info.name for info in registry if info.codec.__module__.startswith("recordkit_codecs.")}
    assert {spec.codec for spec in EVERY_CODEC.fields.values()} == built_in
    files = [str(tmp_path / "data" / s.file) for s in manifest.split("train").shards]
    want = [every_codec_expected(r) for r in records]
    fields = list(want[0])

    numpy_rows = list(rk.iter_records(tmp_path / "data"))
    loaded = list(rk.load_dataset(tmp_path / "data", batch_size=4))
    parsed = list(tf.data.TFRecordDataset(files).batch(4).map(rk.make_parser(EVERY_CODEC)))
    for reader, got in (("iter_records", numpy_rows), ("load_dataset", read_rows(loaded))):
        assert len(got) == len(records), reader
        for i, (record, row) in enumerate(zip(want, got, strict=True)):
            assert_record(record, row, fields)
            # JPEG is lossy: close to what went in, and decoded alike by every reader
            assert np.abs(np.asarray(row["thumb"], np.int16) - records[i]["thumb"]).mean() < 8, reader
            np.testing.assert_array_equal(np.asarray(row["thumb"]), numpy_rows[i]["thumb"])
    assert dumps(parsed) == dumps(loaded)

    module = tmp_path / "every_codec_parser.py"
    standalone = [name for name in EVERY_CODEC.fields if name not in NOT_STANDALONE]
    module.write_text(rk.generate_parser_code(EVERY_CODEC, standalone))
    (generated,), imported = run_generated(files, [(module, None)])
    assert imported == []
    projected = rk.load_dataset(tmp_path / "data", fields=standalone, batch_size=4)
    assert generated == dumps(list(projected))


def test_every_reader_takes_the_path_of_a_schema_file(dataset: Path, tmp_path: Path) -> None:
    schema_file = tmp_path / "reading.yaml"
    SCHEMA.dump(schema_file)
    by_object = dumps(list(rk.load_dataset(dataset, batch_size=4, schema=SCHEMA)))
    assert dumps(list(rk.load_dataset(dataset, batch_size=4, schema=schema_file))) == by_object
    assert dumps(list(rk.load_dataset(dataset, batch_size=4, schema=str(schema_file)))) == by_object
    from_file = list(rk.iter_records(dataset, fields=["label"], schema=schema_file))
    assert from_file == list(rk.iter_records(dataset, fields=["label"], schema=SCHEMA))
    assert rk.feature_spec(schema_file) == rk.feature_spec(SCHEMA)
    serialized = next(iter(tf.data.TFRecordDataset([str(f) for f in shard_files(dataset)]).batch(4)))
    assert dumps([rk.make_parser(schema_file)(serialized)]) == dumps([rk.make_parser(SCHEMA)(serialized)])
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nfields:\n  label: {codec: nope}\n", encoding="utf-8")
    with pytest.raises(rk.errors.UnknownCodecError, match=r"broken\.yaml"):
        rk.load_dataset(dataset, schema=broken)


def window_of(picture: np.ndarray, offset: Any, size: tuple[int, int]) -> np.ndarray:
    """``picture`` cut to ``size`` at ``offset`` (top, left; negative: zeros first)."""
    out = np.zeros((*size, *picture.shape[2:]), picture.dtype)
    top, left = (int(v) for v in offset)
    for row in range(size[0]):
        for col in range(size[1]):
            y, x = top + row, left + col
            if 0 <= y < picture.shape[0] and 0 <= x < picture.shape[1]:
                out[row, col] = picture[y, x]
    return out


@pytest.mark.parametrize("batch_size", [3, None])
def test_a_jpeg_crop_holds_the_full_decodes_pixels_at_the_reported_window(
    dataset: Path, batch_size: int | None
) -> None:
    """The photo field (JPEG), cropped: the same pixels as the numpy reader's full
    decode cut at the window the reader reports."""
    size = (3, 7)  # crops the 4 rows, pads the 5 columns
    whole = [r["photo"] for r in rk.iter_records(dataset, fields=["photo"])]
    for fit in ("crop_or_pad", "random_crop_or_pad"):
        ds = rk.load_dataset(
            dataset, fields=["photo"], batch_size=batch_size, image_size=size, image_fit=fit, seed=3
        )
        got = read_rows(list(ds)) if batch_size else list(ds)
        assert len(got) == len(whole)
        for picture, row in zip(whole, got, strict=True):
            np.testing.assert_array_equal(np.asarray(row["photo/shape"]), picture.shape)
            want = window_of(picture, np.asarray(row["photo/offset"]), size)
            np.testing.assert_array_equal(np.asarray(row["photo"]), want)
        offsets = {tuple(np.asarray(row["photo/offset"]).tolist()) for row in got}
        if fit == "crop_or_pad":
            assert offsets == {(0, -1)}  # the centre
        else:
            assert offsets <= {(top, left) for top in (0, 1) for left in (0, -1, -2)}


def padded_like_pad_into(value: Any, pad_value: int) -> tuple[np.ndarray, np.ndarray]:
    """A ragged batch padded as ``pad=True`` promises (``to_tensor`` with the pad value),
    and each record's true shape (its rows' largest along each ragged dimension)."""
    default = "" if value.dtype == tf.string else pad_value if pad_value else None
    dense = value.to_tensor(default_value=default).numpy()
    rows = [row.to_tensor().numpy() if isinstance(row, tf.RaggedTensor) else row for row in value]
    shapes = np.array([np.shape(row) for row in rows])
    return dense, shapes


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [2, 3])
def test_pad_on_every_codec_is_the_ragged_batches_padded(every_codec_data: Path, batch_size: int) -> None:
    """``pad=True`` (pictures decoded record by record, each record made dense and the
    batch padded as it forms) against the plain ragged batches padded here: the same
    values and shapes for every codec, including batches in which every record has no
    boxes or an empty tensor (a dense empty value split from its batch crashed
    TensorFlow 2.21's unbatch)."""
    ragged = list(rk.load_dataset(every_codec_data, batch_size=batch_size))
    padded = list(rk.load_dataset(every_codec_data, batch_size=batch_size, pad=True))
    assert len(padded) == len(ragged) == -(-9 // batch_size)
    checked = 0
    for plain, dense in zip(ragged, padded, strict=True):
        for name, value in plain.items():
            pad = 255 if name == "mask" else 0
            items = value.items() if isinstance(value, dict) else [(None, value)]
            for key, item in items:
                path = name if key is None else f"{name}/{key}"
                got = dense[name] if key is None else dense[name][key]
                if not isinstance(item, tf.RaggedTensor):
                    np.testing.assert_array_equal(got.numpy(), item.numpy())
                    assert path + "/shape" not in dense
                    continue
                want, shapes = padded_like_pad_into(item, pad)
                np.testing.assert_array_equal(got.numpy(), want, err_msg=path)
                np.testing.assert_array_equal(dense[path + "/shape"].numpy(), shapes, err_msg=path)
                checked += 1
    assert checked > 20


def test_pad_for_single_records_keeps_each_its_own_size(dataset: Path, records: list[dict[str, Any]]) -> None:
    """Without a batch, ``pad`` pads nothing: each picture comes at its own size, with it."""
    got = list(rk.load_dataset(dataset, fields=["image", "mask", "objects"], pad=True))
    assert len(got) == N
    for record, row in zip(records, got, strict=True):
        np.testing.assert_array_equal(row["image"].numpy(), record["image"])
        np.testing.assert_array_equal(row["mask"].numpy(), record["mask"])
        assert row["image/shape"].numpy().tolist() == list(record["image"].shape)
        assert row["objects/boxes/shape"].numpy().tolist() == [len(record["objects"]["boxes"]), 4]


def test_a_jpeg_window_decodes_to_the_full_decodes_pixels(tmp_path: Path) -> None:
    """Colour JPEGs (chroma subsampled), cut at random windows by decoding the window
    only: exactly the pixels of the numpy reader's full decode at the reported offsets
    (a window decoded tight differed in its last column; the codec decodes a margin)."""
    rng = np.random.default_rng(4)
    photo = rk.FieldSpec(codec="image", options={"format": "jpeg"})
    schema = rk.Schema(name="photos", fields={"photo": photo})
    pictures = []
    for _ in range(6):
        height, width = (int(v) for v in rng.integers(40, 90, 2))
        smooth = np.cumsum(rng.integers(-9, 10, (height, width, 3)), axis=1)
        pictures.append({"photo": np.clip(smooth + 128, 0, 255).astype(np.uint8)})
    rk.write_dataset(pictures, schema, tmp_path / "data", progress=False)
    whole = [r["photo"] for r in rk.iter_records(tmp_path / "data")]
    size = (29, 33)
    for seed in range(4):
        ds = rk.load_dataset(
            tmp_path / "data", batch_size=3, image_size=size, image_fit="random_crop_or_pad", seed=seed
        )
        got = read_rows(list(ds))
        assert ds.element_spec["photo"].shape.as_list()[:3] == [None, *size]
        for picture, row in zip(whole, got, strict=True):
            want = window_of(picture, np.asarray(row["photo/offset"]), size)
            np.testing.assert_array_equal(np.asarray(row["photo"]), want)


def test_a_padded_batch_of_pictures_of_different_channel_counts_is_an_error(tmp_path: Path) -> None:
    """Gray and colour images in one batch of a field without a channels option: the
    batch padded as it forms would pad the channels; the reader refuses it, naming the
    field and the option (a batch of one channel count reads)."""
    rng = np.random.default_rng(2)
    schema = rk.Schema(name="mixed-channels", fields={"picture": rk.FieldSpec(codec="image")})
    pictures = [
        {"picture": rng.integers(0, 256, (5, 4), dtype=np.uint8)},
        {"picture": rng.integers(0, 256, (5, 4, 3), dtype=np.uint8)},
    ]
    rk.write_dataset(pictures, schema, tmp_path / "data", progress=False)
    alone = list(rk.load_dataset(tmp_path / "data", batch_size=1, pad=True))
    assert [batch["picture"].shape[-1] for batch in alone] == [1, 3]
    refused = r"picture.*different channel counts.*channels option"
    with pytest.raises(tf.errors.InvalidArgumentError, match=refused):
        list(rk.load_dataset(tmp_path / "data", batch_size=2, pad=True))


def assert_same_batch_value(got: Any, want: Any, path: str) -> None:
    """``got`` and ``want`` hold the same values in the same form (ragged or dense, with
    the same row partitions and dtype)."""
    assert type(got) is type(want), path
    assert got.dtype == want.dtype, path
    if isinstance(want, tf.RaggedTensor):
        assert got.ragged_rank == want.ragged_rank, path
        for got_splits, want_splits in zip(got.nested_row_splits, want.nested_row_splits, strict=True):
            np.testing.assert_array_equal(got_splits.numpy(), want_splits.numpy(), err_msg=path)
        got, want = got.flat_values, want.flat_values
    np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=path)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fields", "pad"),
    [
        # Every picture padded, ragged boxes, labels, words and tensors left ragged: the
        # records are padded as they batch, and the ragged values rebuilt from their lengths.
        (
            ["image", "photo", "mask", "audio", "objects", "ids", "words", "depth", "caption", "label"],
            ["image", "photo", "mask", "audio"],
        ),
        (["image", "objects", "regions", "tags", "note"], ["image"]),
        # A picture and a sequence of pictures left ragged: batched ragged, then padded.
        (None, ["image", "audio"]),
    ],
)
def test_pad_naming_some_fields_pads_those_and_leaves_the_rest_as_unpadded(
    every_codec_data: Path, fields: list[str] | None, pad: list[str]
) -> None:
    """``pad`` naming some fields: those come padded as ``pad=True`` pads them, every
    other value exactly as the unpadded read gives it (ragged stays ragged, with the
    same rows), for batches in which no record has a box as well."""
    unpadded = rk.load_dataset(every_codec_data, fields=fields, batch_size=3)
    mixed = rk.load_dataset(every_codec_data, fields=fields, batch_size=3, pad=pad)
    for name, spec in unpadded.element_spec.items():
        if name not in pad:
            assert mixed.element_spec[name] == spec, name
    added = set(mixed.element_spec) - set(unpadded.element_spec)
    assert all(key.endswith("/shape") and key.split("/")[0] in pad for key in added)
    plain_read, got = list(unpadded), list(mixed)
    assert len(got) == len(plain_read) == 3
    padded_values = 0
    for plain_batch, batch in zip(plain_read, got, strict=True):
        for name, value in plain_batch.items():
            items = value.items() if isinstance(value, dict) else [(None, value)]
            for key, item in items:
                path = name if key is None else f"{name}/{key}"
                value_got = batch[name] if key is None else batch[name][key]
                if name in pad and isinstance(item, tf.RaggedTensor):
                    want, shapes = padded_like_pad_into(item, 255 if name == "mask" else 0)
                    np.testing.assert_array_equal(value_got.numpy(), want, err_msg=path)
                    np.testing.assert_array_equal(batch[path + "/shape"].numpy(), shapes, err_msg=path)
                    padded_values += 1
                else:
                    assert_same_batch_value(value_got, item, path)
    assert padded_values >= len(got)


@pytest.mark.parametrize(
    "options",
    [
        {"fields": ["label"], "batch_size": 4},  # fixed-shape fields: parsed a chunk at a time
        {"batch_size": 4},
        {},
        {"batch_size": 4, "shuffle_buffer": 8, "seed": 1},
        {"batch_size": 4, "repeat": 2},
    ],
)
def test_an_empty_split_reads_as_an_empty_dataset(tmp_path: Path, options: dict[str, Any]) -> None:
    """A split with no shards gives no element (it failed in tf.data's ``rebatch`` with
    'Expected dataset with rank of >= 1 but found a dataset with scalar elements')."""
    schema = rk.Schema(
        name="empty",
        fields={
            "label": rk.FieldSpec(codec="label", options={"num_classes": 3}),
            "vector": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [2]}),
        },
    )
    rk.write_dataset([], schema, tmp_path / "data", progress=False)
    assert list(rk.load_dataset(tmp_path / "data", **options)) == []
