"""A dataset card: what people need to know to use a dataset well, besides its fields.

Its license (an SPDX expression), how to cite it (BibTeX), its homepage, its authors, notes
on this version and a description. A card is declared in a schema file (a top-level
``card:`` mapping) or given at write time (``rk.write_dataset(..., card=rk.DatasetCard(...))``);
``dataset.json`` stores it as its ``card`` entry, and ``recordkit inspect``, the viewer and
``recordkit croissant`` show it.

The license is checked loosely: it must be shaped like an SPDX license expression
(identifiers such as ``MIT`` or ``CC-BY-4.0``, ``LicenseRef-...`` for a license of one's
own, joined by ``AND``, ``OR`` and ``WITH``, in parentheses), not looked up in the SPDX list,
so a new identifier needs no new recordkit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pydantic

from recordkit.errors import SchemaError

__all__ = ["DatasetCard", "card_with", "checked_card", "spdx_problem"]

#: One SPDX license or exception identifier (``Apache-2.0``, ``GPL-2.0+``), a
#: ``LicenseRef-`` or ``DocumentRef-...:LicenseRef-`` of one's own.
_SPDX_ID = re.compile(r"(DocumentRef-[A-Za-z0-9.-]+:)?[A-Za-z0-9][A-Za-z0-9.-]*\+?")
_SPDX_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
_OPERATORS = frozenset({"AND", "OR", "WITH"})
#: An http(s) URL with a host: a homepage people can open.
_EXAMPLES = "e.g. MIT, CC-BY-4.0, Apache-2.0 OR MIT"
_URL = re.compile(r"^https?://[^\s/?#]+[^\s]*$")


def spdx_problem(expression: str) -> str | None:
    """What keeps ``expression`` from being shaped like an SPDX license expression
    (None: nothing): identifiers joined by AND, OR and WITH, with balanced parentheses."""
    tokens = [match.group(1) for match in _SPDX_TOKEN.finditer(expression)]
    if "".join(tokens) != re.sub(r"\s+", "", expression) or not tokens:
        return "is empty" if not expression.strip() else "holds characters an SPDX expression has not"
    depth = 0
    want_id = True  # an identifier or "(" comes next; else an operator or ")"
    for token in tokens:
        if token == "(" and want_id:
            depth += 1
        elif token == ")" and not want_id and depth > 0:
            depth -= 1
        elif token in _OPERATORS and not want_id:
            want_id = True
        elif want_id and token not in _OPERATORS and _SPDX_ID.fullmatch(token):
            want_id = False
        else:
            return f"is not an SPDX license expression (unexpected {token!r}; {_EXAMPLES})"
    if want_id or depth:
        return f"is not an SPDX license expression (it ends too early; {_EXAMPLES})"
    return None


class DatasetCard(pydantic.BaseModel):
    """A dataset's card: license, citation, homepage, authors, version notes, description.

    Every entry is optional; an empty card is the same as none.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    license: str | None = pydantic.Field(
        default=None,
        description="The license, as an SPDX license expression (MIT, CC-BY-4.0, Apache-2.0 OR MIT ...).",
    )
    citation: str | None = pydantic.Field(default=None, description="How to cite the dataset, as BibTeX.")
    homepage: str | None = pydantic.Field(
        default=None, description="The dataset's homepage (an http or https URL)."
    )
    authors: list[str] = pydantic.Field(default_factory=list, description="The dataset's authors, in order.")
    version_notes: str | None = pydantic.Field(default=None, description="What is new in this version.")
    description: str | None = pydantic.Field(default=None, description="What the dataset holds, for people.")

    @pydantic.field_validator("license")
    @classmethod
    def _spdx(cls, value: str | None) -> str | None:
        problem = None if value is None else spdx_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return None if value is None else " ".join(value.split())

    @pydantic.field_validator("homepage")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not _URL.match(value):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @pydantic.field_validator("citation")
    @classmethod
    def _bibtex(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"\s*@\w+\s*[{(]", value):
            raise ValueError("must be a BibTeX entry (@article{key, ...}, @misc{...} ...)")
        return value

    @pydantic.field_validator("authors")
    @classmethod
    def _named(cls, value: list[str]) -> list[str]:
        if any(not name.strip() for name in value):
            raise ValueError("an author's name is empty")
        return value

    @property
    def is_empty(self) -> bool:
        """Whether the card says nothing (it is then not stored)."""
        return self == DatasetCard()


def checked_card(card: DatasetCard | Mapping[str, Any] | None) -> DatasetCard | None:
    """``card``, a DatasetCard or its entries as a mapping, as a DatasetCard (None for
    None); a bad entry is a SchemaError naming it."""
    if card is None or isinstance(card, DatasetCard):
        return card
    try:
        return DatasetCard.model_validate(card)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'card'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_url=False)
        )
        raise SchemaError(f"the dataset card is not valid: {problems}") from None


def card_with(
    card: DatasetCard | None, entries: DatasetCard | Mapping[str, Any] | None
) -> DatasetCard | None:
    """``card`` with each entry of ``entries`` (a card's, or a mapping of them) in place
    of its own, the others kept (None when neither says anything); a bad entry is a
    SchemaError naming it."""
    given = (
        entries.model_dump(exclude_defaults=True) if isinstance(entries, DatasetCard) else dict(entries or {})
    )
    merged = checked_card({**(card.model_dump(exclude_defaults=True) if card is not None else {}), **given})
    return None if merged is None or merged.is_empty else merged
