"""docs/getting-started.md: its examples, Python and command line, run and print what
the page shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _console import run_console_block


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "getting-started.md")
    schemas = [b for b in blocks if b.language == "yaml"]
    assert len(schemas) == 1
    (in_tmp_path / "pets.yaml").write_text(schemas[0].body, encoding="utf-8")
    page_examples.run_python_blocks(blocks)
    assert (in_tmp_path / "data" / "pets" / "dataset.json").is_file()
    outputs = [b.output for b in blocks if b.language == "python"]
    assert all(outputs[1:]), "every block after the first prints something"
    ran = [c.argv[1] for b in blocks if b.language == "console" for c in run_console_block(b.body)]
    assert ran == ["plugins", "verify", "inspect"]
