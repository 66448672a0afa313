"""docs/how-to/read-datasets.md: its examples run and print what the page shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "read-datasets.md")
    seen = page_examples.run_python_blocks(blocks)
    python = [b for b in blocks if b.language == "python"]
    assert all(b.output for b in python[1:]), "every example after the first prints what it shows"
    # The workers' shares: load_dataset and iter_records give each worker the same
    # records, and together every record once.
    labels = [0 if r["label"] == "dark" else 1 for r in seen["records"]]
    assert seen["shares"] == seen["parts"]
    assert sorted(label for part in seen["parts"] for label in part) == sorted(labels)
    assert [label for part in seen["parts"] for label in part] == labels[:10] + labels[30:] + labels[10:30]
