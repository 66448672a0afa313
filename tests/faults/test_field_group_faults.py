"""Faults of field groups: ``add_fields`` and an append to a split with field groups killed
at generated moments and run again, and hostile manifests and files that misalign a group
with its split.

A killed run loses nothing: the dataset reads as before (the unfinished group left out),
running ``add_fields`` again completes the group with every record's value, and no file
is left that the manifest does not list. A misaligned group is refused, by the manifest
check or by every reader, with an error naming the files; never read as other records'
values.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _fault_support import SCHEMA, SCORES, doubled, flip_bit, ids, record_offsets, records, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import ManifestError, RecordkitError
from recordkit.format._tfrecord import frame_record, iter_tfrecords  # private: builds a misaligned shard
from recordkit.storage import location

HERE = Path(__file__).parent
N = 30
KINDS = {"record": N, "shard-rename": 5, "manifest-rename": 6, "fsync": 10}


def _cases(count: int, seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    out = [("manifest-rename", 0), ("shard-rename", 4)]  # the first save, the last shard
    while len(out) < count:
        kind = rng.choice(sorted(KINDS))
        out.append((kind, rng.randrange(KINDS[kind])))
    return out


@pytest.mark.parametrize(("kind", "k"), _cases(6, 3601))
def test_add_fields_killed_at_any_moment_loses_nothing_and_completes_when_run_again(
    tmp_path: Path, kind: str, k: int, fault_cases: Any
) -> None:
    fault_cases.tried("SIGKILL during add_fields")
    root = tmp_path / "dataset"
    write(root, N, shard_records=7)  # 5 shards
    done = subprocess.run(
        [sys.executable, str(HERE / "_killed_add_fields.py"), str(root), kind, str(k)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr[-3000:]
    assert ids(root) == list(range(N)), "the split reads as before"
    if done.returncode != 0:
        assert "score" not in next(rk.iter_records(root)), "an unfinished group is not read"
        rk.add_fields(root, "train", SCORES, doubled(root))
    got = [(int(r["id"]), int(r["score"])) for r in rk.iter_records(root)]
    assert got == [(i, 2 * i) for i in range(N)], (kind, k)
    result = CliRunner().invoke(main, ["verify", str(root)])
    assert result.exit_code == 0, result.output
    listed = {
        name
        for shard in rk.Manifest.load(root).split("train").field_groups["score"].shards  # type: ignore[index]
        for name in (shard.file, shard.index.file if shard.index else "")
    }
    on_disk = {f"fields/train/{p.name}" for p in (root / "fields" / "train").iterdir()}
    assert on_disk == listed, (kind, k)


APPENDED = 16  # 3 shards of 7, 7 and 2 records, and 3 group shards beside them
APPEND_ARGS = (str(APPENDED), str(N), "0")  # N: the ids go on after the split's; 0: no worker processes
APPEND_KINDS = {"record": APPENDED, "shard-rename": 6, "manifest-rename": 5, "fsync": 12, "after-rename": 12}


def _append_cases(count: int, seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    out = [("manifest-rename", 0), ("shard-rename", 1), ("shard-rename", 5)]  # first save, group renames
    while len(out) < count:
        kind = rng.choice(sorted(APPEND_KINDS))
        out.append((kind, rng.randrange(APPEND_KINDS[kind])))
    return out


def _scored(root: Path) -> list[tuple[int, int]]:
    return [(int(r["id"]), int(r["score"])) for r in rk.iter_records(root)]


@pytest.mark.parametrize(("kind", "k"), _append_cases(8, 3602))
def test_an_append_to_a_split_with_field_groups_killed_at_any_moment_resumes_aligned(
    tmp_path: Path, kind: str, k: int, fault_cases: Any
) -> None:
    fault_cases.tried("SIGKILL during an append to a split with field groups")
    root = tmp_path / "dataset"
    write(root, N, shard_records=7)  # 5 shards
    rk.add_fields(root, "train", SCORES, doubled(root))
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "_killed_writer.py"),
            str(root),
            "append+score",
            kind,
            str(k),
            *APPEND_ARGS,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr[-3000:]
    if done.returncode != 0:
        assert _scored(root) == [(i, 2 * i) for i in range(N)], "the split reads as before the append"
        schema = rk.Schema(name=SCHEMA.name, fields={**SCHEMA.fields, **SCORES.fields})
        rows = ({**r, "score": 2 * r["id"]} for r in records(APPENDED, N))
        # Killed before the append's first save, the split is not marked: the append starts over.
        started = rk.Manifest.load(root).split("train").unfinished is not None
        rk.write_dataset(
            rows, schema, root, shard_records=7, resume=started, append=not started, progress=False
        )
    assert _scored(root) == [(i, 2 * i) for i in range(N + APPENDED)], (kind, k)
    result = CliRunner().invoke(main, ["verify", str(root)])
    assert result.exit_code == 0, result.output
    split = rk.Manifest.load(root).split("train")
    assert split.field_groups is not None
    listed = {
        name
        for shard in split.field_groups["score"].shards
        for name in (shard.file, shard.index.file if shard.index else "")
    }
    on_disk = {f"fields/train/{p.name}" for p in (root / "fields" / "train").iterdir()}
    assert on_disk == listed, (kind, k)
    assert [s.records for s in split.field_groups["score"].shards] == [s.records for s in split.shards]


#: Where a bit is flipped in the second record of the first shard: its data (a CRC
#: mismatch, the record's length intact) or its length (the records after it cannot be counted).
FLIPS = {"data": 12 + 2, "length": 1}


@pytest.mark.parametrize("where", ["group", "split"])
@pytest.mark.parametrize("part", sorted(FLIPS))
def test_a_bit_flip_in_a_group_or_split_shard_skips_the_whole_record_in_every_file(
    pristine: Path, tmp_path: Path, where: str, part: str, fault_cases: Any
) -> None:
    fault_cases.tried("bit flips in a split with field groups, read with on_corrupt='skip'")
    root = tmp_path / "dataset"
    shutil.copytree(pristine, root)
    split = rk.Manifest.load(root).split("train")
    assert split.field_groups is not None
    file = root / (split.field_groups["score"].shards[0].file if where == "group" else split.shards[0].file)
    flip_bit(file, 8 * (record_offsets(file)[1] + FLIPS[part]))
    pytest.importorskip("tensorflow")
    ds = rk.open(root)
    for reader in ("records", "tf"):
        report = rk.CorruptionReport()
        if reader == "records":
            got = [(int(r["id"]), int(r["score"])) for r in ds.records(on_corrupt="skip", report=report)]
        else:
            batches = ds.tf(batch_size=4, on_corrupt="skip", report=report)
            pairs = (zip(b["id"].numpy(), b["score"].numpy(), strict=True) for b in batches)
            got = [(int(i), int(s)) for batch in pairs for i, s in batch]
        assert all(score == 2 * i for i, score in got), f"{reader}: a record joined with another's fields"
        missing = sorted(set(range(N)) - {i for i, _ in got})
        assert missing, reader
        assert report.records_skipped == len(missing), (reader, missing, str(report))
        assert set(missing) <= set(range(1, 7)), "only records of the damaged shard are lost"
        if reader == "records" and part == "data":
            assert missing == [1], "the numpy reader skips the damaged record alone"
            assert report.shards == [file.relative_to(root).as_posix()], "the damaged file is named"


Change = Callable[[Path, dict[str, Any]], None]
GROUP = "splits.train.field_groups.score"


def _set(path: str, value: Any) -> Change:
    def change(root: Path, data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return change


def _drop_last_shard(root: Path, data: dict[str, Any]) -> None:
    data["splits"]["train"]["field_groups"]["score"]["shards"].pop()


def _swap_shards(root: Path, data: dict[str, Any]) -> None:
    shards = data["splits"]["train"]["field_groups"]["score"]["shards"]
    shards[0], shards[1] = shards[1], shards[0]  # 7 and 7 records: the counts agree, the values do not


def _short_file(root: Path, data: dict[str, Any]) -> None:
    """The group's first shard rewritten with one record fewer, and the manifest's size and
    sha256 for it updated to match (what a careless tool would do): only the count is off."""
    shard = data["splits"]["train"]["field_groups"]["score"]["shards"][0]
    path = root / shard["file"]
    kept = [record for _, record in iter_tfrecords(location(path))][:-1]
    path.write_bytes(b"".join(frame_record(record) for record in kept))
    shard["bytes"] = path.stat().st_size
    shard["sha256"] = __import__("hashlib").sha256(path.read_bytes()).hexdigest()
    shard.pop("index")


HOSTILE: dict[str, Change] = {
    "records differ": _set(f"{GROUP}.shards.0.records", 6),
    "a shard missing": _drop_last_shard,
    "shards swapped": _swap_shards,
    "file outside": _set(f"{GROUP}.shards.0.file", "../outside/train-00000.tfrecord"),
    "field of the schema": _set(f"{GROUP}.fields", {"id": {"codec": "scalar"}}),
    "format 2": _set("format", "recordkit.dataset/2"),
    "no fields": _set(f"{GROUP}.fields", {}),
    "unfinished a string": _set(f"{GROUP}.unfinished", "yes"),
    "short file": _short_file,
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("groups") / "dataset"
    write(root, N, shard_records=7)
    rk.add_fields(root, "train", SCORES, doubled(root))
    write(root.parent / "outside", 7, start=1000)
    return root


def _reads(root: Path) -> list[tuple[int, int]] | RecordkitError:
    try:
        return [(int(r["id"]), int(r["score"])) for r in rk.iter_records(root)]
    except RecordkitError as exc:
        return exc


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_misaligned_field_group_is_refused_naming_the_files(
    pristine: Path, tmp_path: Path, name: str, fault_cases: Any
) -> None:
    fault_cases.tried("hostile field groups")
    root = tmp_path / "dataset"
    shutil.copytree(pristine, root)
    shutil.copytree(pristine.parent / "outside", tmp_path / "outside")
    data = json.loads((root / "dataset.json").read_text())
    HOSTILE[name](root, data)
    (root / "dataset.json").write_text(json.dumps(data))
    right = [(i, 2 * i) for i in range(N)]
    got = _reads(root)
    assert isinstance(got, RecordkitError), f"{name}: read {got}"
    assert got != right
    if name == "records differ":
        assert isinstance(got, ManifestError)
        assert "its shard fields/train/score." in got.reason
        assert "the split's shard train-00000.tfrecord 7" in got.reason
    if name == "shards swapped":
        assert "its shard fields/train/score." in got.reason
        assert "was written for another shard than the split's shard train-00000.tfrecord" in got.reason
    if name == "short file":
        assert "ends after 6 records, train-00000.tfrecord holds more" in str(got)
        tf = pytest.importorskip("tensorflow")
        message = (
            r"shard train-00000.tfrecord \(joined with fields/train/score\..*\): the files are not aligned"
        )
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            list(rk.load_dataset(root, batch_size=4))
        with pytest.raises(RecordkitError, match="score"):
            rk.RandomAccess(root)[0]
    result = CliRunner().invoke(main, ["verify", str(root)])
    assert result.exit_code != 0, f"{name}: verify passed:\n{result.output}"
    assert "Traceback" not in result.output
    with contextlib.suppress(RecordkitError):
        rk.remove_fields(root, "train", "score")
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == sorted(
        p.name for p in (pristine.parent / "outside").iterdir()
    ), "nothing outside the dataset was removed"
