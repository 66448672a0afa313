"""The ``recordkit`` command.

A click group; each command group lives in its own small module under
``recordkit._cli`` and is added here. Commands import what they need (TensorFlow above
all) when they run, so ``recordkit --help`` and ``recordkit plugins`` start fast and
never load TensorFlow.

recordkit's own errors are shown as one line naming their context (the plugin and its
distribution, the field, the shard ...) and exit with status 1, without a traceback;
an error whose message spans several lines (one per schema difference, say) has them
joined with "; ".
"""

from __future__ import annotations

from typing import Any

import click

from recordkit._cli.codegen import codegen_command
from recordkit._cli.convert import convert_command
from recordkit._cli.inspect import inspect_command
from recordkit._cli.plugins import plugins_command
from recordkit._cli.schema import schema_group
from recordkit._cli.verify import verify_command
from recordkit._version import __version__
from recordkit.errors import RecordkitError

__all__ = ["main"]


class RecordkitGroup(click.Group):
    """A click group that turns recordkit's errors into one-line command errors."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RecordkitError as exc:
            raise click.ClickException(f"{type(exc).__name__}: {_one_line(str(exc))}") from exc


def _one_line(message: str) -> str:
    """``message`` on one line: its lines, stripped of list markers, joined by "; "."""
    lines = [line.strip().removeprefix("- ") for line in message.splitlines()]
    return "; ".join(line for line in lines if line)


@click.group(cls=RecordkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="recordkit", message="%(prog)s %(version)s")
def main() -> None:
    """recordkit: typed, multimodal datasets as sharded TFRecords."""


main.add_command(plugins_command)
main.add_command(inspect_command)
main.add_command(verify_command)
main.add_command(schema_group)
main.add_command(codegen_command)
main.add_command(convert_command)

