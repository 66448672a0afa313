"""The ``recordkit`` command.

A click group; each command group lives in its own small module under
``recordkit._cli`` and is added here. Commands import what they need (TensorFlow above
all) when they run, so ``recordkit --help`` and ``recordkit plugins`` start fast and
never load TensorFlow.

A user error never prints a traceback: recordkit's own errors, and the operating
system's (a file that cannot be read, a folder given where a file is expected), are shown
as one line on stderr naming their context (the plugin and its distribution, the field,
the shard ...), and the command exits with status 1; an error whose message spans
several lines (one per schema difference, say) has them joined with "; ". Anything else
is a bug in recordkit or a plugin: one line too, asking for ``--debug``. ``--debug`` (or
``RECORDKIT_DEBUG=1``) lets every error through with its traceback.
"""

from __future__ import annotations

import os
from typing import Any

import click

from recordkit._cli._common import describe_error
from recordkit._cli.codegen import codegen_command
from recordkit._cli.convert import CONVERT_WORDS, convert_command
from recordkit._cli.croissant import croissant_command
from recordkit._cli.fields import add_fields_command, remove_fields_command
from recordkit._cli.index import index_command
from recordkit._cli.ingest import INGEST_WORDS, ingest_command
from recordkit._cli.inspect import inspect_command
from recordkit._cli.parquet import parquet_command
from recordkit._cli.plugins import plugins_command
from recordkit._cli.schema import schema_group
from recordkit._cli.show import show_command
from recordkit._cli.stats import stats_command
from recordkit._cli.tfds_metadata import tfds_metadata_command
from recordkit._cli.verify import verify_command
from recordkit._cli.view import view_command
from recordkit._version import __version__

__all__ = ["DEBUG_ENV", "describe_error", "main"]

#: Environment variable that, set to anything but "" or "0", acts as ``--debug``.
DEBUG_ENV = "RECORDKIT_DEBUG"

#: Per command, how its options say the library's advice (``append=True`` ...).
ADVICE_WORDS = {
    "ingest": INGEST_WORDS,
    "convert": CONVERT_WORDS,
    "add-fields": {"replace=True": "--replace", "recordkit.remove_fields": "recordkit remove-fields"},
}


class RecordkitGroup(click.Group):
    """A click group that turns errors into one-line command errors (see the module docs)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            if ctx.params.get("debug") or os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                raise
            words = ADVICE_WORDS.get(ctx.invoked_subcommand or "", {})
            raise click.ClickException(describe_error(exc, words)) from exc


@click.group(cls=RecordkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="recordkit", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help=f"Show the traceback of an error (also: {DEBUG_ENV}=1).")
def main(debug: bool) -> None:
    """recordkit: typed, multimodal datasets as sharded TFRecords."""


main.add_command(plugins_command)
main.add_command(inspect_command)
main.add_command(verify_command)
main.add_command(index_command)
main.add_command(schema_group)
main.add_command(codegen_command)
main.add_command(ingest_command)
main.add_command(show_command)
main.add_command(stats_command)
main.add_command(convert_command)
main.add_command(tfds_metadata_command)
main.add_command(parquet_command)
main.add_command(view_command)
main.add_command(add_fields_command)
main.add_command(remove_fields_command)
main.add_command(croissant_command)
