"""Repository-wide pytest setup: install the example plugin distribution.

plugins/recordkit-keypoints is a third-party plugin with its own pyproject. The test
suite proves that recordkit finds it through entry points alone, so it is pip-installed
(not editable, not put on ``sys.path``) into the running environment, before collection
so that its own tests can import it at module level. It is reinstalled only when the
installed copy differs from the source (version, entry points or any file's sha256).

This lives at the repository root, not in tests/conftest.py, because fixtures of a
conftest are visible only below its directory and the plugin's tests live under plugins/.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

KEYPOINTS_DIR = Path(__file__).parent / "plugins" / "recordkit-keypoints"
KEYPOINTS_DIST = "recordkit-keypoints"
KEYPOINTS_PACKAGE = "recordkit_keypoints"


def _sha256(data: bytes) -> str:
    """A file hash in the form RECORD files use (urlsafe base64, no padding)."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def keypoints_install_problem() -> str | None:
    """Why the installed recordkit-keypoints is not the source's, or None if it is."""
    try:
        dist = importlib.metadata.distribution(KEYPOINTS_DIST)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"
    project = tomllib.loads((KEYPOINTS_DIR / "pyproject.toml").read_text())["project"]
    if dist.version != project["version"]:
        return f"version {dist.version} installed, {project['version']} in the source"
    installed_eps = {(ep.name, ep.value) for ep in dist.entry_points.select(group="recordkit")}
    if installed_eps != set(project["entry-points"]["recordkit"].items()):
        return "entry points differ"
    package_dir = KEYPOINTS_DIR / "src" / KEYPOINTS_PACKAGE
    source = {
        path.relative_to(package_dir.parent).as_posix(): _sha256(path.read_bytes())
        for path in package_dir.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    installed = {
        file.as_posix(): file.hash.value
        for file in dist.files or ()
        if file.parts[0] == KEYPOINTS_PACKAGE and file.hash is not None
    }
    return None if installed == source else "installed files differ from the source"


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    """Serialise installs across pytest processes sharing this environment."""
    with open(Path(sys.prefix) / ".recordkit-keypoints.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_keypoints_installed() -> None:
    """pip-install plugins/recordkit-keypoints unless the installed copy is current.

    It is built from a temporary copy so that no build/ or egg-info lands in the source
    tree; ``--no-deps --no-build-isolation`` keeps it offline (recordkit and setuptools
    are installed already).
    """
    with _install_lock():
        if keypoints_install_problem() is None:
            return
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / KEYPOINTS_DIR.name
            skip = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__")
            shutil.copytree(KEYPOINTS_DIR, copy, ignore=skip)
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                 "--force-reinstall", "--disable-pip-version-check", "-q", str(copy)],
                check=True,
            )  # fmt: skip
        importlib.invalidate_caches()
        problem = keypoints_install_problem()
        if problem is not None:
            raise pytest.UsageError(f"installing {KEYPOINTS_DIR} did not take: {problem}")


def pytest_configure(config: pytest.Config) -> None:
    # xdist workers start after the controller's configure: it has installed already.
    if not hasattr(config, "workerinput"):
        ensure_keypoints_installed()


@pytest.fixture(scope="session")
def keypoints_plugin() -> importlib.metadata.Distribution:
    """The installed recordkit-keypoints distribution, with recordkit's default plugins
    reloaded so that they include it."""
    from recordkit.codec._plugins import reset_default_registry

    ensure_keypoints_installed()
    importlib.invalidate_caches()
    reset_default_registry()
    return importlib.metadata.distribution(KEYPOINTS_DIST)
