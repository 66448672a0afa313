"""Tests of the pose_folder source: found through its entry point, its records and
proposed schema, ``recordkit ingest pose_folder`` end to end, and its bad inputs."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result
from PIL import Image

import recordkit as rk
from recordkit import sources
from recordkit.cli import main
from recordkit_keypoints import PoseFolderSource

rng = np.random.default_rng(11)


def _photo(width: int, height: int, fmt: str) -> bytes:
    pixels = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt)
    return out.getvalue()


def _points(k: int, width: int, height: int) -> list[list[float]]:
    xy = rng.uniform(0, 1, size=(k, 2)) * [width, height]
    flags = rng.integers(0, 3, size=(k, 1))
    return np.round(np.concatenate([xy, flags], axis=1), 2).tolist()


def pose_folder(tmp_path: Path) -> Path:
    """A folder of two poses in two class folders (a JPEG, a PNG) and a stray note."""
    root = tmp_path / "poses"
    for name, (width, height), fmt in [
        ("run/0002.png", (40, 30), "PNG"),
        ("walk/0001.jpg", (32, 48), "JPEG"),
    ]:
        image = root / name
        image.parent.mkdir(parents=True, exist_ok=True)
        image.write_bytes(_photo(width, height, fmt))
        points = {"keypoints": _points(4, width, height)}
        image.with_suffix(".json").write_text(json.dumps(points, indent=1), encoding="utf-8")
    (root / "walk" / "notes.txt").write_text("taken at dawn\n", encoding="utf-8")
    return root


def keypoints_of(root: Path, name: str) -> np.ndarray:
    return np.array(json.loads((root / name).with_suffix(".json").read_text())["keypoints"])


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


# -- found through the entry point alone -------------------------------------------------


# --8<-- [start:entry_point]
def test_registered_through_its_entry_point() -> None:
    registry = sources.default_sources(rk.load_plugins())
    info = registry.info("pose_folder")
    assert info.factory is PoseFolderSource
    assert (info.plugin, info.distribution, info.distribution_version) == (
        "poses",
        "recordkit-keypoints",
        importlib.metadata.version("recordkit-keypoints"),
    )
    assert info.summary == "Images with a JSON file of keypoints beside each: image, keypoints and file name."
# --8<-- [end:entry_point]


def test_blocking_the_distribution_removes_the_source() -> None:
    plugins = rk.load_plugins(block=["recordkit-keypoints"])
    kinds = sources.default_sources(plugins).kinds()
    assert "pose_folder" not in kinds
    assert "coco" in kinds


def test_recordkit_plugins_lists_it_with_its_distribution() -> None:
    report = json.loads(run("plugins", "--json").output)
    (found,) = [s for s in report["sources"] if s["source"] == "pose_folder"]
    assert (found["plugin"], found["distribution"]) == ("poses", "recordkit-keypoints")
    (plugin,) = [p for p in report["plugins"] if p["plugin"] == "poses"]
    assert (plugin["codecs"], plugin["sources"]) == ([], ["pose_folder"])


# -- records and schema ------------------------------------------------------------------


def test_each_image_with_its_keypoints_file_is_a_record(tmp_path: Path) -> None:
    root = pose_folder(tmp_path)
    source = sources.default_sources().create("pose_folder", root)
    items = list(source.items())
    assert [item.key for item in items] == ["run/0002.png", "walk/0001.jpg"]
    for item in items:
        assert item.record["image"] == root / item.key
        assert item.record["file"] == item.key
        np.testing.assert_array_equal(item.record["keypoints"], keypoints_of(root, item.key))
    assert [(Path(s.file).name, s.reason) for s in source.skipped] == [
        ("notes.txt", "not an image or a keypoints file")
    ]
    schema = source.schema()
    assert schema.name == "poses"
    assert schema.fields["keypoints"].codec == "keypoints"
    assert schema.fields["keypoints"].options == {"visibility": True}
    assert schema.fields["image"].options == {"format": "keep"}


def test_names_fix_the_count_and_visibility_false_reads_pairs(tmp_path: Path) -> None:
    root = tmp_path / "faces"
    root.mkdir()
    (root / "a.png").write_bytes(_photo(8, 8, "PNG"))
    (root / "a.json").write_text('{"keypoints": [[1, 2], [3.5, 4]]}')
    source = PoseFolderSource(root, names=["left_eye", "right_eye"], visibility=False)
    (record,) = list(source)
    np.testing.assert_array_equal(record["keypoints"], [[1, 2], [3.5, 4]])
    options = source.schema().fields["keypoints"].options
    assert options == {"visibility": False, "names": ["left_eye", "right_eye"]}
    with pytest.raises(rk.errors.InputError, match="holds 2 keypoints, but 3 names are given"):
        list(PoseFolderSource(root, names=["a", "b", "c"], visibility=False))


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"names": "nose"}, "names must be a list"),
        ({"visibility": "yes"}, "visibility must be true or false"),
    ],
)
def test_options_of_the_wrong_type_are_refused_naming_them(tmp_path: Path, options: dict, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        PoseFolderSource(tmp_path, **options)


# -- recordkit ingest, end to end ----------------------------------------------------------


def test_ingest_writes_the_folder_and_the_keypoints_read_back(tmp_path: Path) -> None:
    root = pose_folder(tmp_path)
    out = tmp_path / "out"
    result = run("ingest", "pose_folder", root, out, "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert "ingested 2 records" in result.output
    schema = rk.Schema.load(out / "schema.yaml")
    assert schema == rk.Manifest.load(out).schema
    assert rk.Manifest.load(out).codecs["keypoints"].distribution == "recordkit-keypoints"
    records = list(rk.iter_records(out))
    assert [r["file"] for r in records] == ["run/0002.png", "walk/0001.jpg"]
    for record in records:
        expected = keypoints_of(root, record["file"]).astype(np.float32)
        np.testing.assert_array_equal(record["keypoints"], expected)
        with Image.open(root / record["file"]) as image:
            assert record["image"].shape == (image.height, image.width, 3)
    png = np.asarray(Image.open(root / "run/0002.png").convert("RGB"))
    np.testing.assert_array_equal(records[0]["image"], png)  # lossless: the file's own pixels


def test_ingest_passes_the_sources_options(tmp_path: Path) -> None:
    root = tmp_path / "faces"
    root.mkdir()
    (root / "a.png").write_bytes(_photo(8, 8, "PNG"))
    (root / "a.json").write_text('{"keypoints": [[1, 2], [3, 4]]}')
    out = tmp_path / "out"
    result = run("ingest", "pose_folder", root, out, "--opt", "visibility=false", "--opt", "names=[l, r]")
    assert result.exit_code == 0, result.output
    (record,) = rk.iter_records(out)
    np.testing.assert_array_equal(record["keypoints"], [[1, 2], [3, 4]])
    assert rk.Manifest.load(out).schema.fields["keypoints"].options["names"] == ["l", "r"]
    bad = CliRunner().invoke(
        main, ["ingest", "pose_folder", str(root), str(tmp_path / "o2"), "--opt", "names=l"]
    )
    assert bad.exit_code == 2
    assert "source 'pose_folder': names must be a list of keypoint names, not 'l'" in bad.output


def test_ingest_stops_at_a_bad_keypoints_file_naming_it(tmp_path: Path) -> None:
    root = pose_folder(tmp_path)
    (root / "walk" / "0001.json").write_text('{"keypoints": [[1, 2, 2], [3, 4, 7]]}')
    result = CliRunner().invoke(main, ["ingest", "pose_folder", str(root), str(tmp_path / "out")])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert result.output.startswith("Error: InputError: file ")
    assert "walk/0001.json, keypoint 1, field 'keypoints': has the visibility flag 7" in result.output
    assert not (tmp_path / "out" / "dataset.json").exists()


# -- bad inputs ----------------------------------------------------------------------------

BAD_FILES = [
    ("{not json", r"is not JSON: Expecting property name .*", 1),
    ('{"points": []}', 'must be an object with a "keypoints" list', None),
    ("[[1, 2, 2]]", 'must be an object with a "keypoints" list', None),
    (
        '{"keypoints": [[1, 2]]}',
        r"keypoint 0, field 'keypoints': must be a list of 3 numbers \(x, y, visibility\)",
        None,
    ),
    ('{"keypoints": [[1, "2", 2]]}', "must hold numbers, not '2'", None),
    ('{"keypoints": [[1, true, 2]]}', "must hold numbers, not True", None),
    ('{"keypoints": [[1, NaN, 2]]}', "holds nan, not a finite coordinate", None),
    ('{"keypoints": [[1, 1e999, 2]]}', "holds inf, not a finite coordinate", None),
    ('{"keypoints": [[1, ' + "9" * 400 + ", 2]]}", "holds 99999.*, not a finite coordinate", None),
    ('{"keypoints": [[0, 0, 2], [1, 2, 1.5]]}', "keypoint 1, .*visibility flag 1.5", None),
    ("[" * 100_000 + "]" * 100_000, "is not UTF-8 JSON of a sane depth", None),
]


@pytest.mark.parametrize(("text", "match", "line"), BAD_FILES, ids=[m for _, m, _ in BAD_FILES])
def test_a_bad_keypoints_file_is_named_and_skipped_alone(
    tmp_path: Path, text: str, match: str, line: int | None
) -> None:
    root = pose_folder(tmp_path)
    bad = root / "walk" / "0001.json"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(rk.errors.InputError, match=match) as caught:
        list(PoseFolderSource(root))
    assert caught.value.context.file == str(bad)
    assert caught.value.context.line == line
    skipping = PoseFolderSource(root, on_error="skip")
    assert [r["file"] for r in skipping] == ["run/0002.png"]
    assert [Path(s.file).name for s in skipping.skipped] == ["0001.json", "notes.txt"]


def test_an_image_without_keypoints_and_keypoints_without_an_image(tmp_path: Path) -> None:
    root = pose_folder(tmp_path)
    (root / "walk" / "0001.json").rename(root / "walk" / "0003.json")
    skipping = PoseFolderSource(root, on_error="skip")
    assert [r["file"] for r in skipping] == ["run/0002.png"]
    assert [str(s) for s in skipping.skipped] == [
        f"{root / 'walk' / '0001.jpg'}: no keypoints file 'walk/0001.json' beside it",
        f"{root / 'walk' / '0003.json'}: a keypoints file with no image beside it",
        f"{root / 'walk' / 'notes.txt'}: not an image or a keypoints file",
    ]


def test_a_keypoints_file_too_big_is_refused_before_it_is_read(tmp_path: Path) -> None:
    root = pose_folder(tmp_path)
    big = root / "walk" / "0001.json"
    with big.open("r+b") as file:
        file.truncate(2 << 20)  # a sparse file: its size on disk says nothing of what it holds
    with pytest.raises(rk.errors.InputError, match=r"is 2097152 bytes, more than a keypoints file may be"):
        list(PoseFolderSource(root))


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_symlink_out_of_the_root_is_refused_unless_allowed(tmp_path: Path) -> None:
    root = pose_folder(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text('{"keypoints": [[1, 1, 2], [2, 2, 2], [3, 3, 2], [4, 4, 2]]}')
    target = root / "walk" / "0001.json"
    target.unlink()
    target.symlink_to(outside / "secret.json")
    with pytest.raises(
        rk.errors.InputError, match=r"resolves to .*secret.json, outside .*\(through a symlink\)"
    ):
        list(PoseFolderSource(root))
    allowed = list(PoseFolderSource(root, allow_outside_root=True))
    np.testing.assert_array_equal(allowed[1]["keypoints"][:, 0], [1, 2, 3, 4])
