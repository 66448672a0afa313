"""``recordkit view``: a dataset in the browser (:mod:`recordkit.view`), served read-only
on 127.0.0.1 unless ``--host`` says otherwise. The web stack is the ``view`` extra,
imported only here and only when the command runs: without it the command stops with a
MissingExtraError that names the extra."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click

from recordkit._cli._common import PATH_OR_URL, parse_storage_options, storage_option
from recordkit.errors import MissingExtraError

__all__ = ["VIEW_PACKAGES", "view_command", "web_stack"]

#: The packages of the ``view`` extra.
VIEW_PACKAGES = ("starlette", "uvicorn", "jinja2")


def web_stack() -> Any:
    """The viewer's package (:mod:`recordkit.view`), once the ``view`` extra is known to
    be installed (else a MissingExtraError naming it)."""
    for package in VIEW_PACKAGES:
        try:
            importlib.import_module(package)
        except ImportError as exc:
            raise MissingExtraError(package, "view", purpose="recordkit view") from exc
    return importlib.import_module("recordkit.view")


@click.command("view", short_help="Look at a dataset in the browser: grid, records, statistics.")
@click.argument("dataset", type=PATH_OR_URL)
@storage_option
@click.option("-s", "--split", help="The split shown first (default: the first of the manifest).")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="The port (0: any free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the address in a web browser.")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where computed statistics are kept (default: ~/.cache/recordkit/view; "
    "give the dataset's folder to keep them beside it).",
)
def view_command(
    dataset: str,
    storage_options: tuple[str, ...],
    split: str | None,
    host: str,
    port: int,
    open_browser: bool,
    cache_dir: Path | None,
) -> None:
    """Serve DATASET (a dataset folder, a folder TFDS prepared, or an s3:// or gs:// URL
    with --storage-option) as a read-only web page: a grid of its records with their
    boxes, masks and points drawn, each record with its audio playable, the statistics
    of `recordkit stats` as charts, and the manifest, schema and a verify run. Prints the
    address and serves until interrupted (Ctrl-C)."""
    view = web_stack()
    options = parse_storage_options(storage_options) or None
    try:
        viewer = view.open_viewer(dataset, split, options)
    except view.NotFoundError as exc:
        raise click.BadParameter(str(exc), param_hint="'--split'") from exc
    try:
        sock = view.bind(host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    view.serve(
        viewer,
        sock,
        cache_dir=cache_dir or view.default_cache_dir(),
        storage_options=options,
        open_browser=open_browser,
        on_ready=lambda url: click.echo(f"recordkit view: serving {dataset} at {url} (Ctrl-C stops)"),
    )
