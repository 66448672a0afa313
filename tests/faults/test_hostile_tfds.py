"""Hostile TFDS folders: ``dataset_info.json`` and ``features.json`` with wrong types,
bad counts, escaping file-name templates, bad feature names, bad encodings and nesting.

Each case is a copy of one small folder laid out as TFDS prepares one (two TFRecord
shards named by TFDS's template, beside its two JSON files), with one of the JSON files
changed. Whatever the change, the readers give a recordkit error naming the file, or
exactly the folder's own records; none reads the shard planted beside the folder, none
allocates from a declared count; ``recordkit inspect``, ``verify`` and ``index`` fail in
one ``Error:`` line, never a traceback.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main

SHARDS = 2
PER_SHARD = 5
OUTSIDE_LABEL = 1000

_CLASS = "tensorflow_datasets.core.features."
FEATURES: dict[str, Any] = {
    "pythonClassName": _CLASS + "features_dict.FeaturesDict",
    "featuresDict": {
        "features": {
            "caption": {"pythonClassName": _CLASS + "text_feature.Text", "text": {}},
            "label": {
                "pythonClassName": _CLASS + "tensor_feature.Tensor",
                "tensor": {"shape": {}, "dtype": "int64", "encoding": "none"},
            },
        }
    },
}
INFO: dict[str, Any] = {
    "name": "tiny",
    "version": "1.0.0",
    "fileFormat": "tfrecord",
    "splits": [
        {
            "name": "train",
            "shardLengths": [str(PER_SHARD)] * SHARDS,  # TFDS writes int64 as strings
            "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
        }
    ],
}
SCHEMA = rk.Schema(
    name="tiny",
    fields={"caption": rk.FieldSpec(codec="text"), "label": rk.FieldSpec(codec="scalar")},
)

#: A change to (info, features) in place, or the raw bytes of one file:
#: ("dataset_info.json" | "features.json", bytes).
Change = Callable[[Path, dict[str, Any], dict[str, Any]], tuple[str, bytes] | None]


def _split(key: str, value: Any) -> Change:
    def change(root: Path, info: dict[str, Any], features: dict[str, Any]) -> None:
        info["splits"][0][key] = value

    return change


def _counted(key: str, value: Any) -> Change:
    """The older layout (no shardLengths), with ``key`` set."""

    def change(root: Path, info: dict[str, Any], features: dict[str, Any]) -> None:
        del info["splits"][0]["shardLengths"]
        info["splits"][0][key] = value

    return change


def _info(key: str, value: Any) -> Change:
    def change(root: Path, info: dict[str, Any], features: dict[str, Any]) -> None:
        info[key] = value

    return change


def _feature(name: str, value: Any) -> Change:
    def change(root: Path, info: dict[str, Any], features: dict[str, Any]) -> None:
        features["featuresDict"]["features"][name] = value

    return change


def _label_tensor(key: str, value: Any) -> Change:
    def change(root: Path, info: dict[str, Any], features: dict[str, Any]) -> None:
        features["featuresDict"]["features"]["label"]["tensor"][key] = value

    return change


def _symlinked_shard(root: Path, info: dict[str, Any], features: dict[str, Any]) -> None:
    shard = root / f"tiny-train.tfrecord-00000-of-{SHARDS:05d}"
    shard.unlink()
    shard.symlink_to(root.parent / "outside" / "planted.tfrecord")


COUNTS: dict[str, Change] = {
    "shardLengths negative": _split("shardLengths", ["-1", "5"]),
    "shardLengths not a number": _split("shardLengths", ["abc", "5"]),
    "shardLengths float": _split("shardLengths", [1.5, 5]),
    "shardLengths exponent": _split("shardLengths", ["5e0", "5"]),
    "shardLengths true": _split("shardLengths", [True, 5]),
    "shardLengths a string": _split("shardLengths", "55"),
    "shardLengths null": _split("shardLengths", None),
    "shardLengths nested": _split("shardLengths", [[5], 5]),
    "shardLengths 10**30": _split("shardLengths", [10**30, 5]),
    "shardLengths 2**62": _split("shardLengths", [2**62, 5]),
    "shardLengths more than the bytes frame": _split("shardLengths", [1000, 5]),
    "shardLengths fewer than stored": _split("shardLengths", [4, 5]),
    "shardLengths a million shards": _split("shardLengths", ["1"] * 1_000_000),
    "shardLengths one shard too many": _split("shardLengths", ["5"] * (SHARDS + 1)),
    "numShards 1e8": _counted("numShards", 10**8),
    "numShards as text 1e8": _counted("numShards", "1e8"),
    "numShards negative": _counted("numShards", -1),
    "numShards float": _counted("numShards", 2.5),
    "numShards null": _counted("numShards", None),
    "numShards zero": _counted("numShards", 0),
    "numExamples wrong": _counted("statistics", {"numExamples": 99}),
    "numExamples text": _counted("statistics", {"numExamples": "many"}),
    "statistics a list": _counted("statistics", [1]),
}
TEMPLATES: dict[str, Change] = {
    "dot-dot": _split("filepathTemplate", "../outside/{SHARD_INDEX}"),
    "absolute": _split("filepathTemplate", "/etc/{SHARD_INDEX}"),
    "dot-dot inside": _split("filepathTemplate", "sub/../../outside/x-{SHARD_INDEX}"),
    "backslashes": _split("filepathTemplate", "..\\outside\\{SHARD_INDEX}"),
    "NUL byte": _split("filepathTemplate", "x\x00-{SHARD_INDEX}"),
    "fullwidth dots": _split("filepathTemplate", "\uff0e\uff0e/outside/{SHARD_INDEX}"),
    "a number": _split("filepathTemplate", 5),
    "dataset name dot-dot": _info("name", "../outside/tiny"),
    "dataset name absolute": _info("name", "/tmp/tiny"),
    "split name dot-dot": _split("name", "../../outside"),
    "symlinked shard out": _symlinked_shard,
}
TYPES: dict[str, Change] = {
    "splits an object": _info("splits", {"train": {}}),
    "splits null": _info("splits", None),
    "split a number": _info("splits", [5]),
    "split without a name": _info("splits", [{"shardLengths": ["5", "5"]}]),
    "split name a list": _split("name", ["train"]),
    "split listed twice": lambda root, info, features: info["splits"].append(
        copy.deepcopy(info["splits"][0])
    ),
    "name a list": _info("name", ["tiny"]),
    "version a number": _info("version", 1),
    "fileFormat a number": _info("fileFormat", 5),
    "featuresDict a list": lambda root, info, features: features.update(featuresDict=[]),
    "features a list": lambda root, info, features: features["featuresDict"].update(features=[]),
    "feature a string": _feature("label", "x"),
    "feature null": _feature("label", None),
    "class name a number": lambda root, info, features: features["featuresDict"]["features"]["label"].update(
        pythonClassName=5
    ),
    "tensor dtype a number": _label_tensor("dtype", 5),
    "tensor a list": _feature("label", {"pythonClassName": _CLASS + "Tensor", "tensor": []}),
    "dimensions text": _label_tensor("shape", {"dimensions": ["x"]}),
    "dimensions a number": _label_tensor("shape", {"dimensions": 3}),
    "dimensions below -1": _label_tensor("shape", {"dimensions": [-5]}),
    "dimensions huge": _label_tensor("shape", {"dimensions": [10**12, 10**12]}),
    "shape a string": _label_tensor("shape", "3"),
    "numClasses text": _feature(
        "label", {"pythonClassName": "ClassLabel", "classLabel": {"numClasses": "x"}}
    ),
    "numClasses 10**18 in a Sequence": _feature(
        "objects",
        {
            "pythonClassName": "Sequence",
            "sequence": {
                "feature": {
                    "pythonClassName": "FeaturesDict",
                    "featuresDict": {
                        "features": {
                            "bbox": {"pythonClassName": "BBoxFeature"},
                            "label": {"pythonClassName": "ClassLabel", "classLabel": {"numClasses": 10**18}},
                        }
                    },
                }
            },
        },
    ),
    "sequence a number": _feature("label", {"pythonClassName": "Sequence", "sequence": 5}),
    "sequence feature a list": _feature(
        "label", {"pythonClassName": "Sequence", "sequence": {"feature": []}}
    ),
    "image dtype a list": _feature("photo", {"pythonClassName": "Image", "image": {"dtype": ["uint8"]}}),
    "audio sampleRate text": _feature(
        "sound", {"pythonClassName": "Audio", "audio": {"sampleRate": "fast", "shape": {"dimensions": [-1]}}}
    ),
}


def _same_field_twice(root: Path, info: dict[str, Any], features: dict[str, Any]) -> None:
    """``a.b`` and ``a`` holding ``b``: both map onto the field ``a.b``."""
    text = FEATURES["featuresDict"]["features"]["caption"]
    features["featuresDict"]["features"]["a.b"] = text
    nested = {"features": {"b": text}}
    features["featuresDict"]["features"]["a"] = {"pythonClassName": "FeaturesDict", "featuresDict": nested}


NAMES: dict[str, Change] = {
    "space and bang": _feature("bad name!", FEATURES["featuresDict"]["features"]["caption"]),
    "empty": _feature("", FEATURES["featuresDict"]["features"]["caption"]),
    "slash": _feature("a/b", FEATURES["featuresDict"]["features"]["caption"]),
    "dot-dot": _feature("..", FEATURES["featuresDict"]["features"]["caption"]),
    "leading digit": _feature("1st", FEATURES["featuresDict"]["features"]["caption"]),
    "unicode": _feature("caption\u00e9", FEATURES["featuresDict"]["features"]["caption"]),
    "same field twice": _same_field_twice,
}


def _raw(file: str, payload: bytes) -> Change:
    def change(root: Path, info: dict[str, Any], features: dict[str, Any]) -> tuple[str, bytes]:
        return file, payload

    return change


def _deep(file: str, depth: int) -> Change:
    return _raw(file, ('{"a": ' + "[" * depth + "]" * depth + "}").encode())


def _encodings() -> dict[str, Change]:
    rng = random.Random(2851)
    cases: dict[str, Change] = {}
    for file in ("dataset_info.json", "features.json"):
        short = file.split(".")[0]
        text = json.dumps(INFO if file == "dataset_info.json" else FEATURES)
        cases.update(
            {
                f"{short} random bytes {i}": _raw(file, bytes(rng.randrange(256) for _ in range(300)))
                for i in range(2)
            }
        )
        cases.update(
            {
                f"{short} utf-16": _raw(file, text.encode("utf-16")),
                f"{short} latin-1": _raw(file, text.replace("on", "\xf3n", 1).encode("latin-1")),
                f"{short} empty": _raw(file, b""),
                f"{short} a list": _raw(file, b"[1, 2]"),
                f"{short} huge number": _raw(file, b"1" * 5000),
                f"{short} truncated": _raw(file, text.encode()[: len(text) // 2]),
                **{f"{short} nested {d}": _deep(file, d) for d in (65, 5000, 100_000)},
            }
        )
    return cases


FAMILIES = {
    "hostile TFDS: counts": COUNTS,
    "hostile TFDS: templates": TEMPLATES,
    "hostile TFDS: types": TYPES,
    "hostile TFDS: feature names": NAMES,
    "hostile TFDS: encodings": _encodings(),
}
CASES = [(family, name) for family, cases in FAMILIES.items() for name in cases]
#: A case whose folder still reads: a feature of unknown class is left out (and listed
#: in TfdsDataset.skipped), so the records read without their label.
HARMLESS = {"class name a number"}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``tiny/``: the TFDS-style folder; ``outside/planted.tfrecord``: a shard of
    records with label OUTSIDE_LABEL that no reader may read."""
    base = tmp_path_factory.mktemp("tfds")
    records = [{"caption": f"caption {i}", "label": i} for i in range(SHARDS * PER_SHARD)]
    rk.write_dataset(records, SCHEMA, base / "written", shard_records=PER_SHARD, progress=False)
    root = base / "tiny"
    root.mkdir()
    for i in range(SHARDS):
        shutil.copy(
            base / "written" / f"train-{i:05d}.tfrecord",
            root / f"tiny-train.tfrecord-{i:05d}-of-{SHARDS:05d}",
        )
    (root / "dataset_info.json").write_text(json.dumps(INFO))
    (root / "features.json").write_text(json.dumps(FEATURES))
    planted = [{"caption": "outside", "label": OUTSIDE_LABEL}] * PER_SHARD
    rk.write_dataset(planted, SCHEMA, base / "planted", progress=False)
    (base / "outside").mkdir()
    shutil.copy(base / "planted" / "train-00000.tfrecord", base / "outside" / "planted.tfrecord")
    return base


def _hostile_copy(pristine: Path, tmp_path: Path, change: Change) -> Path:
    shutil.copytree(pristine / "outside", tmp_path / "outside")
    root = tmp_path / "tiny"
    shutil.copytree(pristine / "tiny", root)
    info, features = copy.deepcopy(INFO), copy.deepcopy(FEATURES)
    raw = change(root, info, features)
    (root / "dataset_info.json").write_text(json.dumps(info))
    (root / "features.json").write_text(json.dumps(features))
    if raw is not None:
        (root / raw[0]).write_bytes(raw[1])
    return root


def _labels(root: Path) -> list[int] | rk.errors.RecordkitError:
    """The labels the split reads, in order, or the recordkit error reading it raised."""
    try:
        return [int(r["label"]) for r in rk.iter_records(root, "train")]
    except rk.errors.RecordkitError as exc:
        return exc


def _assert_one_error_line(result: Any, what: str) -> None:
    assert result.exit_code != 0, f"{what}: exited 0:\n{result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.output.splitlines()[-1].startswith("Error: "), result.output


def test_the_pristine_folder_reads_as_tfds_wrote_it(pristine: Path) -> None:
    assert _labels(pristine / "tiny") == list(range(SHARDS * PER_SHARD))
    result = CliRunner().invoke(main, ["verify", str(pristine / "tiny")])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("family", "name"), CASES, ids=[f"{f.split(': ')[1]}-{n}" for f, n in CASES])
def test_a_hostile_tfds_folder_is_refused_naming_the_file_or_read_as_the_dataset(
    pristine: Path, tmp_path: Path, family: str, name: str, fault_cases: Any
) -> None:
    fault_cases.tried(family)
    root = _hostile_copy(pristine, tmp_path, FAMILIES[family][name])
    if name in HARMLESS:
        assert list(rk.iter_records(root)) == [{"caption": f"caption {i}"} for i in range(10)]
        assert rk.open_tfds(root).skipped == (
            "label: ? left out (no recordkit codec reads this TFDS feature)",
        )
        return
    got = _labels(root)
    assert isinstance(got, rk.errors.RecordkitError), f"{name}: read {got}"
    # The error names the JSON file (and its key), or the shard whose records disagree.
    assert any(part in str(got) for part in ("dataset_info.json", "features.json", "shard tiny-")), got
    _assert_one_error_line(CliRunner().invoke(main, ["verify", str(root)]), f"verify, {name}")
    # inspect summarises without counting records: it may pass where only a count is
    # wrong, but it never fails with a traceback.
    inspected = CliRunner().invoke(main, ["inspect", str(root)])
    if inspected.exit_code != 0:
        _assert_one_error_line(inspected, f"inspect, {name}")


@pytest.mark.parametrize(
    "change",
    [_counted("numShards", 10**8), _split("shardLengths", [str(2**62)] * SHARDS)],
    ids=["numShards 1e8", "shardLengths 2**62"],
)
def test_a_huge_declared_shard_count_costs_no_more_than_the_folder_s_bytes(
    pristine: Path, tmp_path: Path, change: Change, fault_cases: Any
) -> None:
    fault_cases.tried("hostile TFDS: huge declared sizes")
    root = _hostile_copy(pristine, tmp_path, change)
    on_disk = sum(p.stat().st_size for p in root.iterdir())
    tracemalloc.start()
    try:
        with pytest.raises(rk.errors.DatasetError, match=r"dataset_info\.json"):
            rk.open_tfds(root)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < (1 << 20) + 4 * on_disk, f"{peak} bytes allocated for a folder of {on_disk}"


def test_recordkit_index_on_a_hostile_tfds_folder_fails_in_one_line(pristine: Path, tmp_path: Path) -> None:
    root = _hostile_copy(pristine, tmp_path, _counted("numShards", 10**8))
    _assert_one_error_line(CliRunner().invoke(main, ["index", str(root)]), "index")


def test_recordkit_index_gives_a_tfds_folder_sidecars_and_a_stale_one_fails_random_access(
    pristine: Path, tmp_path: Path, fault_cases: Any
) -> None:
    fault_cases.tried("hostile TFDS: stale sidecars")
    root = _hostile_copy(pristine, tmp_path, lambda root, info, features: None)
    result = CliRunner().invoke(main, ["index", str(root)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in root.glob("*.index")) == [
        f"tiny-train.tfrecord-{i:05d}-of-{SHARDS:05d}.index" for i in range(SHARDS)
    ]
    assert [int(r["label"]) for r in rk.RandomAccess(root)] == list(range(SHARDS * PER_SHARD))
    shard = root / f"tiny-train.tfrecord-00001-of-{SHARDS:05d}"
    shard.write_bytes(shard.read_bytes() * 2)  # five more records, after the index was built
    reader = rk.RandomAccess(root)  # indexes load per shard, on a shard's first read
    assert int(reader[0]["label"]) == 0
    with pytest.raises(rk.errors.DatasetError, match="does not match the shard") as caught:
        reader[PER_SHARD]
    assert f"`recordkit index {shard}`" in str(caught.value)
    # Rebuilt, the sidecar matches the shard, and dataset_info.json's count is what disagrees.
    _assert_one_error_line(CliRunner().invoke(main, ["index", str(root)]), "index of a grown shard")
