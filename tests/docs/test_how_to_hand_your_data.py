"""docs/how-to/hand-your-data-to-other-tools.md: its examples run and print what the page
shows, and the layouts it writes inline are the ones recordkit ships in schemas/layouts/."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import recordkit as rk

# The page's Hugging Face blocks read local files only: datasets must not ask the Hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


# TFDS 4.9 reads its protos' field descriptors with protobuf's deprecated label(); it is
# TFDS's own call, made when the page's TFDS block loads a dataset_info.json.
@pytest.mark.filterwarnings("ignore:label\\(\\) is deprecated:DeprecationWarning")
def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    page = page_examples.root / "docs" / "how-to" / "hand-your-data-to-other-tools.md"
    blocks = page_examples.code_blocks(page)
    namespace = page_examples.run_python_blocks(blocks)
    shipped = rk.Schema.load(page_examples.root / "schemas" / "layouts" / "object-detection-api.yaml")
    assert namespace["layout"] == shipped
    assert namespace["detection"] == rk.Schema.load(
        page_examples.root / "schemas" / "layouts" / "tfds-detection.yaml"
    )
    assert (in_tmp_path / "pets" / "dataset.json").is_file()
    assert (in_tmp_path / "pets-parquet-again" / "train-00000-of-00001.parquet").is_file()
