"""Every Markdown table in docs/ renders as a table in the built site.

A table broken by a stray line (a paragraph between two of its rows, a missing separator
row) still builds under ``mkdocs --strict``: its rows just show as raw ``| a | b |``
text. This builds the site into a temporary folder and reads the HTML, page by page;
or, under ``make test``, reads the site its ``docs`` step has just built the same way
(``RECORDKIT_BUILT_SITE``), if that build passed and no source changed since it began.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^\s*(```|~~~)")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def markdown_tables(text: str) -> int:
    """The tables of a Markdown page (a row followed by a separator row), outside code."""
    lines, count, fenced = text.splitlines(), 0, False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and _ROW.match(line) and i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1]):
            count += 1
    return count


class _Page(HTMLParser):
    """The tables of an HTML page and its text outside ``<pre>``, ``<code>`` and tables."""

    def __init__(self) -> None:
        super().__init__()
        self.tables = 0
        self._skip: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables += 1
        if tag in ("pre", "code", "script", "style", "table"):
            self._skip.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._skip and self._skip[-1] == tag:
            self._skip.pop()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)


def rendered(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def raw_rows(page: _Page) -> list[str]:
    """Lines of the page's prose that look like Markdown table rows."""
    return [line.strip() for line in "".join(page.text).splitlines() if _ROW.match(line)]


def test_the_checks_see_a_broken_table() -> None:
    broken = "| a | b |\n| --- | --- |\n| 1 | 2 |\n\nA paragraph.\n| 3 | 4 |\n"
    assert markdown_tables(broken) == 1
    assert markdown_tables("```\n| a | b |\n| --- | --- |\n```\n") == 0
    page = rendered("<table><tr><td>1</td></tr></table><p>A paragraph.\n| 3 | 4 |</p><pre>| x |</pre>")
    assert page.tables == 1
    assert raw_rows(page) == ["| 3 | 4 |"]


#: The stamp ``make docs`` leaves beside its site: touched as the build starts, renamed
#: to this once ``mkdocs build --strict`` passed.
STAMP_SUFFIX = ".built-strict"


def built_site(site: Path) -> Path | None:
    """``site`` if ``make docs`` built it with the command below and it passed (its
    stamp), and no file of the checkout (tracked, or new and not ignored) changed since
    the build began; else None."""
    stamp = site.with_name(site.name + STAMP_SUFFIX)
    if not stamp.is_file() or not site.is_dir():
        return None
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        return None
    started = stamp.stat().st_mtime
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file() and source.stat().st_mtime >= started:
            return None
    return site


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("RECORDKIT_BUILT_SITE")
    reused = built_site(ROOT / given) if given else None
    if reused is not None:
        return reused
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    return out


def _html_of(site: Path, page: Path) -> Path:
    relative = page.relative_to(DOCS).with_suffix("")
    if relative.name == "index":
        return site / relative.parent / "index.html"
    return site / relative / "index.html"


PAGES = sorted(DOCS.rglob("*.md"))


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_every_markdown_table_renders_as_a_table(site: Path, page: Path) -> None:
    html = rendered(_html_of(site, page).read_text(encoding="utf-8"))
    assert raw_rows(html) == [], f"{page.relative_to(ROOT)}: table rows shown as text"
    assert html.tables >= markdown_tables(page.read_text(encoding="utf-8"))
