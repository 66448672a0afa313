"""Test setup for recordkit-keypoints.

The tests need the distribution installed (they find the codec through its entry
point). Inside recordkit's repository, ``make keypoints`` (run by ``make test``,
``make unit`` and ``make unit-fast``) pip-installs it, and the root conftest.py provides
the ``keypoints_plugin`` fixture used here, which fails when the installed copy is
missing or stale; elsewhere, install it first (``pip install .``).
"""

from __future__ import annotations

import importlib.metadata

import pytest


@pytest.fixture(autouse=True, scope="session")
def _installed(keypoints_plugin: importlib.metadata.Distribution) -> importlib.metadata.Distribution:
    """Every test here runs with the distribution installed and plugins reloaded."""
    return keypoints_plugin
