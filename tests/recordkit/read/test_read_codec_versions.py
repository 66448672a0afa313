"""Datasets are read by the codec version that stored them (sdk/recordkit/read/_open.py,
``Codec.for_stored_version``): records written by version 1 of the ``versioned`` codec
read back, through every reader, with version 2 installed; records of a version the
installed codec does not read are refused before any is decoded.

The two versions (tests/recordkit/_versioned_codecs.py) store the same numbers under the
same Example key, one as an int64 list and one as bytes: decoded by the wrong version,
the records would not parse.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _versioned_codecs import PLUGIN_MODULE, SCHEMA, VersionedV1, VersionedV2, records, registry

import recordkit as rk
from recordkit.errors import CodecVersionError, IncompatibleSchemaError

N = 7


@pytest.fixture(scope="module")
def written() -> list[dict[str, Any]]:
    return records(N)


@pytest.fixture(scope="module")
def old_dataset(tmp_path_factory: pytest.TempPathFactory, written: list[dict[str, Any]]) -> Path:
    """A dataset that version 1 of the codec wrote, in three shards."""
    path = tmp_path_factory.mktemp("versions") / "old"
    rk.write_dataset(written, SCHEMA, path, registry=registry(VersionedV1), shard_records=3, progress=False)
    return path


def numbers(rows: list[dict[str, Any]]) -> list[list[int]]:
    return [np.asarray(row["numbers"]).tolist() for row in rows]


def test_the_manifest_records_the_version_that_stored_the_records(old_dataset: Path) -> None:
    assert rk.Manifest.load(old_dataset).codec_versions == {"scalar": "1", "versioned": "1"}


def test_iter_records_with_version_2_installed_reads_version_1s_records(
    old_dataset: Path, written: list[dict[str, Any]]
) -> None:
    read = list(rk.iter_records(old_dataset, registry=registry(VersionedV2)))
    assert numbers(read) == numbers(written)
    assert [row["id"] for row in read] == list(range(N))
    assert {np.asarray(row["numbers"]).dtype for row in read} == {np.dtype(np.int32)}


def test_load_dataset_with_version_2_installed_reads_version_1s_records(
    old_dataset: Path, written: list[dict[str, Any]]
) -> None:
    batches = list(rk.load_dataset(old_dataset, batch_size=4, registry=registry(VersionedV2)))
    read = [row.tolist() for batch in batches for row in batch["numbers"].numpy()]
    assert read == numbers(written)
    assert batches[0]["numbers"].dtype.name == "int32"


def test_random_access_with_version_2_installed_reads_version_1s_records(
    old_dataset: Path, written: list[dict[str, Any]]
) -> None:
    ds = rk.RandomAccess(old_dataset, registry=registry(VersionedV2))
    for i in (6, 0, 3):  # across the shards, out of order
        assert np.asarray(ds[i]["numbers"]).tolist() == np.asarray(written[i]["numbers"]).tolist()
        assert ds[i]["id"] == i


def test_the_readers_schema_still_reads_with_the_stored_versions(
    old_dataset: Path, written: list[dict[str, Any]], tmp_path: Path
) -> None:
    """``schema=`` (here a schema file) chooses the fields and how they are given; the
    codec versions come from the manifest all the same."""
    SCHEMA.dump(tmp_path / "versions.yaml")
    new = registry(VersionedV2)
    read = list(
        rk.iter_records(old_dataset, fields=["numbers"], schema=tmp_path / "versions.yaml", registry=new)
    )
    assert numbers(read) == numbers(written)
    batch = next(iter(rk.load_dataset(old_dataset, batch_size=N, schema=SCHEMA, registry=new)))
    assert [row.tolist() for row in batch["numbers"].numpy()] == numbers(written)


def test_a_dataset_of_the_installed_version_reads_with_it(
    tmp_path: Path, written: list[dict[str, Any]]
) -> None:
    new = registry(VersionedV2)
    rk.write_dataset(written, SCHEMA, tmp_path / "new", registry=new, progress=False)
    assert rk.Manifest.load(tmp_path / "new").codec_versions["versioned"] == "2"
    opened = rk.RandomAccess(tmp_path / "new", registry=new).dataset
    assert type(opened.bound["numbers"].codec) is VersionedV2
    assert numbers(list(rk.iter_records(tmp_path / "new", registry=new))) == numbers(written)


def test_files_without_a_manifest_are_read_by_the_installed_version(
    old_dataset: Path, written: list[dict[str, Any]]
) -> None:
    """TFRecords given with ``schema=`` record no codec version: the installed codec
    reads them, as it reads any foreign layout."""
    shards = sorted(str(p) for p in old_dataset.glob("train-*.tfrecord"))
    read = list(rk.iter_records(shards, schema=SCHEMA, registry=registry(VersionedV1)))
    assert numbers(read) == numbers(written)
    with pytest.raises(rk.errors.RecordkitError):  # version 2 parses the int64 list as bytes
        list(rk.iter_records(shards, schema=SCHEMA, registry=registry(VersionedV2)))


# -- versions the installed codec does not read ------------------------------------------------


@pytest.fixture(scope="module")
def newer_dataset(tmp_path_factory: pytest.TempPathFactory, written: list[dict[str, Any]]) -> Path:
    """A dataset that version 2 wrote, which version 1 does not read."""
    path = tmp_path_factory.mktemp("versions") / "newer"
    rk.write_dataset(written, SCHEMA, path, registry=registry(VersionedV2), progress=False)
    return path


@pytest.mark.parametrize(
    "reader",
    [rk.iter_records, rk.load_dataset, rk.RandomAccess],
    ids=["iter_records", "load_dataset", "RandomAccess"],
)
def test_a_version_the_installed_codec_does_not_read_is_refused_naming_both(
    newer_dataset: Path, reader: Any
) -> None:
    with pytest.raises(CodecVersionError) as info:
        reader(newer_dataset, registry=registry(VersionedV1))
    error = info.value
    assert (error.field, error.context.codec) == ("numbers", "versioned")
    assert str(error) == (
        "field 'numbers', codec 'versioned': the records were stored by version 2 of codec 'versioned'; "
        "the installed codec is version 1 and does not read them: install version 2 of codec "
        "'versioned' (the version that wrote them)"
    )


def test_the_other_fields_read_without_the_codec_that_cannot(newer_dataset: Path) -> None:
    read = list(rk.iter_records(newer_dataset, fields=["id"], registry=registry(VersionedV1)))
    assert [row["id"] for row in read] == list(range(N))


def test_the_error_names_the_distribution_that_wrote_the_dataset(
    plugin_dist: Any, tmp_path: Path, written: list[dict[str, Any]]
) -> None:
    """A codec from a distribution: the manifest names it, and so does the error, with
    the requirement that installs the release which wrote the records."""
    plugin_dist("rk-versioned", {"rk_versioned_v2": PLUGIN_MODULE.format(version=2)}, version="2.4.0")
    released = rk.load_plugins(allow=["recordkit", "rk-versioned"]).registry
    rk.write_dataset(written, SCHEMA, tmp_path / "data", registry=released, progress=False)
    provenance = rk.Manifest.load(tmp_path / "data").codecs["versioned"]
    assert (provenance.version, provenance.distribution, provenance.distribution_version) == (
        "2",
        "rk-versioned",
        "2.4.0",
    )
    with pytest.raises(CodecVersionError) as info:
        rk.iter_records(tmp_path / "data", registry=registry(VersionedV1))
    assert info.value.context.distribution == "rk-versioned"
    assert str(info.value).endswith(
        "install version 2 of codec 'versioned' (the version that wrote them); this dataset was "
        "written with codec 'versioned' version 2 from distribution 'rk-versioned' 2.4.0 "
        "(pip install 'rk-versioned==2.4.0')"
    )


def test_appending_with_another_codec_version_stays_refused(
    old_dataset: Path, written: list[dict[str, Any]], tmp_path: Path
) -> None:
    """Reading old records with a new codec is fine; storing new records beside them in
    another layout is not: the append names the field and both versions."""
    copy = Path(shutil.copytree(old_dataset, tmp_path / "old"))
    with pytest.raises(IncompatibleSchemaError) as info:
        rk.write_dataset(written, SCHEMA, copy, registry=registry(VersionedV2), append=True, progress=False)
    assert "field 'numbers': codec 'versioned' version '1' stored, '2' installed" in str(info.value)
    assert rk.Manifest.load(copy).codec_versions["versioned"] == "1"
