"""docs/how-to/write-datasets.md: its examples run and print what the page shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")  # the last example reads the shards with plain tf.data
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "write-datasets.md")
    page_examples.run_python_blocks(blocks)
    # Every dataset the page made lists exactly the files in its folder.
    for root in sorted((in_tmp_path / "data").iterdir()):
        manifest = json.loads((root / "dataset.json").read_text())
        listed = {"dataset.json", ".recordkit.lock"}  # the lock file, never listed
        for split in manifest["splits"].values():
            listed |= {shard["file"] for shard in split["shards"]}
            listed |= {shard["index"]["file"] for shard in split["shards"]}
            listed |= {split["rejects_file"]} if "rejects_file" in split else set()
        assert {p.name for p in root.iterdir()} == listed, root.name
    printed = [b for b in blocks if b.language == "text" and b.adjacent]
    assert len(printed) >= 10, "the page shows what its examples print"
