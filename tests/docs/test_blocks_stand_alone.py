"""Every Python block in docs/ imports what it uses, so that a reader who copies one
block alone (into a notebook cell, a script) gets no NameError for ``Path``, ``rk``,
``np`` or ``tf``. Names a page made in an earlier block (a dataset, a schema) are the
page's story and stay; modules and imported names must be imported again. Blocks that
are excerpts of a file (marked ``<!-- source: PATH#SECTION -->``, as in the plugin guide)
are that file's code and are checked against it instead."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
_EXCERPT = re.compile(r"<!-- source: \S+ -->\n```\w+\n(.*?)^```", re.MULTILINE | re.DOTALL)


def imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def borrowed_imports(bodies: list[str]) -> list[tuple[int, list[str]]]:
    """For each block that uses a name another block of the page imports without
    importing it itself: the block's index and those names."""
    trees = [ast.parse(body) for body in bodies]
    on_page = set().union(*(imported(t) for t in trees)) if trees else set()
    found = []
    for i, tree in enumerate(trees):
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        missing = sorted((used & on_page) - imported(tree))
        if missing:
            found.append((i, missing))
    return found


def test_the_check_finds_a_borrowed_import() -> None:
    first = "from pathlib import Path\n\nphotos = Path('photos')\n"
    second = "import recordkit as rk\n\nprint(Path('x'), rk, photos)\n"
    assert borrowed_imports([first, second]) == [(1, ["Path"])]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT / "docs")) for p in PAGES])
def test_every_python_block_imports_what_it_uses(page_examples: Any, page: Path) -> None:
    blocks = page_examples.code_blocks(page)
    excerpts = set(_EXCERPT.findall(page.read_text(encoding="utf-8")))
    bodies = [b.body for b in blocks if b.language == "python" and b.body not in excerpts]
    assert borrowed_imports(bodies) == []
