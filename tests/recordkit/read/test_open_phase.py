"""The open phase (sdk/recordkit/read/_open.py): local and remote inputs go the same way,
a dataset's folder or its dataset.json, TFRecord files given as a glob, a pattern that
matches nothing and a path that is not a dataset, each said once and the same way."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from _reader_support import SCHEMA, make_records

import recordkit as rk
from recordkit.errors import DatasetError
from recordkit.storage import location
from recordkit.testing import assert_values_equal


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("open") / "data"
    rk.write_dataset(make_records(9, seed=5), SCHEMA, root, shard_records=4, progress=False)
    return root


@pytest.fixture
def in_memory(dataset: Path) -> str:
    """The same dataset's files copied to fsspec's in-memory store (a remote URL)."""
    url = f"memory://recordkit-open-{uuid.uuid4().hex}/data"
    for path in sorted(dataset.iterdir()):
        if path.is_file():
            location(url).join(path.name).write_bytes(path.read_bytes())
    return url


def _captions(ds: rk.Dataset) -> list[Any]:
    return [record["caption"] for record in ds.records()]


def test_a_folder_its_manifest_and_its_remote_copy_open_to_the_same_records(
    dataset: Path, in_memory: str
) -> None:
    want = _captions(rk.open(dataset))
    assert len(want) == 9
    assert _captions(rk.open(dataset / "dataset.json")) == want
    assert _captions(rk.open(in_memory)) == want
    assert _captions(rk.open(f"{in_memory}/dataset.json")) == want
    remote = rk.open(in_memory)
    for i in (0, 4, 8):
        assert_values_equal(remote[i], rk.open(dataset)[i], path=f"record {i}")


def test_tfrecord_files_as_a_glob_read_alike_local_and_remote(dataset: Path, in_memory: str) -> None:
    local = rk.open(str(dataset / "train-*.tfrecord"), schema=SCHEMA)
    remote = rk.open(f"{in_memory}/train-*.tfrecord", schema=SCHEMA)
    assert local.manifest is None
    assert remote.manifest is None
    assert _captions(local) == _captions(remote) == _captions(rk.open(dataset))


def test_what_is_not_a_dataset_is_said_once_and_alike_local_and_remote(dataset: Path, in_memory: str) -> None:
    for files in (str(dataset / "train-*.tfrecord"), f"{in_memory}/train-*.tfrecord"):
        with pytest.raises(DatasetError, match=r"is not a recordkit dataset .*pass schema="):
            rk.open(files)
    with pytest.raises(DatasetError, match="no files match"):
        rk.open(str(dataset / "nothing-*.tfrecord"), schema=SCHEMA)
    with pytest.raises(DatasetError, match="no objects match"):
        rk.open(f"{in_memory}/nothing-*.tfrecord", schema=SCHEMA)
    with pytest.raises(DatasetError, match="does not exist"):
        rk.open(dataset / "nowhere")
    with pytest.raises(DatasetError, match=r"is a folder without dataset\.json"):
        rk.open(dataset.parent, schema=SCHEMA)
