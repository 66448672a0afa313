"""docs/tutorials/speech-folder.md: on a generated speech folder (three WAV files and a
transcripts CSV), the page's examples run and print what they show."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recordkit" / "sources"))

import sample_sources as fx

import recordkit as rk


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    fx.audio_folder(in_tmp_path)
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "tutorials" / "speech-folder.md")
    page_examples.run_python_blocks(blocks)
    assert len([b for b in blocks if b.language == "text" and b.adjacent]) == 2
    assert [r["speaker"] for r in rk.iter_records("data/speech", fields=["speaker"])] == [7, 8, 9]
