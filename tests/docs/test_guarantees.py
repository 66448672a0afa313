"""docs/guarantees.md: every test the page names exists, so each promise stays linked
to a test that holds it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guarantees.md"


def test_every_named_test_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    references = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", text)
    assert len(references) >= 20
    for path, name in references:
        source = ROOT / path
        assert source.is_file(), path
        if name:
            tree = ast.parse(source.read_text(encoding="utf-8"))
            functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
            assert name in functions, f"{path}::{name}"


def test_the_page_is_in_the_nav() -> None:
    assert "guarantees.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
