"""recordkit's version, read from the installed distribution's metadata."""

from __future__ import annotations

import importlib.metadata

try:
    __version__ = importlib.metadata.version("recordkit")
except importlib.metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+unknown"
