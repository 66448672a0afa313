"""A viewed dataset, written once per session, served for each module that asks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _view_dataset import served, write

#: Records of the viewed dataset: more than one grid page (48).
COUNT = 60


@pytest.fixture(scope="session")
def viewed_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("view") / "viewed"
    write(root, COUNT)
    return root


@pytest.fixture(scope="module")
def viewer_url(viewed_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with served(str(viewed_dataset), tmp_path_factory.mktemp("cache")) as url:
        yield url
