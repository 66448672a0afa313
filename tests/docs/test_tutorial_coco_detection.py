"""docs/tutorials/coco-detection.md: on a generated COCO set (three images, polygons,
crowd RLEs), the page's examples run and print what they show, and the dataset holds
COCO's boxes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recordkit" / "sources"))

import sample_sources as fx

import recordkit as rk


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    fx.coco(in_tmp_path)
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "tutorials" / "coco-detection.md")
    page_examples.run_python_blocks(blocks)
    printed = [b for b in blocks if b.language == "text" and b.adjacent]
    assert len(printed) == 4
    records = list(rk.iter_records("data/coco"))
    assert [int(r["image_id"]) for r in records] == [1, 2, 3]
    assert records[1]["objects"]["iscrowd"].tolist() == [1.0, 1.0]
