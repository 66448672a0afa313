"""The dataset card's options, shared by the commands that write a dataset
(``recordkit ingest``, ``recordkit convert``): ``--license``, ``--citation``,
``--homepage``, ``--author`` (repeatable), ``--description`` and ``--version-notes``.

:func:`card_options` adds them to a command and hands it the entries given as one
``card`` mapping (empty when none is); the writer checks them and names a bad one."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["card_options"]

Command = TypeVar("Command", bound=Callable[..., Any])

#: Each option: its flag, the card entry it gives, its metavar and its help.
_OPTIONS = (
    ("--license", "license", "SPDX", "The dataset's license, an SPDX expression (MIT, CC-BY-4.0 ...)."),
    ("--citation", "citation", "BIBTEX", 'How to cite the dataset, a BibTeX entry (e.g. "$(cat ref.bib)").'),
    ("--homepage", "homepage", "URL", "The dataset's homepage, an http(s) URL."),
    ("--author", "authors", "NAME", "An author of the dataset (repeatable, in order)."),
    ("--description", "description", "TEXT", "What the dataset holds, for people."),
    ("--version-notes", "version_notes", "TEXT", "What is new in this version of the dataset."),
)


def card_options(command: Command) -> Command:
    """``command`` with the card's options; it receives them as ``card``: the entries
    given, by card key (each replaces that entry of the card the dataset would get)."""

    @functools.wraps(command)
    def with_card(*args: Any, **kwargs: Any) -> Any:
        card: dict[str, Any] = {}
        for _, key, _, _ in _OPTIONS:
            value = kwargs.pop(key)
            if value:
                card[key] = list(value) if key == "authors" else value
        return command(*args, card=card, **kwargs)

    decorated: Any = with_card
    for flag, key, metavar, text in reversed(_OPTIONS):
        decorated = click.option(flag, key, metavar=metavar, multiple=key == "authors", help=text)(decorated)
    return decorated  # type: ignore[no-any-return]  # click's decorators are untyped here
