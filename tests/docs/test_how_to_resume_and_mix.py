"""docs/how-to/resume-and-mix.md: its examples run and print what the page shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.mark.slow
def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    pytest.importorskip("torch")
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "resume-and-mix.md")
    page_examples.run_python_blocks(blocks)
    python = [b for b in blocks if b.language == "python"]
    assert all(b.output for b in python[2:]), "every example after the first two prints what it shows"
