"""docs/how-to/dataset-cards.md: its schema file and examples run and print what the
page shows, and the errors and inspect lines it quotes are the ones recordkit gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import SchemaError, SchemaFileError

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "dataset-cards.md"


def _run_page(page_examples: Any) -> list[Any]:
    blocks = page_examples.code_blocks(PAGE)
    Path("shapes.yaml").write_text(next(b.body for b in blocks if b.language == "yaml"))
    page_examples.run_python_blocks(blocks)
    return list(blocks)


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = _run_page(page_examples)
    assert all(b.output for b in blocks if b.language == "python"), "every example prints what it shows"
    shown = CliRunner().invoke(main, ["inspect", "data/shapes"])
    assert shown.exit_code == 0, shown.output
    console = next(b.body for b in blocks if b.language == "console")
    for line in console.splitlines()[1:]:
        if line != "...":
            assert line + "\n" in shown.output
    card = json.loads(CliRunner().invoke(main, ["inspect", "--json", "data/shapes"]).output)["card"]
    assert card["citation"].startswith("@misc{shapes2026,")


def test_the_errors_the_page_quotes_are_raised(page_examples: Any, in_tmp_path: Path) -> None:
    _run_page(page_examples)
    text = PAGE.read_text(encoding="utf-8")
    head = "name: shapes\nfields:\n  caption: {codec: text}\ncard:\n"
    Path("shapes.yaml").write_text(head + "  license: GPL v2\n")
    with pytest.raises(SchemaFileError) as bad_license:
        rk.Schema.load("shapes.yaml")
    assert f"`SchemaFileError: {bad_license.value}`" in text
    for entry, quoted in (
        (
            "citation: Doe 2026",
            "key 'card.citation': must be a BibTeX entry (@article{key, ...}, @misc{...} ...)",
        ),
        ("homepage: example.org", "key 'card.homepage': must be an http:// or https:// URL"),
        ("authors: ['']", "an author's name is empty"),
        (
            "licence: MIT",
            "unknown key 'licence' (did you mean 'license'? allowed: license, citation, homepage, authors, "
            "version_notes, description)",
        ),
    ):
        Path("shapes.yaml").write_text(head + "  " + entry + "\n")
        with pytest.raises(SchemaFileError) as taken:
            rk.Schema.load("shapes.yaml")
        assert quoted in str(taken.value)
        assert f"`... {quoted}`" in text
    schema = rk.Schema(name="s", fields={"caption": rk.FieldSpec(codec="text")})
    with pytest.raises(SchemaError) as given:
        rk.write_dataset([{"caption": "x"}], "data/b", schema, card={"homepage": "example.org"})
    assert f"`SchemaError: {given.value}`" in text
