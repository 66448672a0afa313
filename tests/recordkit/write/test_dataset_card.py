"""Dataset cards: declared in a schema file or given at write time, stored in
dataset.json (format 5, only when there is one), shown by inspect, checked on input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import ManifestError, SchemaError, SchemaFileError

CITATION = "@article{doe2026,\n  title = {Shapes},\n  author = {Doe, Jane},\n  year = {2026}\n}"
SCHEMA_FILE = f"""\
name: shapes
fields:
  label: {{codec: label, options: {{names: [circle, square]}}}}
  caption: {{codec: text}}
card:
  license: CC-BY-4.0 OR MIT
  homepage: https://example.org/shapes
  authors: [Jane Doe, Ravi Rao]
  version_notes: First release.
  description: Labelled shapes.
  citation: |
{chr(10).join("    " + line for line in CITATION.splitlines())}
"""
RECORDS = [{"label": "circle", "caption": "one"}, {"label": "square", "caption": "two"}]


def _schema_file(tmp_path: Path, text: str = SCHEMA_FILE) -> Path:
    path = tmp_path / "shapes.yaml"
    path.write_text(text)
    return path


def _stored(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((path / "dataset.json").read_text())
    return data


def test_a_card_declared_in_the_schema_file_is_stored_in_dataset_json_as_format_5(tmp_path: Path) -> None:
    out = tmp_path / "data"
    manifest = rk.write_dataset(RECORDS, out, _schema_file(tmp_path), progress=False)
    stored = _stored(out)
    assert stored["format"] == "recordkit.dataset/5"
    assert stored["card"] == {
        "license": "CC-BY-4.0 OR MIT",
        "citation": CITATION + "\n",
        "homepage": "https://example.org/shapes",
        "authors": ["Jane Doe", "Ravi Rao"],
        "version_notes": "First release.",
        "description": "Labelled shapes.",
    }
    assert "card" not in stored["schema"]  # type: ignore[operator]  # the card lives beside the schema
    assert rk.Manifest.load(out).card == manifest.card
    assert [r["caption"] for r in rk.iter_records(out)] == ["one", "two"]


def test_a_dataset_without_a_card_keeps_format_2(tmp_path: Path) -> None:
    schema = rk.Schema.loads(SCHEMA_FILE.split("card:")[0])
    rk.write_dataset(RECORDS, tmp_path / "data", schema, progress=False)
    stored = _stored(tmp_path / "data")
    assert stored["format"] == "recordkit.dataset/2"
    assert "card" not in stored


def test_a_card_given_at_write_time_wins_over_the_schema_files(tmp_path: Path) -> None:
    card = rk.DatasetCard(license="Apache-2.0", authors=["Ann Lee"])
    manifest = rk.write_dataset(RECORDS, tmp_path / "data", _schema_file(tmp_path), card=card, progress=False)
    assert manifest.card == card
    assert rk.Manifest.load(tmp_path / "data").card == card


def test_appending_with_a_card_replaces_the_stored_one_and_without_keeps_it(tmp_path: Path) -> None:
    out = tmp_path / "data"
    schema = rk.Schema.loads(SCHEMA_FILE.split("card:")[0])
    rk.write_dataset(RECORDS, out, schema, card=rk.DatasetCard(license="MIT"), progress=False)
    rk.write_dataset(RECORDS, out, schema, split="test", append=True, progress=False)
    assert rk.Manifest.load(out).card == rk.DatasetCard(license="MIT")
    newer = rk.DatasetCard(license="MIT", version_notes="Adds a test split.")
    rk.write_dataset(RECORDS, out, schema, split="validation", append=True, card=newer, progress=False)
    assert rk.Manifest.load(out).card == newer


def test_a_schema_file_card_round_trips_through_dumps(tmp_path: Path) -> None:
    schema = rk.Schema.load(_schema_file(tmp_path))
    assert schema.card is not None
    assert rk.Schema.loads(schema.dumps()) == schema
    assert rk.Schema.loads(schema.dumps("json"), "json") == schema


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "license: MIT AND",
            r"line 6.*'card.license': is not an SPDX license expression \(it ends too early",
        ),
        ("license: GPL v2", r"line 6.*'card.license': is not an SPDX license expression \(unexpected 'v2'"),
        ("license: (MIT", r"line 6.*'card.license': is not an SPDX license expression"),
        ("homepage: example.org", r"line 6.*'card.homepage': must be an http:// or https:// URL"),
        ("citation: Doe 2026", r"line 6.*'card.citation': must be a BibTeX entry"),
        ("licence: MIT", r"line 6.*unknown key 'licence'"),
    ],
)
def test_a_bad_card_entry_in_a_schema_file_is_refused_with_its_line(
    tmp_path: Path, entry: str, message: str
) -> None:
    text = SCHEMA_FILE.split("card:")[0] + "card:\n  " + entry + "\n"
    with pytest.raises(SchemaFileError, match=message):
        rk.Schema.load(_schema_file(tmp_path, text))


@pytest.mark.parametrize(
    "license",
    [
        "MIT",
        "Apache-2.0 OR MIT",
        "GPL-2.0-or-later WITH Classpath-exception-2.0",
        "(MIT AND BSD-3-Clause) OR LicenseRef-mine",
        "GPL-2.0+",
    ],
)
def test_spdx_expressions_of_every_shape_are_accepted(license: str) -> None:
    assert rk.DatasetCard(license=license).license == license


def test_a_card_in_a_manifest_of_an_older_format_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "data"
    rk.write_dataset(RECORDS, out, _schema_file(tmp_path), progress=False)
    raw = _stored(out)
    raw["format"] = "recordkit.dataset/4"
    (out / "dataset.json").write_text(json.dumps(raw))
    with pytest.raises(ManifestError, match=r"format 'recordkit.dataset/4' cannot hold a dataset card"):
        rk.Manifest.load(out)


def test_inspect_shows_the_card(tmp_path: Path) -> None:
    out = tmp_path / "data"
    rk.write_dataset(RECORDS, out, _schema_file(tmp_path), progress=False)
    shown = CliRunner().invoke(main, ["inspect", str(out)])
    assert shown.exit_code == 0, shown.output
    for line in (
        "license      CC-BY-4.0 OR MIT",
        "homepage     https://example.org/shapes",
        "authors      Jane Doe, Ravi Rao",
        "description  Labelled shapes.",
        "version notes First release.",
        "citation     @article{doe2026, (+4 lines; --json shows all)",
    ):
        assert line in shown.output
    as_json = CliRunner().invoke(main, ["inspect", "--json", str(out)])
    assert json.loads(as_json.output)["card"]["citation"] == CITATION + "\n"


def test_a_card_given_as_a_dict_is_checked_and_a_bad_entry_named(tmp_path: Path) -> None:
    schema = rk.Schema.loads(SCHEMA_FILE.split("card:")[0])
    manifest = rk.write_dataset(RECORDS, tmp_path / "a", schema, card={"license": "MIT"}, progress=False)
    assert manifest.card == rk.DatasetCard(license="MIT")
    with pytest.raises(
        SchemaError, match=r"the dataset card is not valid: homepage: must be an http:// or https:// URL"
    ):
        rk.write_dataset(RECORDS, tmp_path / "b", schema, card={"homepage": "example.org"}, progress=False)
    assert not (tmp_path / "b" / "dataset.json").exists()


def _jsonl(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    return path


def test_ingest_takes_the_card_from_its_options_each_in_place_of_the_schema_files_entry(
    tmp_path: Path,
) -> None:
    table = _jsonl(tmp_path / "shapes.jsonl")
    result = CliRunner().invoke(
        main,
        [
            "ingest", "jsonl", str(table), str(tmp_path / "plain"),
            "--license", "MIT", "--citation", CITATION, "--homepage", "https://example.org/s",
            "--author", "Ada", "--author", "Ravi Rao", "--description", "Shapes.", "--version-notes", "v1",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert rk.open(tmp_path / "plain").manifest.card == rk.DatasetCard(
        license="MIT",
        citation=CITATION,
        homepage="https://example.org/s",
        authors=["Ada", "Ravi Rao"],
        description="Shapes.",
        version_notes="v1",
    )
    schema = _schema_file(tmp_path)
    result = CliRunner().invoke(
        main,
        ["ingest", "jsonl", str(table), str(tmp_path / "own"), "--schema", str(schema), "--license", "MIT"],
    )
    assert result.exit_code == 0, result.output
    card = rk.open(tmp_path / "own").manifest.card
    assert card is not None
    assert (card.license, card.homepage, card.authors) == (
        "MIT",
        "https://example.org/shapes",
        ["Jane Doe", "Ravi Rao"],
    )
    # Appending with one entry replaces that entry of the stored card, and keeps the others.
    result = CliRunner().invoke(
        main,
        ["ingest", "jsonl", str(table), str(tmp_path / "own"), "--schema", str(schema), "--append",
         "--split", "more", "--version-notes", "Second release."],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    appended = rk.open(tmp_path / "own").manifest.card
    assert appended == card.model_copy(update={"version_notes": "Second release."})


def test_a_bad_card_option_fails_ingest_in_one_line_naming_it_and_writes_nothing(tmp_path: Path) -> None:
    table = _jsonl(tmp_path / "shapes.jsonl")
    result = CliRunner().invoke(
        main, ["ingest", "jsonl", str(table), str(tmp_path / "out"), "--homepage", "example.org/shapes"]
    )
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert "the dataset card is not valid: homepage: must be an http:// or https:// URL" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
