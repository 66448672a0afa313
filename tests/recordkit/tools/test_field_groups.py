"""Field groups (sdk/recordkit/tools/_field_groups.py, dataset/_split_groups.py): fields added
to a written split in their own aligned shards read, in every reader, as the same data
written inline; replaced, removed, refused when they do not fit."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reader_support import SCHEMA, make_records, rows

import recordkit as rk
from recordkit.errors import DatasetError, DatasetLockedError, ManifestError, RecordError, SchemaError
from recordkit.testing import assert_values_equal

N = 10
BASE = ["image", "audio", "caption", "label"]
EMBEDDING = rk.Schema(
    name="embeddings",
    fields={"embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [8]})},
)
PREDICTED = rk.Schema(name="predictions", fields={"objects": SCHEMA.fields["objects"]})
INLINE = rk.Schema(
    name="inline", fields={**{k: SCHEMA.fields[k] for k in BASE}, **EMBEDDING.fields, **PREDICTED.fields}
)
#: Field projections read in every reader: all, a group's alone, a group's with the split's,
#: two groups', the split's alone.
PROJECTIONS: list[list[str] | None] = [
    None,
    ["embedding"],
    ["embedding", "label"],
    ["objects", "embedding"],
    ["caption", "image"],
]


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    embeddings = np.random.default_rng(7).normal(size=(N, 8)).astype(np.float32)
    return [
        {**{k: r[k] for k in BASE}, "embedding": e, "objects": r["objects"]}
        for r, e in zip(make_records(N, seed=3), embeddings, strict=True)
    ]


@pytest.fixture(scope="module")
def inline(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("inline") / "data"
    rk.write_dataset(records, INLINE, path, shard_records=3, progress=False)
    return path


def _write_base(path: Path, records: list[dict[str, Any]], fields: list[str] = BASE) -> None:
    base = rk.Schema(name="inline", fields={k: SCHEMA.fields[k] for k in fields})
    rk.write_dataset(
        [{k: r[k] for k in fields} for r in records], base, path, shard_records=3, progress=False
    )


#: Records written before the groups are added, in the "appended" dataset (two shards of 3).
BEFORE_APPEND = 6


@pytest.fixture(scope="module", params=["added", "appended"])
def grouped(
    tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]], request: pytest.FixtureRequest
) -> Path:
    """The same records: the split's fields written first, then the embeddings added from
    an array and the boxes from a function of each record; "appended": the groups added
    to the first records, then the others appended with every field (the shards cut where
    the inline dataset's are)."""
    path = tmp_path_factory.mktemp("grouped") / "data"
    first = records if request.param == "added" else records[:BEFORE_APPEND]
    _write_base(path, first)
    rk.add_fields(path, "train", EMBEDDING, np.stack([r["embedding"] for r in first]))
    boxes = {r["caption"]: r["objects"] for r in first}
    rk.add_fields(
        path, "train", PREDICTED, lambda r: boxes[r["caption"]], name="pred", read_fields=["caption"]
    )
    if request.param == "appended":
        schema = rk.open(path).schema  # the split's fields and its groups'
        rk.write_dataset(records[BEFORE_APPEND:], path, schema, shard_records=3, append=True, progress=False)
    return path


def test_a_split_with_field_groups_reads_as_the_same_data_written_inline_through_numpy_and_random_access(
    inline: Path, grouped: Path
) -> None:
    for fields in PROJECTIONS:
        want = list(rk.iter_records(inline, fields=fields))
        got = list(rk.iter_records(grouped, fields=fields))
        assert [list(r) for r in got] == [list(r) for r in want], fields
        assert_values_equal(want, got, path=str(fields))
        near, far = rk.RandomAccess(inline, fields=fields), rk.RandomAccess(grouped, fields=fields)
        assert len(far) == N
        assert_values_equal(near[[9, 0, 4]], far[[9, 0, 4]], path=str(fields))
        assert_values_equal(near[5], far[5], path=str(fields))
        assert far.read_serialized(2) != b""
    # A handle narrowed later (select) joins the groups its fields need, from the manifest read once.
    handle = rk.open(grouped).select(["embedding", "caption"])
    assert_values_equal(rk.open(inline).select(["embedding", "caption"])[8], handle[8])


def test_a_split_with_field_groups_reads_as_the_same_data_written_inline_through_tf_data(
    inline: Path, grouped: Path
) -> None:
    for fields in PROJECTIONS:
        want = [row for batch in rk.load_dataset(inline, fields=fields, batch_size=4) for row in rows(batch)]
        got = [row for batch in rk.load_dataset(grouped, fields=fields, batch_size=4) for row in rows(batch)]
        assert len(got) == len(want) == N
        for a, b in zip(want, got, strict=True):
            assert sorted(a) == sorted(b)
            for key in a:
                assert_values_equal(np.asarray(a[key]), np.asarray(b[key]), path=f"{fields} {key}")
    # Shuffled files and records: each record keeps its own added values.
    shuffled = rk.open(grouped, fields=["embedding", "caption"]).tf(
        shuffle_files=True, shuffle_buffer=4, seed=1
    )
    pairs = {r["caption"].numpy().decode(): r["embedding"].numpy() for r in shuffled}
    assert len(pairs) == N
    for r in rk.iter_records(inline, fields=["embedding", "caption"]):
        np.testing.assert_array_equal(pairs[r["caption"]], r["embedding"])


def test_the_pytorch_and_grain_readers_see_the_added_fields(inline: Path, grouped: Path) -> None:
    pytest.importorskip("torch")
    near = rk.open(inline, fields=["embedding", "label"]).torch()
    far = rk.open(grouped, fields=["embedding", "label"]).torch()
    assert len(far) == N
    for i in (0, 7):
        for key in ("embedding", "label"):
            np.testing.assert_array_equal(np.asarray(near[i][key]), np.asarray(far[i][key]))
    pytest.importorskip("grain")
    source = rk.open(grouped, fields=["embedding"]).grain()
    np.testing.assert_array_equal(
        source[3]["embedding"], rk.RandomAccess(inline, fields=["embedding"])[3]["embedding"]
    )


def test_reading_only_added_fields_reads_no_shard_of_the_split(grouped: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(grouped, copy)
    for shard in copy.glob("train-*.tfrecord*"):
        shard.unlink()  # the split's own shards (and indexes) are gone
    want = list(rk.iter_records(grouped, fields=["embedding", "objects"]))
    assert_values_equal(want, list(rk.iter_records(copy, fields=["embedding", "objects"])))
    assert_values_equal(want[6], rk.RandomAccess(copy, fields=["objects", "embedding"])[6])
    batches = list(rk.load_dataset(copy, fields=["embedding"], batch_size=N))
    np.testing.assert_array_equal(batches[0]["embedding"], np.stack([r["embedding"] for r in want]))
    with pytest.raises(ManifestError, match=r"train-00000.tfrecord: listed in the manifest but missing"):
        next(rk.iter_records(copy, fields=["embedding", "label"]))  # each shard checked as it is reached


@pytest.mark.parametrize("split", [None, "train", "train[2:8]", "all"])
def test_reading_only_added_fields_never_touches_the_splits_own_shards_not_even_a_stat(
    grouped: Path, split: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    touched: list[str] = []
    for name in ("stat", "lstat", "open"):
        real = getattr(os, name)

        def spy(path: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            if isinstance(path, (str, os.PathLike)) and Path(path).name.startswith("train-"):
                touched.append(f"{_real.__name__} {Path(path).name}")
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, spy)
    ds = rk.open(grouped, split, fields=["embedding", "objects"])
    records = list(ds.records())
    batches = list(ds.tf(batch_size=4))
    assert len(records) == sum(int(b["embedding"].shape[0]) for b in batches) == len(ds) > 0
    assert touched == []
    list(rk.open(grouped, split, fields=["embedding", "label"]).records())
    assert touched  # the spy sees the split's shards when a projection needs them


def test_every_group_shard_is_a_standard_tfrecord_of_tf_train_examples(grouped: Path) -> None:
    import tensorflow as tf

    manifest = rk.Manifest.load(grouped)
    groups = manifest.split("train").field_groups or {}
    assert sorted(groups) == ["embedding", "pred"]
    for group in groups.values():
        assert [s.records for s in group.shards] == [s.records for s in manifest.split("train").shards]
        bound = rk.Schema(name="group", fields=group.fields).bind()
        keys = {feature.key for field in bound.fields for feature in field.features}
        for shard in group.shards:
            for data in tf.data.TFRecordDataset(str(grouped / shard.file)):
                example = tf.train.Example.FromString(data.numpy())
                assert set(example.features.feature) <= keys


def test_a_dataset_is_written_in_format_3_only_while_it_has_field_groups(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "data"
    # No picture: the sizes of pictures a split records take format 6 on their own.
    fields = [name for name in BASE if name != "image"]
    _write_base(path, records, fields)
    assert json.loads((path / "dataset.json").read_text())["format"] == "recordkit.dataset/2"
    rk.add_fields(path, "train", EMBEDDING, [r["embedding"] for r in records])
    assert json.loads((path / "dataset.json").read_text())["format"] == "recordkit.dataset/3"
    files = sorted(p.name for p in (path / "fields" / "train").iterdir())
    assert len(files) == 8  # 4 shards and their indexes
    removed = rk.remove_fields(path, "train", "embedding")
    assert list(removed.fields) == ["embedding"]
    raw = json.loads((path / "dataset.json").read_text())
    assert raw["format"] == "recordkit.dataset/2"
    assert "field_groups" not in raw["splits"]["train"]
    assert list((path / "fields" / "train").iterdir()) == []
    assert sorted(next(rk.iter_records(path))) == sorted(fields)


def test_a_manifest_whose_format_cannot_hold_its_field_groups_is_refused(
    grouped: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(grouped, copy)
    raw = json.loads((copy / "dataset.json").read_text())
    raw["format"] = "recordkit.dataset/2"
    (copy / "dataset.json").write_text(json.dumps(raw))
    with pytest.raises(ManifestError, match=r"format 'recordkit.dataset/2' cannot hold field groups"):
        rk.Manifest.load(copy)
    raw["format"] = "recordkit.dataset/9"
    (copy / "dataset.json").write_text(json.dumps(raw))
    with pytest.raises(ManifestError, match=r"written by a newer recordkit: upgrade recordkit to read it"):
        rk.iter_records(copy)


def test_replace_swaps_a_group_and_removes_its_old_files(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "data"
    _write_base(path, records)
    rk.add_fields(path, "train", EMBEDDING, [r["embedding"] for r in records])
    old = {p.name for p in (path / "fields" / "train").iterdir()}
    with pytest.raises(DatasetError, match=r"already has a field group 'embedding'.*pass replace=True"):
        rk.add_fields(path, "train", EMBEDDING, [r["embedding"] for r in records])
    rk.add_fields(path, "train", EMBEDDING, [np.full(8, i, np.float32) for i in range(N)], replace=True)
    assert [float(r["embedding"][0]) for r in rk.iter_records(path)] == list(range(N))
    assert not old & {p.name for p in (path / "fields" / "train").iterdir()}


def test_values_of_the_wrong_count_commit_nothing_and_the_right_ones_resume(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "data"
    _write_base(path, records)
    embeddings = [r["embedding"] for r in records]
    with pytest.raises(DatasetError, match=r"values ended after 7 items; split 'train' has 10 records"):
        rk.add_fields(path, "train", EMBEDDING, embeddings[:7])
    staged = rk.Manifest.load(path).split("train").field_groups or {}
    assert [len(g.shards) for g in staged.values()] == [2]  # the two complete shards stay listed
    assert "embedding" not in next(rk.iter_records(path))  # readers leave the unfinished group out
    with pytest.raises(DatasetError, match=r"values has more items than the 10 records of split 'train'"):
        rk.add_fields(path, "train", EMBEDDING, [*embeddings, embeddings[0]])
    rk.add_fields(path, "train", EMBEDDING, embeddings)
    assert_values_equal(embeddings, [r["embedding"] for r in rk.iter_records(path)])
    listed = {
        s.file.rsplit("/", 1)[-1]
        for s in (rk.Manifest.load(path).split("train").field_groups or {})["embedding"].shards
    }
    on_disk = {p.name for p in (path / "fields" / "train").glob("*.tfrecord")}
    assert on_disk == listed


def test_add_fields_started_while_another_runs_is_refused_and_the_first_completes(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "data"
    _write_base(path, records)
    embeddings = [r["embedding"] for r in records]

    def values() -> Any:  # a second run starts while the first writes its second shard
        for i, value in enumerate(embeddings):
            if i == 4:
                with pytest.raises(DatasetLockedError, match=r"another writer .* is writing to this dataset"):
                    rk.add_fields(path, "train", EMBEDDING, [-e for e in embeddings])
            yield value

    rk.add_fields(path, "train", EMBEDDING, values())
    assert_values_equal(embeddings, [r["embedding"] for r in rk.iter_records(path)])
    assert {p.name for p in (path / "fields" / "train").iterdir()} == _group_files(path)


def test_add_fields_removes_only_what_the_run_it_resumes_left_never_another_runs_files(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "data"
    _write_base(path, records)
    folder = path / "fields" / "train"
    folder.mkdir(parents=True)
    others = ["embedding.0123abcd-00000.tfrecord", ".embedding.0123abcd-00001.tfrecord.7-ab.tmp"]
    for name in others:  # another run's files, under its own token (e.g. on another machine)
        (folder / name).write_bytes(b"another run's")
    embeddings = [r["embedding"] for r in records]
    with pytest.raises(DatasetError, match=r"values ended after 7 items"):
        rk.add_fields(path, "train", EMBEDDING, embeddings[:7])
    groups = rk.Manifest.load(path).split("train").field_groups or {}
    (key,) = groups
    run = key.split("~")[1]
    assert key == f"embedding~{run}"
    assert all(run in s.file for s in groups[key].shards)
    left = [f"embedding.{run}-00002.tfrecord", f".embedding.{run}-00002.tfrecord.9-cd.tmp"]
    for name in left:  # what the stopped run could leave: a shard renamed, never listed; a temp
        (folder / name).write_bytes(b"stopped run's")
    rk.add_fields(path, "train", EMBEDDING, embeddings)
    assert_values_equal(embeddings, [r["embedding"] for r in rk.iter_records(path)])
    assert {p.name for p in folder.iterdir()} == _group_files(path) | set(others)


def _group_files(path: Path) -> set[str]:
    """The names of the files the split's field groups list (shards and their indexes)."""
    return {
        file.rsplit("/", 1)[-1]
        for group in (rk.Manifest.load(path).split("train").field_groups or {}).values()
        for shard in group.shards
        for file in (shard.file, *([shard.index.file] if shard.index else []))
    }


def test_bad_added_fields_are_refused_with_what_is_wrong(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "data"
    _write_base(path, records)
    caption = rk.Schema(name="c", fields={"caption": SCHEMA.fields["caption"]})
    with pytest.raises(SchemaError, match=r"split 'train' already has a field 'caption' \(in the schema\)"):
        rk.add_fields(path, "train", caption, ["x"] * N)
    with pytest.raises(ValueError, match=r"invalid field group name 'a.b'"):
        rk.add_fields(path, "train", EMBEDDING, [], name="a.b")
    with pytest.raises(ManifestError, match=r"no split 'test'"):
        rk.add_fields(path, "test", EMBEDDING, [])
    with pytest.raises(ManifestError, match=r"no dataset.json: not a recordkit dataset"):
        rk.add_fields(tmp_path, "train", EMBEDDING, [])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"], "no lock file left where no dataset is"
    with pytest.raises(RecordError, match=r"record 0.*embedding"):
        rk.add_fields(path, "train", EMBEDDING, [np.zeros(3, np.float32)] * N)
    two = rk.Schema(name="two", fields={**EMBEDDING.fields, "score": rk.FieldSpec(codec="scalar")})
    with pytest.raises(RecordError, match=r"record 0: is a float, not a mapping of the group's fields"):
        rk.add_fields(path, "train", two, [1.0] * N)


def test_the_canonical_epochs_in_tf_data_read_the_added_fields_of_each_record(
    inline: Path, grouped: Path
) -> None:
    for fields in PROJECTIONS:
        read = [
            [
                row
                for batch in rk.open(path, fields=fields)
                .tf_epochs(4, shuffle=True, seed=2, window=4)
                .dataset()
                for row in rows(batch)
            ]
            for path in (inline, grouped)
        ]
        want, got = read
        assert len(got) == len(want) == N
        for a, b in zip(want, got, strict=True):
            assert sorted(a) == sorted(b)
            for key in a:
                assert_values_equal(np.asarray(a[key]), np.asarray(b[key]), path=f"{fields} {key}")
