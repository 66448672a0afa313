"""Faults in a tf.data read of many shards, whose shards are checked as the read opens
them rather than when it is built (sdk/recordkit/read/_framed_read.py): a hostile record
length (run in a subprocess, so that a regression, TensorFlow allocating 2**40 bytes,
fails this test instead of killing the run), a shard cut short or with a flipped bit,
listed again or not, and a missing shard: each is the error naming the shard and the
offset that a read of few shards gives (here as TensorFlow's InvalidArgumentError
carrying recordkit's message), and ``on_corrupt="skip"`` reads every other record.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _fault_support import flip_bit, record_offsets, relist, set_declared_length, shard_paths, truncate, write

import recordkit as rk

tf = pytest.importorskip("tensorflow")

SHARDS = 40
PER_SHARD = 5
N = SHARDS * PER_SHARD
SEED = 37


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("many") / "data"
    write(root, N, shard_records=PER_SHARD)
    assert len(shard_paths(root)) == SHARDS
    return root


def copy(many: Path, tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(many, root)
    return root


def ids(root: Path, **options: Any) -> list[int]:
    return [
        int(x) for batch in rk.load_dataset(root, fields=["id"], batch_size=8, **options) for x in batch["id"]
    ]


READER = textwrap.dedent(
    """
    import json, re, sys
    import recordkit as rk
    import tensorflow as tf

    root = sys.argv[1]
    try:
        n = sum(1 for _ in rk.load_dataset(root, fields=["id"]))
        out = {"records": n}
    except tf.errors.InvalidArgumentError as exc:
        out = {"error": re.search(r"recordkit CorruptRecordError: [^\\]]*", exc.message).group(0)}
    report = rk.CorruptionReport()
    kept = sum(1 for _ in rk.load_dataset(root, fields=["id"], on_corrupt="skip", report=report))
    out["skip"] = {"records": kept, "shards": report.shards}
    print(json.dumps(out))
    """
)


@pytest.mark.slow
def test_a_hostile_length_in_a_read_of_many_shards_is_refused_without_crashing(
    many: Path, tmp_path: Path, fault_cases: Any
) -> None:
    rng = random.Random(SEED)
    root = copy(many, tmp_path)
    path = rng.choice(shard_paths(root))
    offset = rng.choice(record_offsets(path))
    set_declared_length(path, offset, 2**40)
    relist(root)
    fault_cases.tried("hostile record headers (tf.data, many shards)")
    done = subprocess.run(
        [sys.executable, "-c", READER, str(root)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"the reader died (signal {-done.returncode}): {done.stderr[-2000:]}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"].startswith(f"recordkit CorruptRecordError: shard {path.name}, offset {offset}: ")
    assert "declares 1099511627776 bytes" in result["error"]
    assert result["skip"] == {"records": N - PER_SHARD, "shards": [path.name]}


def _flip(path: Path, offset: int) -> None:
    flip_bit(path, 8 * (offset + 20))


def _cut(path: Path, offset: int) -> None:
    truncate(path, path.stat().st_size - 3)


@pytest.mark.parametrize(("damage", "listed_again"), [(_flip, False), (_cut, False), (_cut, True)])
def test_a_damaged_shard_among_many_is_named_with_its_offset_and_the_records_read(
    many: Path, tmp_path: Path, damage: Callable[[Path, int], None], listed_again: bool, fault_cases: Any
) -> None:
    rng = random.Random(SEED + 1)
    root = copy(many, tmp_path)
    index = rng.randrange(SHARDS)
    path = shard_paths(root)[index]
    offsets = record_offsets(path)
    bad = len(offsets) - 1 if damage is _cut else rng.randrange(len(offsets))
    damage(path, offsets[bad])
    if listed_again:
        relist(root)
    fault_cases.tried("damaged shards (tf.data, many shards)")
    if damage is _flip:
        want = rf"shard {path.name}, offset {offsets[bad]}: .*; {bad} of {PER_SHARD} records could be read"
    elif listed_again:  # the last header now declares more bytes than follow it
        want = rf"shard {path.name}, offset {offsets[bad]}: the record header declares"
    else:  # the size differs from the manifest's
        want = rf"shard {path.name}, offset {offsets[bad]}: the file has \d+ bytes, the manifest says"
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"recordkit CorruptRecordError: {want}"):
        ids(root)
    report = rk.CorruptionReport()
    kept = ids(root, on_corrupt="skip", report=report)
    assert report.shards == [path.name]
    first = index * PER_SHARD
    assert kept == [i for i in range(N) if not first + bad <= i < first + PER_SHARD]


def test_a_shard_holding_more_records_than_listed_is_refused_before_any_of_them_is_read(
    many: Path, tmp_path: Path, fault_cases: Any
) -> None:
    """A sound record appended to a shard and the manifest's bytes made to agree (as an
    attacker, or a manifest without sizes, would have it): records the manifest does not
    count are not the dataset's, and the shard is refused as the numpy reader refuses it."""
    root = copy(many, tmp_path)
    paths = shard_paths(root)
    index = SHARDS // 2
    donor = paths[0].read_bytes()
    first_record = donor[: record_offsets(paths[0])[1]]
    with paths[index].open("ab") as shard:
        shard.write(first_record)
    relist(root)
    fault_cases.tried("shards holding unlisted records (tf.data, many shards)")
    more = f"holds more records than the {PER_SHARD} the manifest lists"
    read: list[int] = []

    def read_all() -> None:
        read.extend(int(record["id"]) for record in rk.load_dataset(root, fields=["id"]))

    with pytest.raises(
        tf.errors.InvalidArgumentError, match=f"CorruptRecordError: shard {paths[index].name}: {more}"
    ):
        read_all()
    assert 0 not in read[PER_SHARD:]  # the appended copy of record 0 never reached the reader
    with pytest.raises(rk.errors.CorruptRecordError, match=more):
        list(rk.open(root).records())


def test_a_missing_shard_among_many_is_named_when_the_read_reaches_it(
    many: Path, tmp_path: Path, fault_cases: Any
) -> None:
    root = copy(many, tmp_path)
    gone = shard_paths(root)[SHARDS - 1]
    gone.unlink()
    fault_cases.tried("missing shards (tf.data, many shards)")
    dataset = rk.load_dataset(root, fields=["id"], batch_size=8)  # built: nothing is touched
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"recordkit ManifestError: shard {gone.name}: listed in the manifest but missing on disk",
    ):
        list(dataset)
