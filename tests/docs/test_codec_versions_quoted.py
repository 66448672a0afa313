"""Every codec version the docs quote is the installed codec's: the tables ``recordkit
plugins`` and ``recordkit inspect`` print (whose console checks compare numbers as
placeholders, so a stale version would pass them), and the ``codecs`` entries of the
``dataset.json`` examples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import recordkit as rk

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```\w*[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_MANIFEST_CODEC = re.compile(r'"(\w+)": \{"version": "([^"]+)"')


def quoted_versions(text: str) -> list[tuple[str, str]]:
    """(codec, version) for each row of a codec table (a header starting ``codec version``)
    and each ``"name": {"version": ...}`` entry, in the page's code blocks."""
    found: list[tuple[str, str]] = []
    for block in _FENCE.findall(text):
        in_table = False
        for line in block.splitlines():
            words = line.split()
            if words[:2] == ["codec", "version"]:
                in_table = True
            elif in_table and (not words or line.startswith("$") or words[0] == "..."):
                in_table = words[:1] == ["..."]  # "..." stands for more rows
            elif in_table and not set(line.strip()) <= {"-", " "} and len(words) >= 2:
                found.append((words[0], words[1]))
        found += _MANIFEST_CODEC.findall(block)
    return found


def test_the_check_reads_tables_and_manifests() -> None:
    page = (
        "```console\n$ recordkit plugins\ncodec  version  plugin\n-----  -------  ------\n"
        "bbox   1        bbox\n...\nimage  1        image\n\nsplit  shards\ntrain  8\n```\n"
        '```json\n{"codecs": {\n  "text": {"version": "3", "plugin": "text"}}}\n```\n'
    )
    assert quoted_versions(page) == [("bbox", "1"), ("image", "1"), ("text", "3")]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_quoted_codec_version_is_the_installed_one(page: Path) -> None:
    registry = rk.default_registry()
    installed = {info.name: str(info.version) for info in registry}
    wrong = [
        f"{codec} {version} (installed: {installed[codec]})"
        for codec, version in quoted_versions(page.read_text(encoding="utf-8"))
        if codec in installed and version != installed[codec]
    ]
    assert not wrong, f"{page.relative_to(ROOT)} quotes codec versions that are not installed: {wrong}"


def test_the_pages_quote_codec_versions_at_all() -> None:
    quoted = [pair for page in PAGES for pair in quoted_versions(page.read_text(encoding="utf-8"))]
    assert ("bbox", "2") in quoted
    assert len(quoted) >= 10
