"""docs/how-to/codegen.md: its examples run and print what the page shows."""

from __future__ import annotations

import linecache
from pathlib import Path
from typing import Any


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "codegen.md")
    # The page generates code from a codec defined in one of its blocks: make the blocks'
    # source findable by inspect, as it is for a codec defined in a file.
    for i, block in enumerate(blocks):
        lines = block.body.splitlines(keepends=True)
        linecache.cache[f"<block {i}>"] = (len(block.body), None, lines, f"<block {i}>")
    try:
        page_examples.run_python_blocks(blocks)
    finally:
        for i in range(len(blocks)):
            linecache.cache.pop(f"<block {i}>", None)
    assert (in_tmp_path / "pets_parser.py").is_file()
    python = [b for b in blocks if b.language == "python"]
    assert all(b.output for b in python if "print(" in b.body)
