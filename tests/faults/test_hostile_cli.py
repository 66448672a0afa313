"""The CLI against careless and hostile command lines: outputs that overlap the inputs,
ingests and conversions that fail half-way, paths that are missing or of the wrong kind,
refusals the library documents.

Every case checks the exit status, that the error is one ``Error: ...`` line (no
traceback, no click usage block), that no input was changed or deleted, and that a
failed command left nothing behind. Must show: no command exits 0 having lost records or
deleted an input; a failed ingest runs again as it was.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from PIL import Image

import recordkit as rk
from recordkit.cli import main

SCHEMA = rk.Schema.model_validate(
    {
        "name": "tiny",
        "version": "1.0.0",
        "fields": {"caption": {"codec": "text"}, "label": {"codec": "label", "options": {"num_classes": 3}}},
    }
)


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def contents(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones too) by its path, with its sha256."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def one_error_line(result: Result, status: int = 1) -> str:
    """The one line a failed command printed (checked: status, one line, no traceback)."""
    assert result.exit_code == status, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    assert "unexpected" not in result.output
    return lines[0]


def photos(root: Path, seed: int = 0) -> Path:
    """An image folder: two classes of three real PNG files."""
    rng = np.random.default_rng(seed)
    for label in ("cat", "dog"):
        (root / label).mkdir(parents=True)
        for i in range(3):
            pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / label / f"{i}.png")
    return root


def jsonl(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


GOOD_LINES = [json.dumps({"text": f"caption {i}", "label": i % 3}) for i in range(5)]


def tfds_folder(root: Path) -> Path:
    """A folder laid out as TFDS prepares one (dataset_info.json, features.json and a
    TFRecord shard of Examples with a Text and a ClassLabel feature)."""
    written = root.parent / "written"
    rk.write_dataset(
        [{"caption": f"c{i}", "label": i % 3} for i in range(3)], SCHEMA, written, progress=False
    )
    root.mkdir(parents=True)
    shutil.move(written / "train-00000.tfrecord", root / "tiny-train.tfrecord-00000-of-00001")
    shutil.rmtree(written)
    features = {
        "pythonClassName": "tfds.features.FeaturesDict",
        "featuresDict": {
            "features": {
                "caption": {"pythonClassName": "tfds.features.Text"},
                "label": {"pythonClassName": "tfds.features.ClassLabel", "classLabel": {"numClasses": 3}},
            }
        },
    }
    (root / "features.json").write_text(json.dumps(features))
    info = {"name": "tiny", "version": "1.0.0", "splits": [{"name": "train", "shardLengths": ["3"]}]}
    (root / "dataset_info.json").write_text(json.dumps(info))
    return root


# -- outputs that overlap the inputs ----------------------------------------------------------


@pytest.mark.parametrize("overwrite", [False, True])
def test_ingest_never_writes_into_over_or_inside_its_input(
    tmp_path: Path, overwrite: bool, fault_cases: Any
) -> None:
    root = photos(tmp_path / "photos")
    (tmp_path / "outside.txt").write_text("keep me")
    before, around = contents(root), contents(tmp_path)
    flags = ["--overwrite"] if overwrite else []
    for out, how in [
        (root, "it is INPUT"),
        (tmp_path, "it holds INPUT"),
        (root / "ds", "it is inside INPUT"),
    ]:
        line = one_error_line(run("ingest", "image_folder", root, out, *flags))
        assert line.startswith(f"Error: DatasetError: file {out}: the dataset would be written where"), line
        assert how in line, line
        assert contents(root) == before  # no input deleted, nothing written among them
        assert contents(tmp_path) == around
        fault_cases.tried("cli: output overlaps input", 1)
    # An option naming an input (a COCO images_dir) counts as an input too.
    images = root / "cat"
    line = one_error_line(
        run(
            "ingest", "coco", tmp_path / "outside.txt", images.parent, "--opt", f"images_dir={images}", *flags
        )
    )
    assert f"it holds --opt images_dir ({images})" in line, line
    assert contents(tmp_path) == around
    fault_cases.tried("cli: output overlaps input", 1)


def test_ingest_overwrite_through_a_symlink_or_dots_is_refused(tmp_path: Path, fault_cases: Any) -> None:
    root = photos(tmp_path / "photos")
    (tmp_path / "link").symlink_to(root)
    before = contents(root)
    for out in (tmp_path / "link", root / "cat" / ".." / ".."):
        one_error_line(run("ingest", "image_folder", root / "cat" / "..", out, "--overwrite"))
        assert contents(root) == before
        fault_cases.tried("cli: output overlaps input", 1)


def test_convert_never_writes_into_over_or_inside_the_tfds_folder(tmp_path: Path, fault_cases: Any) -> None:
    source = tfds_folder(tmp_path / "tfds" / "tiny" / "1.0.0")
    before = contents(tmp_path)
    for out, how in [(source, "it is"), (source / "native", "it is inside"), (tmp_path / "tfds", "it holds")]:
        line = one_error_line(run("convert", source, out))
        assert f"{how} the TFDS folder ({source})" in line, line
        assert contents(tmp_path) == before  # no dataset.json inside the TFDS folder, nothing else
        fault_cases.tried("cli: output overlaps input", 1)
    # The folder still reads as TFDS prepared it; converted elsewhere, every record is there.
    assert [r["caption"] for r in rk.iter_records(source)] == ["c0", "c1", "c2"]
    assert run("convert", source, tmp_path / "native").exit_code == 0
    assert [r["caption"] for r in rk.iter_records(tmp_path / "native")] == ["c0", "c1", "c2"]


# -- failures half-way leave nothing behind -------------------------------------------------


@pytest.mark.parametrize("out_before", ["absent", "empty folder", "folder with a file"])
def test_a_failed_ingest_leaves_nothing_and_runs_again_as_it_was(
    tmp_path: Path, out_before: str, fault_cases: Any
) -> None:
    source = jsonl(tmp_path / "in" / "data.jsonl", [*GOOD_LINES, '{"text": "broken", "label": '])
    out = tmp_path / "out"
    if out_before != "absent":
        out.mkdir()
    if out_before == "folder with a file":
        (out / "notes.txt").write_text("mine")
    there = contents(out) if out.exists() else None
    inputs = contents(source.parent)
    line = one_error_line(run("ingest", "jsonl", source, out))
    assert line == f"Error: InputError: file {source}, line 6: not JSON: Expecting value (column 1)"
    assert (contents(out) if out.exists() else None) == there  # nothing left behind
    assert contents(source.parent) == inputs
    fault_cases.tried("cli: failed ingest", 1)
    jsonl(source, GOOD_LINES)  # corrected; the same command again
    again = run("ingest", "jsonl", source, out)
    assert again.exit_code == 0, again.output
    assert "ingested 5 records" in again.output
    assert [r["text"] for r in rk.iter_records(out)] == [f"caption {i}" for i in range(5)]
    assert run("verify", out).exit_code == 0
    if out_before == "folder with a file":
        assert (out / "notes.txt").read_text() == "mine"


def test_a_failed_convert_leaves_nothing(tmp_path: Path, fault_cases: Any) -> None:
    source = tfds_folder(tmp_path / "tfds")
    shard = source / "tiny-train.tfrecord-00000-of-00001"
    data = bytearray(shard.read_bytes())
    data[-6] ^= 0xFF  # the last record's data CRC fails
    shard.write_bytes(bytes(data))
    before = contents(source)
    line = one_error_line(run("convert", source, tmp_path / "native"))
    assert line.startswith("Error: CorruptRecordError: "), line
    assert not (tmp_path / "native").exists()
    assert contents(source) == before
    fault_cases.tried("cli: failed convert", 1)


def test_a_failed_append_keeps_the_dataset_and_resume_finishes_it(tmp_path: Path, fault_cases: Any) -> None:
    out = tmp_path / "out"
    assert run("ingest", "jsonl", jsonl(tmp_path / "a.jsonl", GOOD_LINES), out).exit_code == 0
    stored = contents(out)
    more = [json.dumps({"text": f"more {i}", "label": 1}) for i in range(3)]
    bad = jsonl(tmp_path / "b.jsonl", [*more, "not json"])
    one_error_line(run("ingest", "jsonl", bad, out, "--append", "--split", "extra"))
    assert [r["text"] for r in rk.iter_records(out)] == [f"caption {i}" for i in range(5)]
    assert contents(out)["train-00000.tfrecord"] == stored["train-00000.tfrecord"]
    fault_cases.tried("cli: failed ingest", 1)
    # The unfinished append is named in the CLI's words, and --resume finishes it.
    jsonl(bad, more)
    line = one_error_line(run("ingest", "jsonl", bad, out, "--append", "--split", "extra"))
    assert "pass --resume (with the same input)" in line, line
    assert "=True" not in line, line
    resumed = run("ingest", "jsonl", bad, out, "--resume", "--split", "extra")
    assert resumed.exit_code == 0, resumed.output
    assert [r["text"] for r in rk.iter_records(out, "extra")] == [f"more {i}" for i in range(3)]
    assert run("verify", out).exit_code == 0
    fault_cases.tried("cli: failed ingest", 1)


# -- errors are one line ------------------------------------------------------------------


def _paths(tmp_path: Path) -> tuple[Path, Path, Path]:
    dataset = tmp_path / "ds"
    rk.write_dataset([{"caption": "x", "label": 0}], SCHEMA, dataset, progress=False)
    afile = tmp_path / "a.txt"
    afile.write_text("text")
    return dataset, afile, tmp_path / "missing"


#: Commands given a missing path, a file for a folder or a folder for a file, with the
#: error type the one line names. D: a dataset, F: a plain file, M: a missing path.
BAD_PATHS = [
    (["inspect", "M"], "ManifestError"),
    (["verify", "M"], "ManifestError"),
    (["verify", "F"], "ManifestError"),
    (["stats", "M"], "FileNotFoundError"),
    (["stats", "D", "--json", "D"], "IsADirectoryError"),
    (["stats", "D", "--plots", "F"], "NotADirectoryError"),
    (["show", "M", "-o", "M"], "FileNotFoundError"),
    (["show", "D", "-o", "F"], "NotADirectoryError"),
    (["index", "M"], "DatasetError"),
    (["schema", "check", "M"], "FileNotFoundError"),
    (["schema", "check", "D"], "IsADirectoryError"),
    (["schema", "diff", "M", "D"], "FileNotFoundError"),
    (["schema", "infer", "M"], "DatasetError"),
    (["schema", "infer", "D", "-o", "D"], "IsADirectoryError"),
    (["codegen", "M"], "FileNotFoundError"),
    (["codegen", "D", "-o", "D"], "IsADirectoryError"),
    (["ingest", "image_folder", "M", "OUT"], "FileNotFoundError"),
    (["ingest", "image_folder", "F", "OUT"], "InputError"),
    (["ingest", "jsonl", "F", "OUT", "--schema", "D"], "IsADirectoryError"),
    (["convert", "M", "OUT"], "FileNotFoundError"),
    (["convert", "F", "OUT"], "NotADirectoryError"),
]


@pytest.mark.parametrize(("argv", "error"), BAD_PATHS, ids=[" ".join(a) for a, _ in BAD_PATHS])
def test_a_missing_or_wrong_kind_of_path_is_one_error_line(
    tmp_path: Path, argv: list[str], error: str, fault_cases: Any
) -> None:
    dataset, afile, missing = _paths(tmp_path)
    names = {"D": dataset, "F": afile, "M": missing, "OUT": tmp_path / "out"}
    before = contents(tmp_path)
    line = one_error_line(run(*[names.get(arg, arg) for arg in argv]))
    assert line.startswith(f"Error: {error}: "), line
    assert contents(tmp_path) == before
    assert not (tmp_path / "out").exists()
    fault_cases.tried("cli: bad path", 1)


def test_overwriting_a_bucket_root_is_a_refusal_not_a_bug(tmp_path: Path, fault_cases: Any) -> None:
    source = jsonl(tmp_path / "a.jsonl", GOOD_LINES)
    line = one_error_line(run("ingest", "jsonl", source, "memory://rk-hostile-cli", "--overwrite"))
    assert line == (
        "Error: DatasetError: file memory://rk-hostile-cli: --overwrite replaces everything under "
        "memory://rk-hostile-cli; give the dataset a folder inside the bucket (s3://bucket/NAME), "
        "not the bucket itself"
    )
    fault_cases.tried("cli: documented refusal", 1)


def test_the_writers_advice_is_given_in_the_commands_words(tmp_path: Path, fault_cases: Any) -> None:
    source = jsonl(tmp_path / "a.jsonl", GOOD_LINES)
    out = tmp_path / "out"
    assert run("ingest", "jsonl", source, out).exit_code == 0
    before = contents(out)
    line = one_error_line(run("ingest", "jsonl", source, out))
    assert line == (
        f"Error: DatasetError: file {out}: already holds a dataset (dataset.json); pass --append to add "
        "records or splits, or --resume to finish an interrupted write"
    )
    tfds = tfds_folder(tmp_path / "tfds")
    line = one_error_line(run("convert", tfds, out))
    assert "convert into a new folder (or remove this one first)" in line, line
    assert "=True" not in line, line
    assert contents(out) == before
    fault_cases.tried("cli: documented refusal", 2)


# -- what the commands report ------------------------------------------------------------


def test_verify_fails_a_dataset_that_holds_no_records(tmp_path: Path, fault_cases: Any) -> None:
    nothing = tmp_path / "nothing"
    rk.DatasetWriter(nothing, SCHEMA, progress=False).close()
    line = one_error_line(run("verify", nothing))
    assert "the dataset has no splits, so no records" in line, line
    empty = tmp_path / "empty"
    rk.write_dataset([], SCHEMA, empty, progress=False)
    result = run("verify", empty)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        "Error: split 'train' holds no records; pass --allow-empty to accept empty splits"
    )
    assert run("verify", empty, "--allow-empty").exit_code == 0
    fault_cases.tried("cli: verify", 2)


def test_stats_json_holds_nan_and_infinity_as_strings(tmp_path: Path, fault_cases: Any) -> None:
    schema = rk.Schema.model_validate(
        {
            "name": "numbers",
            "version": "1",
            "fields": {"x": {"codec": "scalar", "options": {"dtype": "float32"}}},
        }
    )
    values = [1.0, float("nan"), float("inf"), 2.0, float("-inf"), float("nan")]
    rk.write_dataset([{"x": v} for v in values], schema, tmp_path / "ds", progress=False)
    report_file = tmp_path / "stats.json"
    result = run("stats", tmp_path / "ds", "--json", report_file, "--plots", tmp_path / "plots")
    assert result.exit_code == 0, result.output

    def no_constants(name: str) -> object:
        raise AssertionError(f"not JSON: {name}")

    report = json.loads(report_file.read_text(), parse_constant=no_constants)
    assert report["fields"]["x"]["values"] == {
        "count": 4,
        "min": "-Infinity",
        "max": "Infinity",
        "mean": "NaN",
        "nan": 2,
    }
    assert "(2 NaN)" in result.output
    assert (tmp_path / "plots" / "x-values.png").is_file()
    fault_cases.tried("cli: stats", 1)
