"""Hostile and stale record indexes: ``<shard>.index`` sidecars and the indexes a manifest lists.

An index is untrusted input beside the shard it describes: it may declare any count and
any offsets, or describe the shard as it was before it grew or shrank. Whatever it says,
:class:`recordkit.RandomAccess`, the PyTorch datasets and the Grain source give a
recordkit error naming the shard (for a stale index, with the ``recordkit index``
command that rebuilds it) or exactly the shard's records; none allocates more than a
small multiple of the bytes on disk, and ``recordkit verify`` and ``recordkit index``
fail in one ``Error:`` line.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import struct
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _fault_support import SCHEMA, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.format._index import INDEX_MAGIC  # private: forges index files byte by byte
from recordkit.format._tfrecord import iter_tfrecords  # private: the shard's true record offsets
from recordkit.read._open import open_dataset  # private: the index loader's own input
from recordkit.read._shard_index import IndexedShards  # private: the index loader, alone
from recordkit.storage import location

RECORDS = 20
#: A peak of Python allocations above this many times the files' bytes (plus the
#: reader's own fixed cost) would mean a declared size was allocated.
MEMORY_MULTIPLE = 4
FIXED_COST = 2 << 20

#: Index bytes from the honest index's offsets (and the shard's size).
Forge = Callable[[list[int], int], bytes]


def _index(offsets: list[int], count: int | None = None) -> bytes:
    count = len(offsets) - 1 if count is None else count
    return INDEX_MAGIC + struct.pack("<Q", count) + struct.pack(f"<{len(offsets)}Q", *offsets)


def _offsets(change: Callable[[list[int], int], list[int]]) -> Forge:
    return lambda offsets, size: _index(change(list(offsets), size))


def _random_bytes(seed: int) -> Forge:
    rng = random.Random(seed)
    data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    return lambda offsets, size: (INDEX_MAGIC + data) if seed % 2 else data


def _end(value: Callable[[int], int]) -> Forge:
    def forge(offsets: list[int], size: int) -> bytes:
        return _index([*offsets[:-1], value(size)])

    return forge


FORGED: dict[str, Forge] = {
    "empty file": lambda offsets, size: b"",
    "wrong magic": lambda offsets, size: b"RKINDEX9" + _index(offsets)[8:],
    "header only": lambda offsets, size: _index(offsets)[:16],
    "truncated offsets": lambda offsets, size: _index(offsets)[:-5],
    "count larger than the offsets": lambda offsets, size: _index(offsets, count=len(offsets) + 3),
    "count 250 million beside a small shard": lambda offsets, size: _index(offsets, count=250_000_000),
    "count 2**64 - 1": lambda offsets, size: _index(offsets, count=2**64 - 1),
    "last record spans 1 TiB": _end(lambda size: 1 << 40),
    "end past the shard": _end(lambda size: size + 16),
    "end before the shard's end": _end(lambda size: size - 16),
    "end at 2**64 - 1": _end(lambda size: 2**64 - 1),
    "first offset not 0": _offsets(lambda o, size: [16, *o[1:]]),
    "offsets decreasing": _offsets(lambda o, size: [o[0], o[2], o[1], *o[3:]]),
    "offset off a record boundary": _offsets(lambda o, size: [o[0], o[1] + 3, *o[2:]]),
    "records dropped from the middle": _offsets(lambda o, size: [o[0], *o[5:]]),
    "no records": lambda offsets, size: _index([0]),
    **{f"random bytes {seed}": _random_bytes(seed) for seed in range(2801, 2807)},
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset of one shard of RECORDS records (``dataset/``) and the same shard as a
    TFRecord file recordkit did not write, with its sidecar (``foreign/``)."""
    base = tmp_path_factory.mktemp("indexes")
    write(base / "dataset", RECORDS, shard_records=RECORDS)
    (base / "foreign").mkdir()
    shutil.copy(base / "dataset" / "train-00000.tfrecord", base / "foreign" / "data.tfrecord")
    result = CliRunner().invoke(main, ["index", str(base / "foreign" / "data.tfrecord")])
    assert result.exit_code == 0, result.output
    return base


def _honest(shard: Path) -> list[int]:
    starts = [offset for offset, _ in iter_tfrecords(location(shard))]
    return [*starts, shard.stat().st_size]


def _foreign(pristine: Path, tmp_path: Path, forge: Forge) -> Path:
    shard = tmp_path / "data.tfrecord"
    shutil.copy(pristine / "foreign" / "data.tfrecord", shard)
    (tmp_path / "data.tfrecord.index").write_bytes(forge(_honest(shard), shard.stat().st_size))
    return shard


def _listed(pristine: Path, tmp_path: Path, forge: Forge) -> Path:
    """The dataset with its listed index forged, and the manifest's sha256 made to match
    (an attacker who edits both)."""
    root = tmp_path / "dataset"
    shutil.copytree(pristine / "dataset", root)
    shard = root / "train-00000.tfrecord"
    forged = forge(_honest(shard), shard.stat().st_size)
    (root / "train-00000.tfrecord.index").write_bytes(forged)
    data = json.loads((root / "dataset.json").read_text())
    data["splits"]["train"]["shards"][0]["index"]["sha256"] = hashlib.sha256(forged).hexdigest()
    (root / "dataset.json").write_text(json.dumps(data))
    return root


def _read_all(path: Path, **options: Any) -> list[int] | rk.errors.RecordkitError:
    try:
        ds = rk.RandomAccess(path, **options)
        return [int(record["id"]) for record in ds]
    except rk.errors.RecordkitError as exc:
        return exc


def _assert_one_error_line(result: Any, what: str) -> None:
    assert result.exit_code != 0, f"{what}: exited 0:\n{result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.output.splitlines()[-1].startswith("Error: "), result.output


@pytest.mark.parametrize("name", list(FORGED))
def test_a_forged_sidecar_is_refused_or_reads_the_shard_within_its_bytes(
    pristine: Path, tmp_path: Path, name: str, fault_cases: Any
) -> None:
    fault_cases.tried("hostile indexes: sidecars")
    shard = _foreign(pristine, tmp_path, FORGED[name])
    on_disk = shard.stat().st_size + (tmp_path / "data.tfrecord.index").stat().st_size
    tracemalloc.start()
    try:
        got = _read_all(shard, schema=SCHEMA)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < FIXED_COST + MEMORY_MULTIPLE * on_disk, f"{name}: {peak} bytes allocated"
    if isinstance(got, rk.errors.RecordkitError):
        assert "data.tfrecord" in str(got), got
    else:
        assert got == list(range(RECORDS)), f"{name}: read {got}"


@pytest.mark.parametrize("name", list(FORGED))
def test_a_forged_listed_index_is_refused_or_reads_the_shard(
    pristine: Path, tmp_path: Path, name: str, fault_cases: Any
) -> None:
    fault_cases.tried("hostile indexes: listed in the manifest")
    root = _listed(pristine, tmp_path, FORGED[name])
    got = _read_all(root)
    if isinstance(got, rk.errors.RecordkitError):
        assert "train-00000.tfrecord" in str(got), got
    else:
        assert got == list(range(RECORDS)), f"{name}: read {got}"
    _assert_one_error_line(CliRunner().invoke(main, ["verify", str(root)]), f"verify, {name}")


def test_a_sparse_sidecar_declaring_250_million_records_is_refused_before_it_is_read(
    pristine: Path, tmp_path: Path, fault_cases: Any
) -> None:
    """The index file really is 2 GB long (sparse: no disk space); the reader must not
    read it, because a shard of a few hundred bytes cannot hold that many records."""
    fault_cases.tried("hostile indexes: huge declared sizes")
    shard = tmp_path / "data.tfrecord"
    shutil.copy(pristine / "foreign" / "data.tfrecord", shard)
    count = 250_000_000
    with open(tmp_path / "data.tfrecord.index", "wb") as index:
        index.write(INDEX_MAGIC + struct.pack("<Q", count))
        index.truncate(16 + 8 * (count + 1))
    tracemalloc.start()
    try:
        with pytest.raises(rk.errors.CorruptRecordError, match=r"holds more than the \d+ bytes") as caught:
            rk.RandomAccess(shard, schema=SCHEMA)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < FIXED_COST + MEMORY_MULTIPLE * shard.stat().st_size
    assert f"recordkit index {shard}" in str(caught.value)


def test_verify_reads_a_sparse_listed_index_no_further_than_its_shard_allows(
    pristine: Path, tmp_path: Path, fault_cases: Any
) -> None:
    """A listed index made 2 GB long (sparse) is refused by ``verify`` in one line
    without being read whole."""
    fault_cases.tried("hostile indexes: huge declared sizes")
    root = tmp_path / "dataset"
    shutil.copytree(pristine / "dataset", root)
    count = 250_000_000
    with open(root / "train-00000.tfrecord.index", "wb") as index:
        index.write(INDEX_MAGIC + struct.pack("<Q", count))
        index.truncate(16 + 8 * (count + 1))
    tracemalloc.start()
    try:
        result = CliRunner().invoke(main, ["verify", str(root)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    _assert_one_error_line(result, "verify, sparse listed index")
    assert "holds more than the" in result.output
    assert peak < FIXED_COST + MEMORY_MULTIPLE * (root / "train-00000.tfrecord").stat().st_size


def _grow(shard: Path, records: int) -> None:
    """Append the framed bytes of the shard's first ``records`` records to it."""
    data = shard.read_bytes()
    shard.write_bytes(data + data[: _honest(shard)[records]])


def _shrink(shard: Path, records: int) -> None:
    """Cut the shard after its first ``records`` records."""
    data = shard.read_bytes()
    shard.write_bytes(data[: _honest(shard)[records]])


STALE: dict[str, Callable[[Path], None]] = {
    "grew by 5 records": lambda shard: _grow(shard, 5),
    "shrank to 15 records": lambda shard: _shrink(shard, 15),
    "grew by a torn record": lambda shard: shard.write_bytes(shard.read_bytes() + b"\x05\x00"),
}


def _readers() -> dict[str, Callable[[Path], Any]]:
    torch = pytest.importorskip("recordkit.torch")
    grain = pytest.importorskip("recordkit.grain")
    return {
        "RandomAccess": lambda shard: rk.RandomAccess(shard, schema=SCHEMA),
        "torch.MapDataset": lambda shard: torch.MapDataset(shard, schema=SCHEMA),
        "torch.IterableDataset": lambda shard: list(torch.IterableDataset(shard, schema=SCHEMA)),
        "grain.DataSource": lambda shard: grain.DataSource(shard, schema=SCHEMA),
    }


@pytest.mark.parametrize("change", list(STALE))
def test_a_stale_sidecar_fails_every_random_access_reader_with_the_command_that_rebuilds_it(
    pristine: Path, tmp_path: Path, change: str, fault_cases: Any
) -> None:
    shard = tmp_path / "data.tfrecord"
    shutil.copy(pristine / "foreign" / "data.tfrecord", shard)
    shutil.copy(pristine / "foreign" / "data.tfrecord.index", tmp_path / "data.tfrecord.index")
    STALE[change](shard)
    for reader, read in _readers().items():
        fault_cases.tried("hostile indexes: stale sidecars")
        with pytest.raises(rk.errors.DatasetError, match="does not match the shard") as caught:
            read(shard)
        message = str(caught.value)
        assert "shard data.tfrecord" in message, (reader, message)
        assert f"`recordkit index {shard}`" in message, (reader, message)
    # The advice works: the rebuilt index reads what iter_records reads; a shard that
    # ends in a torn record has no index to rebuild, and the command says so.
    result = CliRunner().invoke(main, ["index", str(shard)])
    if change == "grew by a torn record":
        _assert_one_error_line(result, "index of a torn shard")
        return
    assert result.exit_code == 0, result.output
    want = [int(r["id"]) for r in rk.iter_records(shard, schema=SCHEMA)]
    assert len(want) != RECORDS
    assert [int(r["id"]) for r in rk.RandomAccess(shard, schema=SCHEMA)] == want


def test_a_shard_changed_after_its_index_was_listed_is_named_on_its_first_read(
    pristine: Path, tmp_path: Path
) -> None:
    """A dataset whose shard changed after its index was listed, opened without the
    size checks of the open phase, is still refused on the shard's first read: indexes
    load per shard, on first use, after that shard's size is checked against the
    manifest, so the old index never serves records."""
    root = tmp_path / "dataset"
    shutil.copytree(pristine / "dataset", root)
    _grow(root / "train-00000.tfrecord", 3)
    shards = IndexedShards(open_dataset(root, check_sizes=False))
    with pytest.raises(rk.errors.DatasetError, match="truncated or changed") as caught:
        shards.span(0, 0)
    assert "train-00000.tfrecord" in str(caught.value)


@pytest.mark.parametrize(
    "content",
    [b"", b"\x05" * 7, b"\xff" * 40, bytes(random.Random(2811).randrange(256) for _ in range(500))],
    ids=["empty", "torn header", "huge length", "random bytes"],
)
def test_recordkit_index_refuses_a_file_that_is_not_tfrecord_in_one_line(
    tmp_path: Path, content: bytes, fault_cases: Any
) -> None:
    fault_cases.tried("hostile indexes: recordkit index")
    shard = tmp_path / "data.tfrecord"
    shard.write_bytes(content)
    result = CliRunner().invoke(main, ["index", str(shard)])
    if content:
        _assert_one_error_line(result, "index")
        assert not (tmp_path / "data.tfrecord.index").exists()
    else:
        assert result.exit_code == 0, result.output  # an empty file is a shard of no records
