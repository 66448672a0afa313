"""docs/how-to/write-datasets.md: its examples run and print what the page shows."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest


def run_blocks(blocks: list[Any]) -> None:
    """Run the page's python blocks in order in one namespace, as one script would; a
    block directly followed by a text block must print exactly that.

    Compiled without inheriting this module's ``from __future__ import annotations``:
    the page's Record classes are evaluated as in a user's script.
    """
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for i, block in enumerate(blocks):
        if block.language != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block.body, f"<block {i}>", "exec", dont_inherit=True), namespace)  # the page's code
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        if following is not None and following.language == "text" and following.adjacent:
            assert out.getvalue() == following.body, f"block {i} printed:\n{out.getvalue()}"


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")  # the last example reads the shards with plain tf.data
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "write-datasets.md")
    run_blocks(blocks)
    # Every dataset the page made lists exactly the files in its folder.
    for root in sorted((in_tmp_path / "data").iterdir()):
        manifest = json.loads((root / "dataset.json").read_text())
        listed = {"dataset.json"}
        for split in manifest["splits"].values():
            listed |= {shard["file"] for shard in split["shards"]}
            listed |= {split["rejects_file"]} if "rejects_file" in split else set()
        assert {p.name for p in root.iterdir()} == listed, root.name
    printed = [b for b in blocks if b.language == "text" and b.adjacent]
    assert len(printed) >= 10, "the page shows what its examples print"
