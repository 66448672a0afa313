"""The "coming from" pages (Hugging Face datasets, WebDataset, MosaicML Streaming): the
recordkit side of each runs as written and prints what the page shows. The other
library's side sits in a tab (indented, so not run here: its library is not installed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

PAGES = ["from-hugging-face.md", "from-webdataset.md", "from-streaming.md"]


@pytest.mark.parametrize("page", PAGES)
def test_the_recordkit_side_runs_as_written(page: str, page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / page)
    python = [b for b in blocks if b.language == "python"]
    assert python, "the page shows no recordkit code"
    page_examples.run_python_blocks(blocks)
    printed = [b for b in python if b.output]
    assert printed, "no block prints what the page says it does"


@pytest.mark.parametrize("page", PAGES)
def test_the_other_library_is_shown_side_by_side_and_what_recordkit_lacks_is_listed(
    page: str, page_examples: Any
) -> None:
    text = (page_examples.root / "docs" / "how-to" / page).read_text(encoding="utf-8")
    assert "## What maps to what" in text
    assert text.count('\n=== "') >= 2, "each task shows the other library's code in a tab"
    lacks = text.split("## What ", 2)[-1]
    assert lacks.startswith(
        tuple(
            f"{name} has that recordkit lacks"
            for name in ("Hugging Face datasets", "WebDataset", "MosaicML Streaming")
        )
    )
    assert lacks.count("\n- **") >= 3
