"""A griffe extension for recordkit's docstrings, so the API reference reads as the code does.

recordkit's docstrings follow Sphinx's conventions, which griffe does not read: module
data is documented by ``#:`` comment lines above its assignment, and cross-references
are roles such as ``:class:`~recordkit.Dataset```. This extension gives such data the
comment as its docstring, and shows each role as the code name it points to (the short
name when the target starts with ``~``), since many point into private modules that
the reference does not publish.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):`(~?)([^`<]+?)(?:\s*<([^>]+)>)?`"
)


def plain_roles(text: str) -> str:
    """``:class:`~a.b.C``` as ```C```, ``:func:`a.b``` as ```a.b```, ``:meth:`x <a.b>``` as ```x```."""

    def code(match: re.Match[str]) -> str:
        short, target, _explicit = match.groups()
        name = target.strip()
        if short:
            name = name.rsplit(".", 1)[-1]
        return f"`{name}`"

    return ROLE.sub(code, text)


def comment_above(obj: griffe.Object) -> str | None:
    """The ``#:`` lines right above ``obj``'s first line, joined; None if there are none."""
    if obj.lineno is None or obj.filepath is None or isinstance(obj.filepath, list):
        return None
    try:
        lines = obj.lines_collection[obj.filepath]
    except KeyError:
        return None
    comment: list[str] = []
    index = obj.lineno - 2
    while index >= 0 and lines[index].lstrip().startswith("#:"):
        comment.insert(0, lines[index].lstrip()[2:].strip())
        index -= 1
    return " ".join(comment) or None


class SphinxConventions(griffe.Extension):
    """``#:`` comments as attribute docstrings; Sphinx roles as code."""

    def on_attribute_instance(
        self, *, node: ast.AST | griffe.ObjectNode, attr: griffe.Attribute, agent: Any, **kwargs: Any
    ) -> None:
        if attr.docstring is None:
            text = comment_above(attr)
            if text:
                attr.docstring = griffe.Docstring(plain_roles(text), lineno=attr.lineno, parent=attr)

    def on_instance(
        self, *, node: ast.AST | griffe.ObjectNode, obj: griffe.Object, agent: Any, **kwargs: Any
    ) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)
