"""``recordkit verify`` (sdk/recordkit/_cli/verify.py), on a real small dataset that the
tests damage in the ways disks and copies do."""

from __future__ import annotations

from pathlib import Path

import pytest
from _cli_dataset import SCHEMA_YAML, records
from click.testing import CliRunner, Result

import recordkit as rk
from recordkit.cli import main


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["verify", *args])


def shard_files(root: Path, split: str = "train") -> list[str]:
    return [s.file for s in rk.Manifest.load(root).splits[split].shards]


def status_lines(output: str) -> dict[str, str]:
    """Each shard's line by shard file name: "ok" or "FAIL" and the rest."""
    lines = {}
    for line in output.splitlines():
        status, _, rest = line.partition("  ")
        if status.strip() in ("ok", "FAIL"):
            name, _, detail = rest.strip().partition("  ")
            lines[name] = f"{status.strip()} {detail.strip()}"
    return lines


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_an_intact_dataset_verifies(dataset: Path) -> None:
    result = run(str(dataset))
    assert result.exit_code == 0, result.output
    lines = status_lines(result.output)
    manifest = rk.Manifest.load(dataset)
    expected = {s.file: s.records for split in manifest.splits.values() for s in split.shards}
    assert {name: line.split()[:2] for name, line in lines.items()} == {
        name: ["ok", str(count)] for name, count in expected.items()
    }
    last = result.output.splitlines()[-1]
    assert last.startswith("verified 4 shards of 2 splits: 15 records, ")
    assert last.endswith(", all match the manifest")


def test_a_flipped_byte_fails_sha256_and_crc_naming_the_shard(dataset: Path) -> None:
    bad = shard_files(dataset)[1]
    flip_byte(dataset / bad, 40)  # inside the first record's data
    result = run(str(dataset))
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    lines = status_lines(result.output)
    assert lines[bad].startswith("FAIL sha256 ")
    assert "differs from the manifest's" in lines[bad]
    assert "record 0 (offset 0): data CRC mismatch (corrupt record)" in lines[bad]
    assert all(line.startswith("ok ") for name, line in lines.items() if name != bad)
    assert result.output.splitlines()[-1] == f"Error: shards that do not match the manifest (1 of 4): {bad}"


def test_a_truncated_shard(dataset: Path) -> None:
    bad = shard_files(dataset)[0]
    data = (dataset / bad).read_bytes()
    (dataset / bad).write_bytes(data[:-10])
    result = run(str(dataset))
    assert result.exit_code == 1
    detail = status_lines(result.output)[bad]
    assert f"the file has {len(data) - 10} bytes, the manifest says {len(data)}" in detail
    assert "truncated record" in detail


def test_a_missing_shard(dataset: Path) -> None:
    bad = shard_files(dataset, "test")[0]
    (dataset / bad).unlink()
    result = run(str(dataset))
    assert result.exit_code == 1
    assert status_lines(result.output)[bad] == "FAIL listed in the manifest but missing on disk"
    assert result.output.splitlines()[-1].endswith(f"(1 of 4): {bad}")


def test_a_record_count_that_disagrees(dataset: Path) -> None:
    manifest = rk.Manifest.load(dataset)
    shard = manifest.splits["train"].shards[2]
    shard.records += 1
    manifest.save(dataset)
    result = run(str(dataset))
    assert result.exit_code == 1
    assert (
        status_lines(result.output)[shard.file]
        == f"FAIL holds {shard.records - 1} records, the manifest says {shard.records}"
    )


def test_a_sha256_that_disagrees_with_intact_records(dataset: Path) -> None:
    manifest = rk.Manifest.load(dataset)
    shard = manifest.splits["train"].shards[0]
    recorded = shard.sha256
    shard.sha256 = "0" * 64
    manifest.save(dataset)
    result = run(str(dataset))
    assert result.exit_code == 1
    assert (
        status_lines(result.output)[shard.file]
        == f"FAIL sha256 {recorded} differs from the manifest's {'0' * 64}"
    )


def test_every_bad_shard_is_named(dataset: Path) -> None:
    first, _, third = shard_files(dataset)
    flip_byte(dataset / first, 30)
    (dataset / third).unlink()
    result = run(str(dataset), "--quiet")
    assert result.exit_code == 1
    assert set(status_lines(result.output)) == {first, third}  # --quiet: failures only
    assert (
        result.output.splitlines()[-1]
        == f"Error: shards that do not match the manifest (2 of 4): {first}, {third}"
    )


def test_split_option(dataset: Path) -> None:
    flip_byte(dataset / shard_files(dataset)[0], 30)
    result = run(str(dataset), "--split", "test")
    assert result.exit_code == 0, result.output
    assert list(status_lines(result.output)) == shard_files(dataset, "test")
    assert "verified 1 shard of 1 split: 3 records" in result.output
    unknown = run(str(dataset), "-s", "nope")
    assert unknown.exit_code == 1
    assert unknown.output == "Error: ManifestError: no split 'nope' (splits: test, train)\n"


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_shards(tmp_path: Path, compression: str) -> None:
    schema = rk.Schema.loads(SCHEMA_YAML)
    root = tmp_path / "zipped"
    rk.write_dataset(
        records(6, seed=3), schema, root, shard_records=3, compression=compression, progress=False
    )
    assert run(str(root)).exit_code == 0
    bad = shard_files(root)[1]
    data = (dataset_file := root / bad).read_bytes()
    dataset_file.write_bytes(data[: len(data) // 2])
    result = run(str(root))
    assert result.exit_code == 1
    assert status_lines(result.output)[bad].startswith(f"FAIL the file has {len(data) // 2} bytes")


def test_not_a_dataset(tmp_path: Path) -> None:
    result = run(str(tmp_path))
    assert result.exit_code == 1
    assert result.output.startswith("Error: ManifestError:")
    assert len(result.output.splitlines()) == 1


def test_an_unfinished_write_does_not_pass_silently(dataset: Path) -> None:
    """Its complete shards are checked, but the dataset may lack records: status 3, unless
    --allow-unfinished accepts the complete shards (issue 12)."""
    from recordkit.dataset._manifest import (  # private: marks a split unfinished as a killed writer does
        UnfinishedWrite,
    )

    manifest = rk.Manifest.load(dataset)
    manifest.splits["train"].unfinished = UnfinishedWrite(consumed=12, started="2025-01-01T00:00:00+00:00")
    manifest.save(dataset)
    result = run(str(dataset))
    assert result.exit_code == 3, result.output
    assert result.output.startswith(
        "note: split 'train' has an unfinished write; its complete shards are checked\n"
    )
    assert "Traceback" not in result.output
    assert result.output.splitlines()[-1].startswith("Error: unfinished write in split 'train'")
    assert "verified" not in result.output
    allowed = run("--allow-unfinished", str(dataset))
    assert allowed.exit_code == 0, allowed.output
    assert "verified 4 shards of 2 splits" in allowed.output


def test_a_dataset_with_no_shards_yet_does_not_verify(tmp_path: Path) -> None:
    """A write that stopped before its first shard: 0 shards, nothing to check, not ok."""
    writer = rk.DatasetWriter(tmp_path / "d", rk.Schema.loads(SCHEMA_YAML), progress=False)
    writer.write(records(1, seed=0)[0], split="train")
    writer.write(records(1, seed=1)[0], split="test")
    writer.abort()
    result = run(str(tmp_path / "d"))
    assert result.exit_code == 3, result.output
    assert "unfinished write in splits 'train', 'test'" in result.output


@pytest.mark.parametrize("parallel", [["--jobs", "2"], ["--jobs", "2", "--processes"]])
def test_shards_checked_in_parallel_give_the_same_report_in_manifest_order(
    dataset: Path, parallel: list[str]
) -> None:
    bad = shard_files(dataset)[0]
    flip_byte(dataset / bad, 40)
    alone = run(str(dataset))
    together = run(*parallel, str(dataset))
    assert together.exit_code == alone.exit_code == 1
    assert together.output == alone.output
    assert list(status_lines(together.output)) == [
        s.file for split in rk.Manifest.load(dataset).splits.values() for s in split.shards
    ]


def test_the_progress_bar_counts_every_shard(dataset: Path) -> None:
    result = CliRunner().invoke(main, ["verify", "-q", "--progress", str(dataset)])
    assert result.exit_code == 0, result.output
    assert "verify: 100%" in result.output
    assert "4/4" in result.output
