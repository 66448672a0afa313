"""docs/how-to/random-access.md: its examples run and print what the page shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "random-access.md")
    page_examples.run_python_blocks(blocks)
    python = [b for b in blocks if b.language == "python"]
    assert all(b.output for b in python[1:]), "every example after the first prints what it shows"
