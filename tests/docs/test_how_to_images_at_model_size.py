"""docs/how-to/images-at-model-size.md: its examples run and print what the page shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.mark.slow
def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "images-at-model-size.md")
    page_examples.run_python_blocks(blocks)
    python = [b for b in blocks if b.language == "python"]
    assert all(b.output for b in python[2:]), "every example after the dataset prints what it shows"
