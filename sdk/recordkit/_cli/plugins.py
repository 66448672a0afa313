"""``recordkit plugins``: which codecs and sources are installed, and where each comes from."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import click

from recordkit._cli._common import table
from recordkit._version import __version__
from recordkit.codec._plugins import ALLOW_ENV, BLOCK_ENV, PluginSet, load_plugins
from recordkit.sources._registry import default_sources

__all__ = ["plugins_command", "plugins_report"]


def _split_names(values: Iterable[str]) -> list[str]:
    """Names from repeated options, each possibly comma-separated."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def plugins_report(plugin_set: PluginSet) -> dict[str, Any]:
    """The loaded plugins, their codecs and their sources as JSON-ready data."""
    codecs: list[dict[str, Any]] = [
        {
            "codec": info.name,
            "version": info.version,
            "plugin": info.plugin,
            "distribution": info.distribution,
            "distribution_version": info.distribution_version,
            "summary": info.codec.summary,
        }
        for info in plugin_set.registry
    ]
    sources: list[dict[str, Any]] = [
        {
            "source": info.kind,
            "plugin": info.plugin,
            "distribution": info.distribution,
            "distribution_version": info.distribution_version,
            "summary": info.summary,
        }
        for info in default_sources(plugin_set)
    ]
    plugins = [
        {
            "plugin": plugin.name,
            "distribution": plugin.distribution,
            "distribution_version": plugin.distribution_version,
            "codecs": sorted(c["codec"] for c in codecs if c["plugin"] == plugin.name),
            "sources": sorted(s["source"] for s in sources if s["plugin"] == plugin.name),
        }
        for plugin in plugin_set.plugins
    ]
    return {
        "recordkit_version": __version__,
        "codecs": codecs,
        "sources": sources,
        "plugins": plugins,
        "blocked": sorted(plugin_set.blocked),
    }


def _provider(distribution: str | None, version: str | None) -> str:
    if distribution is None:
        return "(in-process)"
    return f"{distribution} {version}" if version else distribution


@click.command("plugins", short_help="List the installed codecs and sources and where each comes from.")
@click.option(
    "--allow",
    "allow",
    multiple=True,
    metavar="NAME",
    help=f"Load only these plugins or distributions (repeat or comma-separate). Default: ${ALLOW_ENV}.",
)
@click.option(
    "--block",
    "block",
    multiple=True,
    metavar="NAME",
    help=f"Never load these plugins or distributions; added to ${BLOCK_ENV}.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(allow: tuple[str, ...], block: tuple[str, ...], as_json: bool) -> None:
    """List the installed codecs (with their version) and sources (what ``recordkit
    ingest KIND`` reads), each with the plugin that registers it and the distribution
    providing that plugin.

    Plugins are found through the ``recordkit`` entry-point group, exactly as
    recordkit finds them when it writes or reads a dataset.
    """
    allowed = _split_names(allow) if allow else _env_names(os.environ.get(ALLOW_ENV))
    blocked = _split_names(block) + (_env_names(os.environ.get(BLOCK_ENV)) or [])
    report = plugins_report(load_plugins(allow=allowed, block=blocked))
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    rows = [["codec", "version", "plugin", "distribution", "summary"]]
    rows += [
        [
            c["codec"],
            c["version"],
            c["plugin"],
            _provider(c["distribution"], c["distribution_version"]),
            c["summary"],
        ]
        for c in report["codecs"]
    ]
    if len(rows) == 1:
        click.echo("no codecs are installed")
    else:
        click.echo(table(rows))
    source_rows = [["source", "plugin", "distribution", "summary"]]
    source_rows += [
        [s["source"], s["plugin"], _provider(s["distribution"], s["distribution_version"]), s["summary"]]
        for s in report["sources"]
    ]
    click.echo("\n" + ("no sources are installed" if len(source_rows) == 1 else table(source_rows)))
    if report["blocked"]:
        click.echo(f"\nblocked plugins (not loaded): {', '.join(report['blocked'])}")


def _env_names(raw: str | None) -> list[str] | None:
    return None if raw is None else _split_names([raw])
