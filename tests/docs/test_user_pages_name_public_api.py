"""The user's pages (README, getting started, tutorials, how-tos, the reference) name
public API only: a private module (``recordkit.read._options`` ...) is a contributor's
detail, which belongs in the architecture page and the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [
    ROOT / "README.md",
    DOCS / "index.md",
    DOCS / "getting-started.md",
    DOCS / "troubleshooting.md",
    *sorted(DOCS.glob("tutorials/*.md")),
    *sorted(DOCS.glob("how-to/*.md")),
    *sorted(DOCS.glob("reference/*.md")),
]
#: Pages that may name a private module, and why.
EXPLAINED = {
    # The generated parser copies decode functions verbatim (from recordkit.read._parse and
    # the built-in codecs' shared helpers): the page says where the copied code comes from.
    DOCS / "how-to" / "codegen.md": {"recordkit.read._parse", "recordkit_codecs._tf_images"},
}
_PRIVATE = re.compile(r"\brecordkit(?:_codecs)?(?:\.[a-z]\w*)*\._\w+")


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_a_users_page_names_no_private_module(page: Path) -> None:
    named = set(_PRIVATE.findall(page.read_text(encoding="utf-8"))) - EXPLAINED.get(page, set())
    assert not named, f"{page.relative_to(ROOT)} names private modules: {sorted(named)}"


def test_the_check_finds_a_private_module() -> None:
    assert _PRIVATE.findall("defined in `recordkit.read._options.SourceOptions`") == [
        "recordkit.read._options"
    ]
    assert _PRIVATE.findall("`recordkit.torch.MapDataset`, `rk.open`") == []
