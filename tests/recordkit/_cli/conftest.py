"""A small real dataset for the CLI tests: written once with rk.write_dataset, copied
fresh for each test (several tests damage their copy)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from _cli_dataset import SCHEMA_YAML, SHARD_RECORDS, SPLITS, records

import recordkit as rk


@pytest.fixture(scope="session")
def pristine_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "shapes"
    schema_file = root.parent / "shapes.yaml"
    schema_file.write_text(SCHEMA_YAML, encoding="utf-8")
    schema = rk.Schema.load(schema_file)
    for i, (split, count) in enumerate(SPLITS.items()):
        rk.write_dataset(
            records(count, seed=i),
            schema,
            root,
            split,
            shard_records=SHARD_RECORDS,
            append=i > 0,
            progress=False,
        )
    return root


@pytest.fixture
def dataset(pristine_dataset: Path, tmp_path: Path) -> Path:
    """A fresh copy of the small dataset, free to damage."""
    return Path(shutil.copytree(pristine_dataset, tmp_path / "shapes"))


# The ingest, show and stats tests use the sources' generated inputs.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sources"))
