"""docs/plugins.md: its stand-alone examples run (the others are included from real,
tested sources by the docs build)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import recordkit as rk


def is_included(block: Any) -> bool:
    return "--8<--" in block.body


@pytest.mark.usefixtures("keypoints_plugin")
def test_the_stand_alone_examples_run(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "plugins.md")
    assert any(is_included(b) for b in blocks), "the guide shows the keypoints plugin's real code"
    page_examples.run_python_blocks(blocks, skip=is_included)
    allow_block, without_pytest = [
        ast.literal_eval(b.output)
        for b in blocks
        if b.language == "python" and not is_included(b) and b.output
    ]
    assert allow_block == rk.load_plugins(allow=["recordkit"]).registry.names()
    assert "keypoints" not in allow_block
    assert "plain field: tf.data batched decode" in without_pytest
    assert "sequence field: numpy decode" in without_pytest
