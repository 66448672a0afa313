"""``recordkit view``: a local, read-only web viewer of a dataset (the ``view`` extra:
Starlette, uvicorn and Jinja2). Importing this package imports the web stack; only the
``view`` command does, once it has checked the extra is installed."""

from __future__ import annotations

from recordkit.view._jobs import default_cache_dir
from recordkit.view._serve import bind, open_viewer, serve
from recordkit.view._viewer import NotFoundError, Viewer
from recordkit.view.app import create_app

__all__ = ["NotFoundError", "Viewer", "bind", "create_app", "default_cache_dir", "open_viewer", "serve"]
