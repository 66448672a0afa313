"""The closing summary of ``recordkit ingest``: its bytes per field measure every record,
or say that they are a sample and of how many."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from PIL import Image

import recordkit as rk
from recordkit._cli import ingest
from recordkit._cli.inspect import field_bytes, sample_records
from recordkit.cli import main
from recordkit.format._tfrecord import FRAMING_BYTES  # private: the bytes TFRecord frames each record with
from recordkit.storage import location


def photos(root: Path, count: int) -> Path:
    """``count`` small JPEGs in two class folders, of varying sizes."""
    for i in range(count):
        folder = root / ("cat" if i % 2 else "dog")
        folder.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (20 + i, 16), (10 * i, 80, 200)).save(folder / f"{i:02d}.jpg")
    return root


def run_ingest(tmp_path: Path, count: int) -> tuple[Result, Path]:
    out = tmp_path / "pets"
    result = CliRunner().invoke(
        main,
        [
            "ingest",
            "image_folder",
            str(photos(tmp_path / "photos", count)),
            str(out),
            "--split-ratio",
            "train=0.7,validation=0.3",
        ],
    )
    assert result.exit_code == 0, result.output
    return result, out


def test_the_summary_measures_every_record_of_splits_of_uneven_shards(tmp_path: Path) -> None:
    result, out = run_ingest(tmp_path, 10)
    manifest = rk.Manifest.load(out)
    sizes = [s.records for info in manifest.splits.values() for s in info.shards]
    assert len(set(sizes)) > 1  # shards of different sizes: what a per-shard share missed

    assert "bytes per field, over all 10 records:" in result.output
    bound = rk.open(out).schema.bind()
    measured = field_bytes(bound, sample_records(location(out), manifest, list(manifest.splits), 10))
    assert measured["records"] == 10
    # Every record's bytes: the shards hold them and each one's TFRecord framing.
    stored = sum(s.bytes for info in manifest.splits.values() for s in info.shards)
    assert measured["bytes"] + 10 * FRAMING_BYTES == stored


def test_past_its_limit_the_summary_says_it_sampled_and_how_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "MEASURED_RECORDS", 3)
    result, _ = run_ingest(tmp_path, 10)
    assert (
        "bytes per field, over a sample of 3 of 10 records (the first records of evenly spread shards):"
        in result.output
    )
    assert "over all" not in result.output
