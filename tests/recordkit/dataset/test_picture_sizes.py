"""The writer records the range of each picture field's heights and widths per split in
``dataset.json`` (format 6); manifests stating impossible sizes are refused, and
datasets written before (no sizes) open as ever."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _photos import jpeg, photo

import recordkit as rk
from recordkit.dataset._shards import split_picture_sizes
from recordkit.errors import ManifestError

PHOTO = rk.Schema(name="photos", fields={"photo": rk.FieldSpec(codec="image", options={"format": "keep"})})
SIDES = [(40, 60), (90, 30), (64, 64), (33, 120)]


def _pictures(sides: list[tuple[int, int]], seed: int = 0) -> list[dict[str, bytes]]:
    return [{"photo": jpeg(photo(h, w, seed + i), "4:2:0")} for i, (h, w) in enumerate(sides)]


def _manifest(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "dataset.json").read_text())
    return data


@pytest.mark.parametrize("workers", [1, 2])
def test_the_writer_records_each_splits_smallest_and_largest_picture_sides(
    tmp_path: Path, workers: int
) -> None:
    rk.write_dataset(_pictures(SIDES * 3), PHOTO, tmp_path, shard_records=2, workers=workers, progress=False)
    data = _manifest(tmp_path)
    assert data["format"] == "recordkit.dataset/6"
    assert data["splits"]["train"]["picture_sizes"] == {
        "photo": {
            "min_height": 33,
            "max_height": 90,
            "min_width": 30,
            "max_width": 120,
            "full_size_only": False,
        }
    }


def test_a_png_among_jpegs_is_recorded_as_decoding_at_full_size_only(tmp_path: Path) -> None:
    records = _pictures(SIDES[:2])
    records.append({"photo": photo(50, 50, 9)})  # an array: stored as PNG by format keep
    rk.write_dataset(records, PHOTO, tmp_path, progress=False)
    assert _manifest(tmp_path)["splits"]["train"]["picture_sizes"]["photo"]["full_size_only"] is True


def test_an_append_widens_the_sizes_and_a_split_written_without_them_never_gets_them(tmp_path: Path) -> None:
    rk.write_dataset(_pictures(SIDES[:2]), PHOTO, tmp_path, progress=False)
    rk.write_dataset(_pictures([(200, 33)]), PHOTO, tmp_path, append=True, progress=False)
    sizes = _manifest(tmp_path)["splits"]["train"]["picture_sizes"]["photo"]
    assert (sizes["min_height"], sizes["max_height"], sizes["min_width"], sizes["max_width"]) == (
        40,
        200,
        30,
        60,
    )
    # As a dataset of an older recordkit: no sizes; an append must not claim them for all.
    data = _manifest(tmp_path)
    del data["splits"]["train"]["picture_sizes"]
    data["format"] = "recordkit.dataset/2"
    (tmp_path / "dataset.json").write_text(json.dumps(data))
    rk.write_dataset(_pictures([(40, 40)]), PHOTO, tmp_path, append=True, progress=False)
    data = _manifest(tmp_path)
    assert "picture_sizes" not in data["splits"]["train"]
    assert data["format"] == "recordkit.dataset/2"
    assert len(list(rk.iter_records(tmp_path))) == 4


def test_a_split_expression_reads_the_sizes_every_split_it_names_records(tmp_path: Path) -> None:
    rk.write_dataset(_pictures(SIDES[:2]), PHOTO, tmp_path, progress=False)
    rk.write_dataset(_pictures([(300, 34)]), PHOTO, tmp_path, split="test", append=True, progress=False)
    manifest = rk.Manifest.load(tmp_path)
    both = split_picture_sizes(manifest, "train+test[:1]")["photo"]
    assert (both.min_height, both.max_height, both.min_width, both.max_width) == (40, 300, 30, 60)
    data = _manifest(tmp_path)
    del data["splits"]["test"]["picture_sizes"]
    (tmp_path / "dataset.json").write_text(json.dumps(data))
    assert split_picture_sizes(rk.Manifest.load(tmp_path), "train+test") == {}


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        (
            {"min_height": 900, "max_height": 800, "min_width": 10, "max_width": 20},
            "smallest side exceeds the largest",
        ),
        (
            {"min_height": 0, "max_height": 800, "min_width": 10, "max_width": 20},
            "greater than or equal to 1",
        ),
        ({"min_height": 1, "max_height": 1 << 40, "min_width": 10, "max_width": 20}, "less than or equal to"),
        ({"min_height": "1", "max_height": 8, "min_width": 10, "max_width": 20}, "valid integer"),
        ({"min_height": 1, "max_height": 8, "min_width": 10}, "max_width"),
        ({"min_height": 1, "max_height": 8, "min_width": 1, "max_width": 8, "scale": 8}, "scale"),
        ([1, 8, 1, 8], "valid dictionary"),
    ],
)
def test_a_manifest_stating_impossible_picture_sizes_is_refused(
    tmp_path: Path, sizes: Any, message: str
) -> None:
    rk.write_dataset(_pictures(SIDES[:1]), PHOTO, tmp_path, progress=False)
    data = _manifest(tmp_path)
    data["splits"]["train"]["picture_sizes"] = {"photo": sizes}
    (tmp_path / "dataset.json").write_text(json.dumps(data))
    with pytest.raises(ManifestError, match=message) as raised:
        rk.open(tmp_path)
    assert "dataset.json" in str(raised.value)


def test_picture_sizes_in_a_format_older_than_6_are_refused(tmp_path: Path) -> None:
    rk.write_dataset(_pictures(SIDES[:1]), PHOTO, tmp_path, progress=False)
    data = _manifest(tmp_path)
    data["format"] = "recordkit.dataset/5"
    (tmp_path / "dataset.json").write_text(json.dumps(data))
    with pytest.raises(ManifestError, match=r"format 'recordkit.dataset/5' cannot hold picture sizes"):
        rk.open(tmp_path)
