"""Run the ``console`` blocks of a docs page: each ``$ recordkit ...`` line is run with
click's CliRunner in the current folder, and its output must match the lines the page
shows under it.

Matching is structural, so that pages need not change with every byte size or version:
numbers, long hex digests and runs of dashes or spaces are compared as placeholders; a
line ``...`` stands for any number of lines, and a line ending in ``...`` for any line
starting with what comes before. A command whose shown output has a line starting with
``Error:`` must exit with status 1, any other with 0.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from click.testing import CliRunner

from recordkit.cli import main

ELLIPSIS = "..."


@dataclass
class Command:
    """One ``$ recordkit ...`` line and the output the page shows under it."""

    argv: list[str]
    shown: list[str]


def commands(body: str) -> list[Command]:
    """The commands of a console block, each with the output lines under it."""
    found: list[Command] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            argv = shlex.split(line[2:].split(" #")[0])
            found.append(Command(argv, []))
        elif found:
            found[-1].shown.append(line)
    return found


def normalize(line: str) -> str:
    line = re.sub(r"[0-9a-f]{16,}", "H", line)
    line = re.sub(r"\d+", "N", line)
    line = re.sub(r"-{2,}", "-", line)
    return " ".join(line.split())


def _line_matches(shown: str, actual: str) -> bool:
    if shown.endswith(ELLIPSIS):
        return normalize(actual).startswith(normalize(shown[: -len(ELLIPSIS)]))
    return normalize(shown) == normalize(actual)


def matches(shown: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` output lines match the ``shown`` ones (see the module docs)."""
    if not shown:
        return not actual
    if shown[0].strip() == ELLIPSIS:
        return any(matches(shown[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and _line_matches(shown[0], actual[0]) and matches(shown[1:], actual[1:])


def run_console_block(body: str) -> list[Command]:
    """Run every ``recordkit`` command of a console block and check its output."""
    found = commands(body)
    for command in found:
        assert command.argv[0] == "recordkit", f"not a recordkit command: {command.argv}"
        result = CliRunner().invoke(main, command.argv[1:], prog_name="recordkit")
        expected_status = 1 if any(line.startswith("Error:") for line in command.shown) else 0
        assert result.exit_code == expected_status, f"{command.argv}: {result.output}"
        actual = result.output.splitlines()
        assert matches(command.shown, actual), (
            f"$ {shlex.join(command.argv)}\nthe page shows:\n"
            + "\n".join(command.shown)
            + "\nthe command printed:\n"
            + result.output
        )
    return found
