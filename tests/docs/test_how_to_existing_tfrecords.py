"""docs/how-to/existing-tfrecords.md: its examples run and print what the page shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import recordkit as rk


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "how-to" / "existing-tfrecords.md")
    namespace = page_examples.run_python_blocks(blocks)
    assert (in_tmp_path / "detection.tfrecord").is_file()
    # the segmentation file is the tutorial's: no depth key, the 3 channels a constant
    segmentation = namespace["segmentation"]
    assert set(rk.feature_spec(segmentation)) == {"image_raw", "mask_raw", "height", "width"}
    assert segmentation.fields["image"].keys["shape"] == ["height", "width", 3]
    python = [b for b in blocks if b.language == "python"]
    assert all(b.output for b in python[1:]), "every example after the first prints what it shows"
