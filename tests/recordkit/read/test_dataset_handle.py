"""rk.open and rk.Dataset (sdk/recordkit/read/_dataset.py): one open, then every consumer
gives the values the older entry points give on the same data; split expressions,
select, len, lazy checks and indexes, clear errors, no TensorFlow outside ``tf()``."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import SCHEMA, dumps, make_records, run_without_tensorflow

import recordkit as rk
from recordkit.errors import CorruptRecordError, DatasetError, ManifestError, SchemaError
from recordkit.read import _open  # private: counts the opens of a split
from recordkit.storage import location
from recordkit.testing import assert_values_equal

TRAIN, VALIDATION = 14, 6
FIELDS = ["image", "caption", "objects", "label", "note"]


@pytest.fixture(scope="module")
def records() -> dict[str, list[dict[str, Any]]]:
    return {"train": make_records(TRAIN, seed=11), "validation": make_records(VALIDATION, seed=12)}


def _write(path: Path, records: dict[str, list[dict[str, Any]]]) -> Path:
    with rk.DatasetWriter(path, SCHEMA, shard_records=4, progress=False) as writer:
        for split, rows in records.items():
            for row in rows:
                writer.write(row, split)
    return path


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, records: dict[str, list[dict[str, Any]]]) -> Path:
    return _write(tmp_path_factory.mktemp("handle") / "data", records)


@pytest.fixture
def fresh(tmp_path: Path, records: dict[str, list[dict[str, Any]]]) -> Path:
    """A copy this test may damage."""
    return _write(tmp_path / "data", records)


def assert_same_records(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> None:
    assert len(want) == len(got)
    for i, (a, b) in enumerate(zip(want, got, strict=True)):
        assert_values_equal(a, b, path=f"record {i}")


# -- what rk.open gives ----------------------------------------------------------------------


def test_a_dataset_of_several_splits_opens_without_one_and_says_which_to_choose(dataset: Path) -> None:
    ds = rk.open(dataset)
    assert ds.splits == ("train", "validation")
    assert ds.current_split is None
    assert ds.fields == tuple(SCHEMA.fields)
    assert ds.schema == SCHEMA
    assert ds.manifest is not None
    assert ds.manifest.split("train").num_records == TRAIN
    with pytest.raises(DatasetError, match=r"has splits train, validation: choose one") as caught:
        len(ds)
    assert caught.value.context.file == str(dataset)
    assert len(ds.split("validation")) == VALIDATION


def test_a_dataset_of_one_split_opens_it_by_default(tmp_path: Path) -> None:
    path = tmp_path / "one"
    rk.write_dataset(make_records(5), SCHEMA, path, "test", progress=False)
    ds = rk.open(path)
    assert ds.current_split == "test"
    assert len(ds) == 5
    assert ds[4]["caption"] == "record 4 — ünïcode"


def test_a_dataset_of_one_split_opened_without_one_is_opened_once_as_that_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "one"
    rk.write_dataset(make_records(5), SCHEMA, path, "test", progress=False)
    opened: list[str] = []
    listing = _open.split_shards

    def split_shards(root: Any, manifest: Any, split: str) -> Any:
        opened.append(split)
        return listing(root, manifest, split)

    monkeypatch.setattr(_open, "split_shards", split_shards)  # what each open of a split lists
    assert rk.open(path).current_split == "test"
    assert opened == ["test"]  # not "all" first, then "test"


@pytest.mark.parametrize(
    ("split", "expected"),
    [
        ("train", list(range(TRAIN))),
        ("train[:30%]", list(range(4))),
        ("train[10:]", list(range(10, TRAIN))),
        ("validation[-2:]", [TRAIN + 4, TRAIN + 5]),
        ("train[2:4]+validation[:1]", [2, 3, TRAIN]),
        ("all", list(range(TRAIN + VALIDATION))),
    ],
)
def test_split_expressions_select_the_records_iter_records_selects(
    dataset: Path, records: dict[str, list[dict[str, Any]]], split: str, expected: list[int]
) -> None:
    every = [r["caption"] for r in records["train"] + records["validation"]]
    ds = rk.open(dataset, split, fields=["caption"])
    via_split = rk.open(dataset).select("caption").split(split)
    assert len(ds) == len(via_split) == len(expected)
    assert [r["caption"] for r in ds.records()] == [every[i] for i in expected]
    assert [r["caption"] for r in via_split.records()] == [every[i] for i in expected]
    assert [r["caption"] for r in rk.iter_records(dataset, split, "caption")] == [every[i] for i in expected]
    assert [r["caption"] for r in ds[list(range(len(ds)))]] == [every[i] for i in expected]


def test_select_decodes_only_the_fields_asked_for(dataset: Path) -> None:
    ds = rk.open(dataset, "train")
    narrow = ds.select(["label", "caption"])
    assert narrow.fields == ("label", "caption")  # in the order asked, as every reader gives them
    assert ds.fields == tuple(SCHEMA.fields)  # the first handle is unchanged
    full = ds[5]
    assert narrow[5] == {"caption": full["caption"], "label": full["label"]}
    assert list(narrow.select("label").records())[5] == {"label": full["label"]}


def test_derived_handles_never_read_the_manifest_again(fresh: Path) -> None:
    ds = rk.open(fresh)
    (fresh / "dataset.json").unlink()  # any second read of it would fail
    validation = ds.split("validation").select(["caption"])
    assert len(validation) == VALIDATION
    streamed = [r["caption"] for r in validation.records()]
    assert streamed == [validation[i]["caption"] for i in range(VALIDATION)]
    assert len(list(ds.split("train[:50%]").tf(batch_size=3))) == 3


def test_the_record_indexes_are_loaded_only_for_random_access(fresh: Path) -> None:
    ds = rk.open(fresh, "train")
    for index in fresh.rglob("*.index"):
        index.unlink()
    assert len(ds) == TRAIN  # from the manifest
    assert len(list(ds.records())) == TRAIN  # streams the shards, no index
    with pytest.raises(CorruptRecordError, match=r"record index .* cannot be read"):
        ds[0]


def test_a_handle_pickles_as_what_opened_it(dataset: Path) -> None:
    ds = rk.open(dataset, "train[3:6]", fields=["caption", "label"])
    copy = pickle.loads(pickle.dumps(ds))
    assert (copy.current_split, copy.fields, len(copy)) == ("train[3:6]", ("caption", "label"), 3)
    assert copy[[0, 2]] == ds[[0, 2]]


# -- each consumer gives what the older entry point gives ------------------------------------


def test_records_equal_iter_records_also_in_threads_from_a_start_and_for_one_rank(dataset: Path) -> None:
    ds = rk.open(dataset, "train", fields=FIELDS)
    assert_same_records(list(rk.iter_records(dataset, "train", FIELDS)), list(ds.records()))
    old = rk.iter_records(dataset, "train", FIELDS, num_workers=3, worker_index=1, start=2, num_threads=2)
    new = ds.records(world_size=3, rank=1, start=2, num_threads=2)
    assert_same_records(list(old), list(new))
    assert new.state_dict() == old.state_dict()


def test_ds_i_equals_random_access(dataset: Path) -> None:
    ds = rk.open(dataset, "validation")
    old = rk.RandomAccess(dataset, "validation")
    assert len(ds) == len(old) == VALIDATION
    for i in (0, 5, -1, 2):
        assert_values_equal(old[i], ds[i], path=f"record {i}")
    assert_same_records(old[[4, 1, 4]], ds[[4, 1, 4]])
    assert_same_records(old[np.array([3, 0])], ds[np.array([3, 0])])
    assert_same_records(old[1:4], ds[1:4])
    with pytest.raises(IndexError, match="record 6 is out of range: the split has 6 records"):
        ds[6]


def test_tf_equals_load_dataset_with_the_options_grouped(dataset: Path) -> None:
    ds = rk.open(dataset, "train", fields=["image", "caption", "objects", "mask"])
    layout = rk.Layout(pad=True, image_size=(6, 6), image_fit="random_crop_or_pad")
    config = rk.ReadConfig(block_length=2, cycle_length=2)
    new = ds.tf(4, shuffle_files=True, shuffle_buffer=5, seed=7, layout=layout, read_config=config)
    old = rk.load_dataset(
        dataset,
        "train",
        ["image", "caption", "objects", "mask"],
        4,
        shuffle_files=True,
        shuffle_buffer=5,
        seed=7,
        pad=True,
        image_size=(6, 6),
        image_fit="random_crop_or_pad",
        block_length=2,
        cycle_length=2,
    )
    assert dumps(list(new)) == dumps(list(old))
    assert int(new.cardinality()) == int(old.cardinality()) == 4


def test_tf_shares_the_split_between_ranks_as_load_dataset_does(dataset: Path) -> None:
    ds = rk.open(dataset, "train", fields=["caption"])
    for rank in range(3):
        new = ds.tf(2, rank=rank, world_size=3, start=2)
        old = rk.load_dataset(dataset, "train", "caption", 2, num_workers=3, worker_index=rank, start=2)
        assert dumps(list(new)) == dumps(list(old))


def test_torch_datasets_equal_the_recordkit_torch_classes(dataset: Path) -> None:
    pytest.importorskip("torch")
    from recordkit.torch import IterableDataset, MapDataset

    ds = rk.open(dataset, "train", fields=FIELDS)
    mapped, old_map = ds.torch(), MapDataset(dataset, "train", FIELDS)
    assert len(mapped) == len(old_map) == TRAIN
    assert mapped.collate_fn.pads == old_map.collate_fn.pads
    for i in (0, 13):
        assert str(mapped[i]) == str(old_map[i])
    options: dict[str, Any] = {"shuffle": True, "seed": 3, "window": 4, "rank": 1, "world_size": 2}
    new = [r["caption"] for r in ds.torch_iterable(**options)]
    old = [r["caption"] for r in IterableDataset(dataset, "train", FIELDS, **options)]
    other = [r["caption"] for r in ds.torch_iterable(**{**options, "rank": 0})]
    assert new == old
    assert sorted(new + other) == sorted(r["caption"] for r in ds.records())
    unseeded = ds.torch_iterable(shuffle=True)
    assert [r["caption"] for r in unseeded] == [r["caption"] for r in IterableDataset(dataset, shuffle=True)]


def test_every_torch_stream_keeps_its_five_order_options_as_one_stream_order(dataset: Path) -> None:
    pytest.importorskip("torch")
    from recordkit.torch import IterableDataset, StreamOrder

    options: dict[str, Any] = {"shuffle": True, "seed": 3, "window": 4, "rank": 1, "world_size": 2}
    ds = rk.open(dataset, "train", fields=FIELDS)
    streams = [
        ds.torch_iterable(**options),
        ds.torch_batches(4, **options),
        IterableDataset(dataset, **options),
    ]
    assert [stream.order for stream in streams] == [StreamOrder(**options)] * 3
    assert ds.torch_iterable().order == StreamOrder(shuffle=False, seed=0, window=1024)
    with pytest.raises(dataclasses.FrozenInstanceError):
        streams[0].order.seed = 4  # type: ignore[misc]
    with pytest.raises(ValueError, match="window must be at least 1, not 0"):
        ds.torch_batches(4, window=0)


def test_grain_source_equals_the_recordkit_grain_one(dataset: Path) -> None:
    pytest.importorskip("grain")
    from recordkit.grain import DataSource

    source, old = rk.open(dataset, "validation").grain(), DataSource(dataset, "validation")
    assert len(source) == len(old) == VALIDATION
    assert repr(source) == repr(old)
    assert_same_records(old.__getitems__([5, 0]), source.__getitems__([5, 0]))


@pytest.mark.slow
def test_open_records_torch_and_grain_import_no_tensorflow(dataset: Path) -> None:
    out = run_without_tensorflow(
        f"""
        ds = rk.open({str(dataset)!r}, "train", fields=["caption", "image"])
        n = len(list(ds.records())) + len(ds.torch()) + len(list(ds.torch_iterable())) + len(ds.grain())
        print(n, ds[3]["image"].shape[-1], ds.split("validation").select("caption")[0]["caption"][:8])
        print("tensorflow" in sys.modules)
        """
    )
    assert out.split("\n") == [f"{4 * TRAIN} 3 record 0", "False", ""]


@pytest.mark.slow
def test_a_consumer_whose_extra_is_missing_names_it_and_the_others_still_read(dataset: Path) -> None:
    out = run_without_tensorflow(
        f"""
        import importlib.abc
        class NoTorch(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "torch":
                    raise ImportError("blocked")
        sys.meta_path.insert(0, NoTorch())
        ds = rk.open({str(dataset)!r}, "validation", fields="caption")
        try:
            ds.torch_iterable()
        except rk.errors.MissingExtraError as exc:
            print(exc)
        print(len(ds), ds[1]["caption"][:8])
        """
    )
    assert out.splitlines() == [
        "Dataset.torch_iterable() needs 'torch', which is not installed; "
        "install it with: pip install 'recordkit[torch]'",
        f"{VALIDATION} record 1",
    ]


# -- checks and errors -----------------------------------------------------------------------


def test_bad_split_and_field_names_name_the_dataset_and_the_split_or_field(dataset: Path) -> None:
    where = str(dataset)
    with pytest.raises(ManifestError, match="no split 'test'") as caught:
        rk.open(dataset, "test")
    assert (caught.value.context.file, caught.value.context.split) == (where, "test")
    with pytest.raises(ManifestError, match="percent boundaries") as caught:
        rk.open(dataset).split("train[:150%]")
    assert (caught.value.context.file, caught.value.context.split) == (where, "train[:150%]")
    with pytest.raises(SchemaError, match="no field named 'colour'") as caught:
        rk.open(dataset, "train", fields=["caption", "colour"])
    assert (caught.value.context.file, caught.value.field) == (where, "colour")
    with pytest.raises(SchemaError, match=r"not among the fields of this handle \(caption\)") as caught:
        rk.open(dataset, "train", fields="caption").select(["image"])
    assert (caught.value.context.file, caught.value.field) == (where, "image")
    assert f"file {where}, field 'image'" in str(caught.value)


def test_bad_options_are_refused_before_anything_is_read(dataset: Path) -> None:
    with pytest.raises(ValueError, match="verify must be True, False or 'sha256', not 'md5'"):
        rk.open(dataset, verify="md5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="image_fit must be one of"):
        rk.Layout(image_fit="stretch")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="block_length must be at least 1, not 0"):
        rk.ReadConfig(block_length=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rk.ReadConfig().prefetch = False  # type: ignore[misc]
    ds = rk.open(dataset, "train")
    with pytest.raises(ValueError, match="world_size needs rank too"):
        ds.records(world_size=2)
    with pytest.raises(ValueError, match=r"rank must be in 0..1 \(world_size is 2\), not 2"):
        ds.tf(rank=2, world_size=2)
    with pytest.raises(ValueError, match="num_threads must be at least 1, not 0"):
        ds.records(num_threads=0)


def test_a_truncated_shard_is_named_when_the_reader_reaches_it_unless_skipped(fresh: Path) -> None:
    ds = rk.open(fresh, "train", fields="caption")  # opening checks no shard
    shard = sorted(fresh.glob("train-*.tfrecord"))[1]
    shard.write_bytes(shard.read_bytes()[:-9])
    records = ds.records()
    first = rk.Manifest.load(fresh).splits["train"].shards[0].records
    assert len([next(records) for _ in range(first)]) == first  # the intact first shard reads
    with pytest.raises(CorruptRecordError, match="the manifest says") as caught:
        next(records)  # its size is checked as the reader comes to it, before its first record
    assert caught.value.shard == shard.name
    report = rk.CorruptionReport()
    read = list(ds.records(on_corrupt="skip", report=report))
    assert len(read) == TRAIN - 1
    assert report.shards == [shard.name]


def test_verify_sha256_hashes_the_shards_before_the_first_read(fresh: Path) -> None:
    shard = sorted(fresh.glob("validation-*.tfrecord"))[0]
    data = bytearray(shard.read_bytes())
    data[-5] ^= 0xFF  # the same size: only a hash (or the record's CRC) sees it
    shard.write_bytes(bytes(data))
    checked = rk.open(fresh, "validation", fields="caption", verify="sha256")
    with pytest.raises(CorruptRecordError, match=r"sha256 .* differs from the manifest") as caught:
        checked[0]  # a record of an intact part of the shard: the hash still refuses it
    assert caught.value.shard == shard.name
    assert rk.open(fresh, "validation", fields="caption")[0]["caption"] == "record 0 — ünïcode"


def test_tfrecord_files_without_a_manifest_open_with_a_schema_and_have_no_splits(dataset: Path) -> None:
    files = sorted(dataset.glob("validation-*.tfrecord"))
    ds = rk.open(files, schema=SCHEMA, fields=["caption"])
    assert (ds.splits, ds.current_split, ds.manifest) == ((), None, None)
    assert len(ds) == VALIDATION
    stored = rk.open(dataset, "validation")
    assert [r["caption"] for r in ds.records()] == [r["caption"] for r in stored.records()]
    assert ds.select("caption")[5] == rk.open(dataset, "validation", fields="caption")[5]
    with pytest.raises(DatasetError, match="without a manifest have no splits"):
        ds.split("train")
    with pytest.raises(DatasetError, match="without a manifest have no splits"):
        rk.open(files, "train", schema=SCHEMA)


@pytest.mark.slow
def test_a_remote_dataset_opens_once_and_reads_as_the_local_copy(
    s3_bucket: Any, dataset: Path, records: dict[str, list[dict[str, Any]]]
) -> None:
    options = s3_bucket.storage_options
    url = s3_bucket.join("data")
    with rk.DatasetWriter(url, SCHEMA, shard_records=4, progress=False, storage_options=options) as writer:
        for split, rows in records.items():
            for row in rows:
                writer.write(row, split)
    ds = rk.open(url, fields=["caption", "image"], storage_options=options)
    location(f"{url}/dataset.json", options).remove()  # any second read of it would fail
    near = rk.open(dataset, fields=["caption", "image"])
    for split in ("train[5:]", "validation"):
        assert_same_records(list(near.split(split).records()), list(ds.split(split).records()))
        assert_same_records(near.split(split)[[3, 0]], ds.split(split)[[3, 0]])
