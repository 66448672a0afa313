"""Code blocks that a docs page copies from a file, checked against that file.

A block copied from a file carries a comment ``<!-- source: PATH#SECTION -->`` just above
it; the section is the part of the file between ``# --8<-- [start:SECTION]`` and
``# --8<-- [end:SECTION]`` (dedented), or the whole file without ``#SECTION``.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_SOURCED = re.compile(
    r"<!-- source: (?P<path>[^#\s]+)(?:#(?P<section>[\w-]+))? -->\n```\w+\n(?P<body>.*?)^```",
    re.MULTILINE | re.DOTALL,
)


def section(path: Path, name: str | None) -> str:
    """A file, or one snippet section of it (dedented, without its markers)."""
    text = path.read_text(encoding="utf-8")
    if name is None:
        return text
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == f"# --8<-- [start:{name}]"]
    ends = [i for i, line in enumerate(lines) if line.strip() == f"# --8<-- [end:{name}]"]
    assert len(starts) == len(ends) == 1, f"{path} has no single section {name!r}"
    return textwrap.dedent("\n".join(lines[starts[0] + 1 : ends[0]])).strip("\n") + "\n"


def sourced_blocks(page: Path) -> list[tuple[str, str | None, str]]:
    """(path, section, the block's code) of each block ``page`` copies from a file."""
    text = page.read_text(encoding="utf-8")
    return [(m["path"], m["section"], m["body"]) for m in _SOURCED.finditer(text)]


def sections(text: str) -> dict[str, tuple[int, int]]:
    """Each section's (start marker line, end marker line) in ``text``, 0-based."""
    lines = text.splitlines()
    found: dict[str, tuple[int, int]] = {}
    for i, line in enumerate(lines):
        start = re.fullmatch(r"\s*# --8<-- \[start:(\w+)\]", line)
        if start:
            end = next(j for j in range(i, len(lines)) if lines[j].strip() == f"# --8<-- [end:{start[1]}]")
            found[start[1]] = (i, end)
    return found


def rebuilt(path: Path, shown: dict[str, str]) -> str:
    """The module at ``path`` with each section replaced by the block ``shown`` for it
    (indented as the section is), after checking that the sections hold all its code but
    its docstring and ``from __future__ import annotations``."""
    text = path.read_text(encoding="utf-8")
    found = sections(text)
    assert set(shown) == set(found), "every section of the module is shown, and only those"
    lines = text.splitlines()
    covered = {i for start, end in found.values() for i in range(start, end + 1)}
    docstring_end = next(i for i, line in enumerate(lines) if i and line.endswith('"""'))
    outside = [
        line
        for i, line in enumerate(lines)
        if i > docstring_end and i not in covered and line.strip() and not line.lstrip().startswith("#")
    ]
    assert outside == ["from __future__ import annotations"], f"code the page does not show: {outside}"
    result = list(lines)
    for name, (start, end) in sorted(found.items(), key=lambda item: -item[1][0]):
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        result[start : end + 1] = textwrap.indent(shown[name], indent).splitlines()
    return "\n".join(result)
