"""docs/how-to/tfds.md: its examples run on a dataset TFDS prepared, and print what the page shows."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _console import run_console_block

tfds = pytest.importorskip("tensorflow_datasets")


def _prepare(data_dir: Path) -> None:
    base: Any = tfds.core.GeneratorBasedBuilder  # tfds is untyped

    class Tiny(base, skip_registration=True):  # type: ignore[misc]  # a base class of type Any
        VERSION = tfds.core.Version("1.0.0")

        def _info(self) -> Any:
            f = tfds.features
            return tfds.core.DatasetInfo(
                builder=self,
                features=f.FeaturesDict(
                    {
                        "image": f.Image(shape=(None, None, 3)),
                        "label": f.ClassLabel(names=["cat", "dog"]),
                        "caption": f.Text(),
                        "objects": f.Sequence({"bbox": f.BBoxFeature(), "label": f.ClassLabel(names=["a"])}),
                    }
                ),
            )

        def _split_generators(self, dl_manager: Any) -> Any:
            return {"train": self._generate_examples(3), "test": self._generate_examples(2)}

        def _generate_examples(self, count: int) -> Any:
            for i in range(count):
                yield (
                    i,
                    {
                        "image": np.full((5 + i, 7, 3), 40 * i, np.uint8),
                        "label": i % 2,
                        "caption": f"caption {i}",
                        "objects": {"bbox": [tfds.features.BBox(0.1, 0.2, 0.5, 0.6)], "label": [0]},
                    },
                )

    Tiny(data_dir=str(data_dir)).download_and_prepare()


@pytest.mark.slow
def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    _prepare(in_tmp_path / "tensorflow_datasets")
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "tfds.md")
    namespace = page_examples.run_python_blocks(blocks)
    assert namespace["tiny"].skipped == ()
    python = [b for b in blocks if b.language == "python"]
    assert all(b.output for b in python)
    reference = page_examples.code_blocks(page_examples.root / "docs" / "reference" / "cli.md")
    for block in [b for b in blocks + reference if b.language == "console" and "convert" in b.body]:
        if (in_tmp_path / "data" / "tiny").exists():
            shutil.rmtree(in_tmp_path / "data" / "tiny")
        assert run_console_block(block.body)
    assert (in_tmp_path / "data" / "tiny" / "dataset.json").is_file()
