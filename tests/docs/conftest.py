"""Helpers for the tests that run the documentation's examples."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The tutorials' data comes from examples/make_tutorial_data.py, the script the pages tell
# readers to run: the tests import it from there.
sys.path.insert(0, str(ROOT / "examples"))

_FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass
class Block:
    """One fenced code block of a page; ``output`` is what its run printed."""

    language: str
    body: str
    #: True when only blank lines separate this block from the previous one.
    adjacent: bool = False
    output: str = ""


def code_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, in order."""
    text = page.read_text(encoding="utf-8")
    blocks, end = [], None
    for match in _FENCE.finditer(text):
        adjacent = end is not None and not text[end : match.start()].strip()
        blocks.append(Block(match.group(1), match.group(2), adjacent))
        end = match.end()
    return blocks


def run_python_blocks(
    blocks: list[Block], *, skip: Callable[[Block], bool] = lambda b: False
) -> dict[str, object]:
    """Run the ``python`` blocks in order in one namespace (as one script would), recording
    each one's printed output; a block directly followed by a ``text`` block must print
    exactly that. Returns the namespace, for tests to check what the page made.

    Compiled without inheriting this module's ``from __future__ import annotations``:
    the page's code (its Record classes above all) is evaluated as in a user's script.
    """
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for i, block in enumerate(blocks):
        if block.language != "python" or skip(block):
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block.body, f"<block {i}>", "exec", dont_inherit=True), namespace)  # the page's code
        block.output = out.getvalue()
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        if following is not None and following.language == "text" and following.adjacent:
            assert block.output == following.body, f"block {i} printed:\n{block.output}"
    return namespace


class PageExamples:
    """What the docs tests use, as a fixture (test modules cannot import a conftest)."""

    root = ROOT
    code_blocks = staticmethod(code_blocks)
    run_python_blocks = staticmethod(run_python_blocks)


@pytest.fixture
def page_examples() -> type[PageExamples]:
    return PageExamples


@pytest.fixture
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty folder, as a reader following a page would."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
