"""Hostile manifests: paths, counts, sizes, types, encodings and nesting in dataset.json.

Each case is a copy of one small dataset whose ``dataset.json`` an attacker (or a
broken tool) changed. Whatever the change, every reader, ``recordkit verify`` and the
writer's append and resume give a recordkit error or read exactly the dataset's own
records; none reads a record of the file planted outside the dataset folder, none
raises anything but a recordkit error, and ``verify`` never passes.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _fault_support import SCHEMA, records, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main

OUTSIDE_IDS = range(1000, 1010)

Change = Callable[[Path, dict[str, Any]], Any]


def _file(name: str) -> Change:
    def change(root: Path, data: dict[str, Any]) -> None:
        data["splits"]["train"]["shards"][0]["file"] = name

    return change


def _absolute(root: Path, data: dict[str, Any]) -> None:
    data["splits"]["train"]["shards"][0]["file"] = str(root.parent / "outside" / "train-00000.tfrecord")


def _symlink(target: str) -> Change:
    def change(root: Path, data: dict[str, Any]) -> None:
        (root / "link.tfrecord").symlink_to(target)
        data["splits"]["train"]["shards"][0]["file"] = "link.tfrecord"

    return change


def _symlinked_folder(root: Path, data: dict[str, Any]) -> None:
    (root / "sub").symlink_to(root.parent / "outside")
    data["splits"]["train"]["shards"][0]["file"] = "sub/train-00000.tfrecord"


def _rejects(name: str) -> Change:
    def change(root: Path, data: dict[str, Any]) -> None:
        data["splits"]["train"]["rejects_file"] = name
        data["splits"]["train"]["rejected"] = 1

    return change


PATHS: dict[str, Change] = {
    "dot-dot": _file("../outside/train-00000.tfrecord"),
    "absolute": _absolute,
    "dot-dot inside": _file("x/../../outside/train-00000.tfrecord"),
    "backslashes": _file("..\\outside\\train-00000.tfrecord"),
    "drive letter": _file("C:/outside/train-00000.tfrecord"),
    "percent-encoded": _file("%2e%2e/outside/train-00000.tfrecord"),
    "fullwidth dots": _file("\uff0e\uff0e/outside/train-00000.tfrecord"),
    "one-dot leaders": _file("\u2024\u2024/outside/train-00000.tfrecord"),
    "fullwidth slash": _file("..\uff0foutside\uff0ftrain-00000.tfrecord"),
    "NUL byte": _file("train-00000.tfrecord\x00../../outside"),
    "newline": _file("train-00000.tfrecord\n"),
    "empty": _file(""),
    "dot": _file("."),
    "dot slash": _file("./train-00000.tfrecord"),
    "hidden temp file": _file(".train-00000.tfrecord.tmp"),
    "trailing slash": _file("train-00000.tfrecord/"),
    "very long": _file("a" * 5000),
    "symlink out": _symlink("../outside/train-00000.tfrecord"),
    "symlink absolute": _symlink("/etc/hostname"),
    "symlinked folder": _symlinked_folder,
    "rejects dot-dot": _rejects("../outside/rejects.jsonl"),
    "rejects absolute": _rejects("/etc/hostname"),
}


def _set(path: str, value: Any) -> Change:
    keys = path.split(".")

    def change(root: Path, data: dict[str, Any]) -> None:
        target: Any = data
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


SHARD = "splits.train.shards.0"
COUNTS: dict[str, Change] = {
    "records negative": _set(f"{SHARD}.records", -1),
    "records as text": _set(f"{SHARD}.records", "10"),
    "records true": _set(f"{SHARD}.records", True),
    "records float": _set(f"{SHARD}.records", 9.5),
    "records huge": _set(f"{SHARD}.records", 10**30),
    "records fewer": _set(f"{SHARD}.records", 9),
    "records more": _set(f"{SHARD}.records", 11),
    "records null": _set(f"{SHARD}.records", None),
    "bytes negative": _set(f"{SHARD}.bytes", -5),
    "bytes wrong": _set(f"{SHARD}.bytes", 3),
    "bytes huge": _set(f"{SHARD}.bytes", 2**70),
    "bytes true": _set(f"{SHARD}.bytes", True),
    "sha256 not hex": _set(f"{SHARD}.sha256", "zz" * 32),
    "sha256 wrong": _set(f"{SHARD}.sha256", "0" * 64),
    "sha256 number": _set(f"{SHARD}.sha256", 12),
    "rejected negative": _set("splits.train.rejected", -1),
}
TYPES: dict[str, Change] = {
    "splits a list": _set("splits", []),
    "splits null": _set("splits", None),
    "shards a dict": _set("splits.train.shards", {"0": {}}),
    "shard a string": _set(SHARD, "train-00000.tfrecord"),
    "schema a number": _set("schema", 7),
    "fields a list": _set("schema.fields", ["id"]),
    "codec unknown": _set("schema.fields.id.codec", "no-such-codec"),
    "format other": _set("format", "recordkit.dataset/99"),
    "compression other": _set("compression", "BZIP2"),
    "unfinished a string": _set("splits.train.unfinished", "yes"),
    "extra key": _set("surprise", 1),
}


def _raw(payload: bytes) -> Change:
    def change(root: Path, data: dict[str, Any]) -> bytes:
        return payload

    return change


def _encodings() -> dict[str, Change]:
    rng = random.Random(1201)
    cases: dict[str, Change] = {
        f"random bytes {i}": _raw(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))))
        for i in range(4)
    }
    text = json.dumps({"format": "recordkit.dataset/1", "splits": {}})
    cases.update(
        {
            "utf-16": _raw(text.encode("utf-16")),
            "latin-1 byte": _raw(text.replace("{}", '{"tr\xe9in": {}}').encode("latin-1")),
            "utf-8 BOM": _raw(b"\xef\xbb\xbf" + text.encode()),
            "NUL bytes": _raw(text.encode().replace(b"{}", b"{\x00}")),
            "empty file": _raw(b""),
            "not an object": _raw(b"[1, 2, 3]"),
            "a string": _raw(b'"dataset"'),
            "null": _raw(b"null"),
            "huge number": _raw(b"1" * 5000),
        }
    )
    return cases


def _nested(depth: int) -> Change:
    def change(root: Path, data: dict[str, Any]) -> bytes:
        body = json.dumps(data)
        inner = "[" * depth + "]" * depth
        return body.replace('"splits": {', f'"deep": {inner}, "splits": {{', 1).encode()

    return change


NESTING: dict[str, Change] = {f"nested {d}": _nested(d) for d in (65, 900, 5000, 100_000)}
FAMILIES = {
    "hostile manifests: paths": PATHS,
    "hostile manifests: counts and sizes": COUNTS,
    "hostile manifests: types": TYPES,
    "hostile manifests: encodings": _encodings(),
    "hostile manifests: nesting": NESTING,
}
CASES = [(family, name) for family, cases in FAMILIES.items() for name in cases]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hostile")
    write(base / "dataset", 30)
    rk.write_dataset(
        [{"id": i, "payload": "outside"} for i in OUTSIDE_IDS], SCHEMA, base / "outside", progress=False
    )
    return base


def _hostile_copy(pristine: Path, tmp_path: Path, family: str, name: str) -> Path:
    shutil.copytree(pristine / "outside", tmp_path / "outside")
    root = tmp_path / "dataset"
    shutil.copytree(pristine / "dataset", root)
    data = json.loads((root / "dataset.json").read_text())
    raw = FAMILIES[family][name](root, data)
    if isinstance(raw, bytes):
        (root / "dataset.json").write_bytes(raw)
    else:
        (root / "dataset.json").write_text(json.dumps(data), encoding="utf-8")
    return root


def _read_ids(root: Path) -> list[int] | rk.errors.RecordkitError:
    try:
        return [int(r["id"]) for r in rk.iter_records(root, "train")]
    except rk.errors.RecordkitError as exc:
        return exc


@pytest.mark.parametrize(("family", "name"), CASES, ids=[f"{f.split(': ')[1]}-{n}" for f, n in CASES])
def test_a_hostile_manifest_is_refused_or_read_as_the_dataset(
    pristine: Path, tmp_path: Path, family: str, name: str, fault_cases: Any
) -> None:
    root = _hostile_copy(pristine, tmp_path, family, name)
    fault_cases.tried(family)
    # The numpy reader: a recordkit error, or the dataset's own records.
    got = _read_ids(root)
    if not isinstance(got, rk.errors.RecordkitError):
        assert not set(got) & set(OUTSIDE_IDS), f"{name}: read records from outside the dataset"
        assert sorted(got) == list(range(30)), name
    # verify: never passes (but where the shards do match the manifest and only the codec
    # is unknown: verify needs no codec), and fails in one line, without a traceback.
    result = CliRunner().invoke(main, ["verify", str(root)])
    if name == "codec unknown":
        assert isinstance(got, rk.errors.UnknownCodecError)
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code != 0, f"{name}: verify passed:\n{result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.output.splitlines()[-1].startswith("Error: "), result.output
    assert "outside" not in "".join(line for line in result.output.splitlines() if line.startswith("ok "))
    # The writer: appending or resuming never writes through a hostile manifest's paths.
    for option in ("append", "resume"):
        before = sorted(p.name for p in (tmp_path / "outside").iterdir())
        with contextlib.suppress(rk.errors.RecordkitError):
            rk.write_dataset(records(3, 500), SCHEMA, root, "train", progress=False, **{option: True})
        assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == before
        assert rk.iter_records(tmp_path / "outside") is not None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dot-dot", "absolute", "symlink out", "symlinked folder", "fullwidth dots"])
def test_load_dataset_refuses_paths_out_of_the_folder(
    pristine: Path, tmp_path: Path, name: str, fault_cases: Any
) -> None:
    pytest.importorskip("tensorflow")
    root = _hostile_copy(pristine, tmp_path, "hostile manifests: paths", name)
    fault_cases.tried("hostile manifests: paths (tf.data)")
    with pytest.raises(rk.errors.ManifestError, match=r"dataset folder|plain file name"):
        rk.load_dataset(root, "train")


def test_a_symlinked_manifest_out_of_the_folder_is_refused(pristine: Path, tmp_path: Path) -> None:
    shutil.copytree(pristine / "outside", tmp_path / "outside")
    root = tmp_path / "dataset"
    root.mkdir()
    os.symlink(tmp_path / "outside" / "dataset.json", root / "dataset.json")
    with pytest.raises(rk.errors.ManifestError, match="symlink out of the dataset folder"):
        rk.Manifest.load(root)
