"""Every hook in recordkit.hookspecs is documented in the plugin authoring guide.

The guide shows each hook's specification, docstring included, through a snippet
(``--8<-- "file:section"``, pymdownx.snippets) or verbatim; this test expands the
snippets as mkdocs does and looks for each hook's source in the result.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from recordkit import hookspecs

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "plugins.md"

SNIPPET = re.compile(r'^(?P<indent>\s*)--8<-- "(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"\s*$', re.MULTILINE)


def hook_names() -> list[str]:
    marker = f"{hookspecs.PROJECT_NAME}_spec"  # the attribute pluggy's HookspecMarker sets
    return sorted(
        name
        for name, obj in vars(hookspecs).items()
        if name.startswith(f"{hookspecs.PROJECT_NAME}_") and hasattr(obj, marker)
    )


def section(path: Path, name: str | None) -> str:
    text = path.read_text(encoding="utf-8")
    if name is None:
        return text
    marker = r"^[ \t]*# --8<-- \[{}:" + re.escape(name) + r"\]"
    match = re.search(
        marker.format("start") + r"\n(?P<body>.*?)" + marker.format("end"), text, re.MULTILINE | re.DOTALL
    )
    assert match, f"{path} has no snippet section {name!r}"
    return match.group("body")


def expanded_guide() -> str:
    """docs/plugins.md with its snippets pasted in, as the docs build shows it."""
    return SNIPPET.sub(
        lambda m: section(ROOT / m.group("path"), m.group("section")), GUIDE.read_text(encoding="utf-8")
    )


def test_there_are_hooks_to_document() -> None:
    assert "recordkit_register_codecs" in hook_names()


@pytest.mark.parametrize("hook", hook_names())
def test_hook_has_a_heading_in_the_guide(hook: str) -> None:
    headings = re.findall(r"^#{2,4} .*$", GUIDE.read_text(encoding="utf-8"), re.MULTILINE)
    assert any(hook in heading for heading in headings), f"no heading names {hook} in {GUIDE}"


@pytest.mark.parametrize("hook", hook_names())
def test_hook_specification_and_docstring_are_shown(hook: str) -> None:
    source = inspect.getsource(getattr(hookspecs, hook))
    docstring = inspect.getdoc(getattr(hookspecs, hook))
    assert docstring, f"{hook} has no docstring"
    assert source in expanded_guide(), f"{GUIDE} does not show the specification of {hook}"
