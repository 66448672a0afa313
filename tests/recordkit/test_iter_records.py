"""recordkit.iter_records: a dataset's records as numpy values, without TensorFlow."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _reader_support import SCHEMA, assert_record, expected, make_records, record_offsets, write

import recordkit as rk
from recordkit.errors import CorruptRecordError, DecodeError, IncompatibleSchemaError, UnknownCodecError

N = 9


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N, seed=1)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("iter") / "data"
    write(path, records, shard_records=5)
    return path


def shards(path: Path) -> list[Path]:
    manifest = json.loads((path / "dataset.json").read_text())
    return [path / s["file"] for s in manifest["splits"]["train"]["shards"]]


def broken_copy(dataset: Path, tmp_path: Path) -> tuple[Path, Path]:
    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    return copy, shards(copy)[0]


def test_every_record_reads_back_equal(dataset: Path, records: list[dict[str, Any]]) -> None:
    got = list(rk.iter_records(dataset))
    assert len(got) == N
    for record, row in zip(records, got, strict=True):
        assert row["note"] is None or isinstance(row["note"], str)
        assert_record(expected(record), row)


def test_only_the_requested_fields_are_decoded(dataset: Path, records: list[dict[str, Any]]) -> None:
    got = list(rk.iter_records(dataset, fields=["note", "label"]))
    assert [set(r) for r in got] == [{"note", "label"}] * N
    assert [r["note"] for r in got] == [r["note"] for r in records]


def test_reading_needs_no_tensorflow(dataset: Path, records: list[dict[str, Any]], tmp_path: Path) -> None:
    """In a process where tensorflow cannot be imported: every field decodes, and a
    flipped bit fails its CRC (recordkit's own framing reader, crc32c from google-crc32c)."""
    copy, shard = broken_copy(dataset, tmp_path)
    offset = record_offsets(shard)[1]
    data = bytearray(shard.read_bytes())
    data[offset + 40] ^= 0x10
    shard.write_bytes(bytes(data))
    script = textwrap.dedent(
        f"""
        import sys
        class NoTensorFlow:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "tensorflow":
                    raise ImportError("tensorflow is blocked")
        sys.meta_path.insert(0, NoTensorFlow())
        import recordkit as rk
        rows = list(rk.iter_records({str(dataset)!r}))
        print(len(rows), rows[0]["image"].shape[2], rows[-1]["caption"])
        try:
            list(rk.iter_records({str(copy)!r}, fields=["label"]))
        except rk.errors.CorruptRecordError as exc:
            print(exc.shard, exc.context.offset, "data CRC mismatch" in str(exc))
        print("tensorflow" in sys.modules, "google_crc32c" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == [
        f"{N} 3 {records[-1]['caption']}",
        f"{shard.name} {offset} True",
        "False True",
    ]


def test_a_flipped_bit_names_the_shard_and_offset(dataset: Path, tmp_path: Path) -> None:
    copy, shard = broken_copy(dataset, tmp_path)
    offsets = record_offsets(shard)
    data = bytearray(shard.read_bytes())
    data[offsets[2] + 20] ^= 0x01  # inside record 2's data
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="data CRC mismatch") as err:
        list(rk.iter_records(copy))
    assert err.value.shard == shard.name
    assert err.value.context.offset == offsets[2]
    # skip: only that record is lost
    report = rk.CorruptionReport()
    got = list(rk.iter_records(copy, fields=["caption"], on_corrupt="skip", report=report))
    assert [r["caption"] for r in got] == [f"record {i} — ünïcode" for i in range(N) if i != 2]
    assert report.records_skipped == 1
    assert [(s.shard, s.offset) for s in report.skipped] == [(shard.name, offsets[2])]
    # without the data CRC check, the flipped bit reaches the decoder or passes unnoticed
    assert len(list(rk.iter_records(copy, fields=["label"], verify=False))) == N


def test_a_damaged_header_is_skipped_by_finding_the_next_intact_record(dataset: Path, tmp_path: Path) -> None:
    copy, shard = broken_copy(dataset, tmp_path)
    offsets = record_offsets(shard)
    data = bytearray(shard.read_bytes())
    data[offsets[1] + 3] ^= 0x40  # record 1's length
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="length CRC") as err:
        list(rk.iter_records(copy))
    assert err.value.context.offset == offsets[1]
    report = rk.CorruptionReport()
    got = list(rk.iter_records(copy, fields=["label"], on_corrupt="skip", report=report))
    assert len(got) == N - 1
    (skip,) = report.skipped
    assert (skip.shard, skip.offset, skip.records) == (shard.name, offsets[1], 1)
    assert f"resumed at offset {offsets[2]}" in skip.reason


def test_a_truncated_shard(dataset: Path, tmp_path: Path) -> None:
    copy, shard = broken_copy(dataset, tmp_path)
    shard.write_bytes(shard.read_bytes()[:-5])
    with pytest.raises(CorruptRecordError, match="the manifest says") as err:
        list(rk.iter_records(copy))
    assert err.value.shard == shard.name
    report = rk.CorruptionReport()
    assert len(list(rk.iter_records(copy, fields=["label"], on_corrupt="skip", report=report))) == N - 1
    assert report.records_skipped == 1
    assert "truncated" in report.skipped[0].reason


def test_a_record_that_does_not_decode(dataset: Path, tmp_path: Path) -> None:
    copy, _ = broken_copy(dataset, tmp_path)
    manifest = rk.Manifest.load(copy)
    # read the PNG images as text: their bytes are not UTF-8, which the text codec refuses
    fields = dict(manifest.schema.fields)
    fields["image"] = rk.FieldSpec(codec="text")
    wrong = manifest.schema.model_copy(update={"fields": fields})
    with pytest.raises(DecodeError) as err:
        list(rk.iter_records(shards(copy), fields=["image"], schema=wrong))
    assert err.value.field == "image"
    assert err.value.shard == shards(copy)[0].name
    assert err.value.record == 0
    report = rk.CorruptionReport()
    assert (
        list(rk.iter_records(shards(copy), fields=["image"], schema=wrong, on_corrupt="skip", report=report))
        == []
    )
    assert report.records_skipped == N


def test_compressed_shards(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    for compression in ("GZIP", "ZLIB"):
        path = tmp_path / compression
        write(path, records[:4], compression=compression)
        got = list(rk.iter_records(path))
        for record, row in zip(records[:4], got, strict=True):
            assert_record(expected(record), row)
        # a truncated compressed shard: what decompresses still reads, the loss is reported
        shard = shards(path)[0]
        shard.write_bytes(shard.read_bytes()[:-40])
        report = rk.CorruptionReport()
        partial = list(rk.iter_records(path, fields=["label"], on_corrupt="skip", report=report))
        assert len(partial) < 4
        assert report.shards == [shard.name]


def test_files_of_a_dataset_read_with_its_schema(dataset: Path) -> None:
    files = shards(dataset)
    rows = list(rk.iter_records(files, fields=["label"], schema=SCHEMA))
    assert len(rows) == N


def test_the_checks_on_read_apply_without_tensorflow_too(dataset: Path) -> None:
    """The reader's schema against the stored one, and a codec that is not installed."""
    fields = dict(SCHEMA.fields)
    fields["label"] = rk.FieldSpec(codec="label", options={"names": ["x", "y"]})
    changed = SCHEMA.model_copy(update={"fields": fields})
    with pytest.raises(IncompatibleSchemaError, match="'label'"):
        next(rk.iter_records(dataset, schema=changed))
    assert len(list(rk.iter_records(dataset, fields=["caption"], schema=changed))) == N
    registry = rk.load_plugins(allow=["text"]).registry
    with pytest.raises(UnknownCodecError, match="pip install recordkit") as err:
        next(rk.iter_records(dataset, fields=["caption", "objects"], registry=registry))
    assert (err.value.field, err.value.context.codec) == ("objects", "bbox")
    assert err.value.context.distribution == "recordkit"
