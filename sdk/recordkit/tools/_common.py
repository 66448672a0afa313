"""Plain-text helpers the CLI and the viewer share, neither knowing the other: one line
for an error as a user sees it (:func:`describe_error`), and the dataset a path or URL
names (:func:`dataset_location`). Nothing here imports click."""

from __future__ import annotations

from collections.abc import Mapping

from recordkit.dataset._manifest import MANIFEST_FILE
from recordkit.errors import RecordkitError
from recordkit.storage import Location, StorageOptions, is_remote, location

__all__ = ["dataset_location", "describe_error", "in_cli_words", "is_local_dir", "one_line"]


def one_line(message: str) -> str:
    """``message`` on one line: its lines, stripped of list markers, joined by "; "
    (a line that introduces a list, ending in ":", is followed by a space only)."""
    lines = [line.strip().removeprefix("- ") for line in message.splitlines()]
    joined = ""
    for line in filter(None, lines):
        joined += (" " if joined.endswith(":") else "; " if joined else "") + line
    return joined


def in_cli_words(message: str, words: Mapping[str, str]) -> str:
    """``message`` (the library's, whose advice names Python keywords such as
    ``append=True``) with each phrase of ``words`` replaced by what a command's user
    types instead (``--append``)."""
    for phrase, said in words.items():
        message = message.replace(phrase, said)
    return message


def describe_error(exc: BaseException, words: Mapping[str, str] | None = None) -> str:
    """One line for ``exc``: its type and message, with the file an OS error concerns
    and the library's advice in the command's ``words`` (see :func:`in_cli_words`). An
    error that is neither recordkit's nor the operating system's is a bug: the line
    asks for ``--debug`` and a report."""
    if isinstance(exc, RecordkitError):
        return f"{type(exc).__name__}: {in_cli_words(one_line(str(exc)), words or {})}"
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return f"{type(exc).__name__}: {where}{exc.strerror}"
    return (
        f"{type(exc).__name__}: {one_line(str(exc)) or '(no message)'} "
        "(unexpected: run 'recordkit --debug ...' for the traceback, and report it)"
    )


def dataset_location(dataset: str, storage_options: StorageOptions | None = None) -> Location:
    """The dataset that a path or URL names, local or remote: its folder (its
    dataset.json names its folder too)."""
    root = location(dataset, storage_options if is_remote(dataset) else None)
    return root.parent if root.name == MANIFEST_FILE and not is_local_dir(root) else root


def is_local_dir(where: Location) -> bool:
    """Whether ``where`` is a local folder."""
    folder = where.local_path
    return folder is not None and folder.is_dir()
