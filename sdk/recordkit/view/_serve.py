"""Opening a dataset for the viewer and serving it with uvicorn on one socket."""

from __future__ import annotations

import socket
import webbrowser
from collections.abc import Callable
from pathlib import Path

import uvicorn

from recordkit.read._dataset import open as open_dataset
from recordkit.storage import StorageOptions
from recordkit.view._viewer import Viewer
from recordkit.view.app import create_app

__all__ = ["MAX_CONNECTIONS", "bind", "open_viewer", "serve"]

#: Requests served at once; more are answered 503 (uvicorn's limit_concurrency).
MAX_CONNECTIONS = 64


def open_viewer(
    location: str, split: str | None = None, storage_options: StorageOptions | None = None
) -> Viewer:
    """The dataset at ``location`` (a folder, a TFDS folder, an ``s3://`` or ``gs://``
    URL) opened once for viewing, ``split`` shown first."""
    dataset = open_dataset(location, storage_options=storage_options)
    return Viewer(dataset, location, split)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (port 0: one the system picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(
    viewer: Viewer,
    sock: socket.socket,
    *,
    cache_dir: Path,
    storage_options: StorageOptions | None = None,
    open_browser: bool = False,
    on_ready: Callable[[str], None] = print,
) -> None:
    """Serve ``viewer`` on ``sock`` until interrupted; ``on_ready`` gets the address."""
    host = sock.getsockname()[0]
    hosts = [host, "localhost", "127.0.0.1"] if host in ("127.0.0.1", "::1") else ["*"]
    app = create_app(viewer, cache_dir=cache_dir, storage_options=storage_options, hosts=hosts)
    config = uvicorn.Config(
        app, log_level="warning", limit_concurrency=MAX_CONNECTIONS, h11_max_incomplete_event_size=16384
    )
    url = address(sock)
    on_ready(url)
    if open_browser:
        webbrowser.open(url)
    uvicorn.Server(config).run(sockets=[sock])
