"""docs/how-to/beam.md: its examples run on the DirectRunner and print what the page shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.mark.slow
def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    pytest.importorskip("apache_beam")
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "beam.md")
    page_examples.run_python_blocks(blocks)
    python = [b for b in blocks if b.language == "python"]
    assert all(b.output for b in python), "every example prints what it shows"
    rejects = [json.loads(line) for line in (in_tmp_path / "data" / "rejects.jsonl").read_text().splitlines()]
    assert [(r["key"], r["errors"][0]["field"]) for r in rejects] == [("note-bad", "stars")]
