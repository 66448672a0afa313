"""docs/how-to/sources.md: on a generated folder of photos with a stray text file, the
page's example runs and prints what it shows."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recordkit" / "sources"))

import sample_sources as fx

import recordkit as rk


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    built = fx.image_folder(in_tmp_path)
    built.rename(in_tmp_path / "flower_photos")
    (in_tmp_path / "flower_photos" / "README.md").unlink()
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "sources.md")
    page_examples.run_python_blocks(blocks)
    assert rk.Schema.load("flowers.yaml").name == "flowers"
    assert rk.Manifest.load("data/flowers").splits["train"].num_records == 5
