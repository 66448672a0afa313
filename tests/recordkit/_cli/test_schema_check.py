"""``recordkit schema check`` (sdk/recordkit/_cli/schema.py), on real schema files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _cli_dataset import SCHEMA_YAML
from click.testing import CliRunner, Result

import recordkit as rk
from recordkit.cli import main

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["schema", "check", *args])


def write(tmp_path: Path, text: str, name: str = "schema.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_valid_file_prints_its_fingerprint_and_fields(tmp_path: Path) -> None:
    path = write(tmp_path, SCHEMA_YAML)
    result = run(str(path))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{path}: schema 'shapes' version 2.1, 3 fields"
    assert lines[1] == f"fingerprint {rk.Schema.load(path).fingerprint()}"
    rows = {line.split()[0]: line.split() for line in lines[4:]}
    assert rows["image"][1:3] == ["image", "1"]
    assert rows["caption"][1:4] == ["text", "1", "optional"]
    assert rows["caption"][-2:] == ["caption,", "caption/present"]


def test_json_output(tmp_path: Path) -> None:
    path = write(tmp_path, SCHEMA_YAML)
    result = run(str(path), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["fingerprint"] == rk.Schema.load(path).fingerprint()
    assert (report["name"], report["version"]) == ("shapes", "2.1")
    assert [f["field"] for f in report["fields"]] == ["image", "label", "caption"]
    assert report["fields"][2]["keys"] == ["caption", "caption/present"]


def test_a_json_schema_file_gives_the_same_fingerprint(tmp_path: Path) -> None:
    schema = rk.Schema.loads(SCHEMA_YAML)
    path = tmp_path / "shapes.json"
    schema.dump(path)
    report = json.loads(run(str(path), "--json").output)
    assert report["fingerprint"] == schema.fingerprint()


@pytest.mark.parametrize("path", sorted((ROOT / "schemas").glob("*.yaml")), ids=lambda p: p.name)
def test_the_example_schemas_check(path: Path) -> None:
    result = run(str(path))
    assert result.exit_code == 0, result.output
    assert f"fingerprint {rk.Schema.load(path).fingerprint()}" in result.output


def test_a_list_of_problems_is_one_line_without_a_stray_separator(tmp_path: Path) -> None:
    result = run(str(write(tmp_path, "nme: x\nversion: 1\n")))
    assert result.exit_code == 1
    line = result.output.strip()
    assert len(line.splitlines()) == 1, result.output
    assert ":;" not in line
    assert "4 problems: missing required key 'name'; line 2: key 'version'" in line, line
    assert "unknown key 'nme' (did you mean 'name'?" in line


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: x\nfields:\n  a: {codec: scalar\n",
            r"SchemaFileError: file .*schema\.yaml, line \d+: is not valid YAML",
        ),
        (
            "name: x\nfields:\n  a: {codec: scalr}\n",
            r"UnknownCodecError: file .*, line 3, field 'a', codec 'scalr': no codec named 'scalr' "
            r"is installed \(did you mean 'scalar'\? installed: .*scalar.*\)",
        ),
        (
            "name: x\nfields:\n  a: {codec: scalar, options: {dtype: int65}}\n",
            r"CodecOptionsError: file .*, line 3, field 'a', codec 'scalar': option 'dtype': ",
        ),
    ],
    ids=["yaml", "unknown-codec", "bad-option"],
)
def test_a_bad_file_is_one_line_and_exit_1(tmp_path: Path, text: str, message: str) -> None:
    result = run(str(write(tmp_path, text)))
    assert result.exit_code == 1
    assert len(result.output.splitlines()) == 1, result.output
    assert "Traceback" not in result.output
    assert result.output.startswith("Error: ")
    assert re.search(message, result.output), result.output


def test_a_missing_file_is_one_error_line_with_status_1(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.yaml"))
    assert result.exit_code == 1
    missing = tmp_path / "nope.yaml"
    assert result.output == f"Error: FileNotFoundError: {missing}: No such file or directory (FILES)\n"
