"""Test setup for recordkit-keypoints.

The tests need the distribution installed (they find the codec through its entry
point). Inside recordkit's repository, the root conftest.py pip-installs it before
collection and provides the ``keypoints_plugin`` fixture used here; elsewhere, install
it first (``pip install .``).
"""

from __future__ import annotations

import importlib.metadata

import pytest


@pytest.fixture(autouse=True, scope="session")
def _installed(keypoints_plugin: importlib.metadata.Distribution) -> importlib.metadata.Distribution:
    """Every test here runs with the distribution installed and plugins reloaded."""
    return keypoints_plugin
