"""``recordkit inspect`` (sdk/recordkit/_cli/inspect.py), on a real small dataset."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import recordkit as rk
from recordkit._cli.inspect import sample_records
from recordkit.cli import main
from recordkit.codec._plugins import (  # private: resets the process-wide registry; no public reset
    reset_default_registry,
)
from recordkit.format._tfrecord import (  # private: a shard's raw frames, without TensorFlow
    FRAMING_BYTES,
    iter_tfrecords,
)
from recordkit.storage import location


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["inspect", *args])


def run_json(*args: str) -> dict[str, Any]:
    result = run("--json", *args)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


def test_summary_shows_schema_codecs_splits_and_shards(dataset: Path) -> None:
    manifest = rk.Manifest.load(dataset)
    result = run(str(dataset))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "schema       shapes, version 2.1" in lines
    assert f"fingerprint  {manifest.fingerprint}" in lines
    version = importlib.metadata.version("recordkit")
    assert any(line.split() == ["image", "1", "recordkit", version, "image"] for line in lines)
    train = manifest.splits["train"]
    split_rows = {
        line.split()[0]: line.split() for line in lines if line.split()[:1] in (["train"], ["test"])
    }
    assert split_rows["train"][1:3] == [str(len(train.shards)), str(train.num_records)] == ["3", "12"]
    assert split_rows["test"][1:3] == ["1", "3"]
    assert any(line.split()[:3] == ["total", "4", "15"] for line in lines)


def test_json_summary_is_the_manifest(dataset: Path) -> None:
    manifest = rk.Manifest.load(dataset)
    report = run_json(str(dataset / "dataset.json"))  # the manifest file works too
    assert report["schema"] == {
        "name": "shapes",
        "version": "2.1",
        "fingerprint": manifest.fingerprint,
        "fields": {"image": "image", "label": "label", "caption": "text"},
    }
    assert report["codecs"]["text"]["distribution"] == "recordkit"
    assert report["compression"] == "none"
    for name, split in manifest.splits.items():
        assert report["splits"][name] == {
            "shards": len(split.shards),
            "records": split.num_records,
            "bytes": split.num_bytes,
            "rejected": 0,
            "unfinished": False,
        }


def test_breakdown_of_every_record_accounts_for_every_byte(dataset: Path) -> None:
    manifest = rk.Manifest.load(dataset)
    records = sum(split.num_records for split in manifest.splits.values())
    breakdown = run_json(str(dataset), "--sample", "1000")["breakdown"]
    assert breakdown["records"] == records
    parts = breakdown["fields"]
    assert list(parts) == ["image", "label", "caption", "(framing)"]
    assert sum(parts.values()) == breakdown["bytes"]
    # Uncompressed shards hold exactly the records plus TFRecord's framing.
    shard_bytes = sum(split.num_bytes for split in manifest.splits.values())
    assert breakdown["bytes"] + FRAMING_BYTES * records == shard_bytes
    # The PNG pixels dominate; the label is one small int per record.
    assert parts["image"] > 10 * parts["label"]
    assert parts["caption"] > 0


def test_breakdown_table(dataset: Path) -> None:
    result = run(str(dataset), "--sample", "5")
    assert result.exit_code == 0, result.output
    text = result.output.split("bytes per field, over a sample of 5 records:\n")[1]
    rows = {line.split()[0]: line.split() for line in text.splitlines()[2:] if line.strip()}
    assert set(rows) >= {"image", "label", "caption", "(framing)", "total"}
    shares = [float(row[-1].rstrip("%")) for name, row in rows.items() if name not in ("total", "(each")]
    assert sum(shares) == pytest.approx(100, abs=0.3)
    assert "16 bytes of TFRecord framing" in result.output


def test_the_sample_is_spread_over_the_shards(dataset: Path) -> None:
    manifest = rk.Manifest.load(dataset)
    shards = manifest.splits["train"].shards
    sample = list(sample_records(location(dataset), manifest, ["train"], len(shards)))
    first_of_each = [next(iter_tfrecords(location(dataset / s.file)))[1] for s in shards]
    assert sample == first_of_each
    assert len(list(sample_records(location(dataset), manifest, ["train", "test"], 2))) == 2
    assert list(sample_records(location(dataset), manifest, ["train"], 0)) == []


def test_split_option_and_sample_zero(dataset: Path) -> None:
    report = run_json(str(dataset), "--split", "test", "--sample", "0")
    assert list(report["splits"]) == ["test"]
    assert report["breakdown"] is None
    result = run(str(dataset), "-s", "test", "--sample", "0")
    assert "bytes per field" not in result.output
    assert "train" not in result.output


def test_unknown_split_is_a_one_line_error(dataset: Path) -> None:
    result = run(str(dataset), "--split", "validation")
    assert result.exit_code == 1
    assert result.output == "Error: ManifestError: no split 'validation' (splits: test, train)\n"


def test_a_folder_without_manifest_is_a_one_line_error(tmp_path: Path) -> None:
    result = run(str(tmp_path))
    assert result.exit_code == 1
    assert result.output.startswith("Error: ManifestError: ")
    assert "no dataset.json: not a recordkit dataset" in result.output
    assert len(result.output.splitlines()) == 1


def test_a_corrupt_sampled_record_names_the_shard(dataset: Path) -> None:
    shard = rk.Manifest.load(dataset).splits["train"].shards[0].file
    data = bytearray((dataset / shard).read_bytes())
    data[20] ^= 0xFF  # inside the first record's data: its CRC fails
    (dataset / shard).write_bytes(bytes(data))
    result = run(str(dataset))
    assert result.exit_code == 1
    assert (
        result.output
        == f"Error: CorruptRecordError: shard {shard}, offset 0: data CRC mismatch (corrupt record)\n"
    )


@pytest.mark.usefixtures("keypoints_plugin")
def test_without_a_codec_the_summary_still_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = rk.Schema(
        name="poses", fields={"pose": rk.FieldSpec(codec="keypoints", options={"num_keypoints": 2})}
    )
    rk.write_dataset([{"pose": [[1.0, 2.0], [3.0, 4.0]]}], schema, tmp_path / "poses", progress=False)
    monkeypatch.setenv("RECORDKIT_BLOCK_PLUGINS", "recordkit-keypoints")
    reset_default_registry()
    try:
        result = run(str(tmp_path / "poses"))
    finally:
        monkeypatch.delenv("RECORDKIT_BLOCK_PLUGINS")
        reset_default_registry()
    assert result.exit_code == 0, result.output
    assert "keypoints  1        recordkit-keypoints" in result.output
    assert (
        "no byte breakdown: field 'pose', codec 'keypoints', distribution 'recordkit-keypoints': "
        "no codec named 'keypoints'"
    ) in result.output
    assert "(pip install recordkit-keypoints) to read this field" in result.output


def test_an_unfinished_write_is_shown(dataset: Path) -> None:
    from recordkit.dataset._manifest import (  # private: marks a split unfinished as a killed writer does
        UnfinishedWrite,
    )

    manifest = rk.Manifest.load(dataset)
    manifest.splits["train"].unfinished = UnfinishedWrite(consumed=12, started="2025-01-01T00:00:00+00:00")
    manifest.save(dataset)
    result = run(str(dataset), "--sample", "0")
    assert any(
        line.split()[:5] == ["train", "(unfinished", "write)", "3", "12"]
        for line in result.output.splitlines()
    )
    assert run_json(str(dataset), "--sample", "0")["splits"]["train"]["unfinished"] is True
