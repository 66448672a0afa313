"""Repository-wide pytest setup: the example plugin distribution.

plugins/recordkit-keypoints is a third-party plugin with its own pyproject. The test
suite proves that recordkit finds it through entry points alone, so it is pip-installed
(not editable, not put on ``sys.path``) into the environment by ``make keypoints``,
which ``make test``, ``make unit`` and ``make unit-fast`` run first (its own tests import
it at module level, so it must be there before collection). The tests that need it take
the ``keypoints_plugin`` fixture, which fails with what to run when the installed copy
is missing or differs from the source (version, entry points or any file's sha256), so
no test ever runs against a stale copy. Nothing is installed while tests run.

This lives at the repository root, not in tests/conftest.py, because fixtures of a
conftest are visible only below its directory and the plugin's tests live under plugins/.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import importlib
import importlib.metadata
import os
import sys
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


def pytest_collection_finish(session: pytest.Session) -> None:
    """Exempt what exists once the tests are collected (the imported modules of
    TensorFlow, PyTorch, Beam and the rest: some 500,000 objects that live until the
    process ends) from the cyclic garbage collector's scans. Each full collection
    otherwise walks them all again: about a tenth of the suite's time. Objects made by
    the tests are collected as before, and ``gc.collect()`` in a test still frees them."""
    gc.collect()
    gc.freeze()


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


@pytest.fixture(scope="session")
def keypoints_plugin() -> importlib.metadata.Distribution:
    """The installed recordkit-keypoints distribution, with recordkit's default plugins
    reloaded so that they include it."""
    from recordkit.codec._plugins import reset_default_registry

    importlib.invalidate_caches()
    problem = keypoints_install_problem()
    if problem is not None:
        pytest.fail(
            f"the example plugin {KEYPOINTS_DIST} is not installed as in the source ({problem}): "
            "install it with `make keypoints` "
            f"(or `pip install --no-deps {KEYPOINTS_DIR}`)",
            pytrace=False,
        )
    reset_default_registry()
    return importlib.metadata.distribution(KEYPOINTS_DIST)
