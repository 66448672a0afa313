"""docs/tutorials/where-the-bytes-go.md: on ten generated JPEG and PNG files (photo-like,
two PNGs with transparency), the page's examples and commands run and print what it
shows, and the sizes it reports are those of the datasets on disk, ordered as it says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from _console import run_console_block
from make_tutorial_data import make_images
from PIL import Image

import recordkit as rk


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    files = make_images(in_tmp_path / "images")
    on_disk = sum(path.stat().st_size for path in files)
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "tutorials" / "where-the-bytes-go.md")
    page_examples.run_python_blocks(blocks)
    checked = [b for b in blocks if b.language == "text" and b.adjacent]
    assert len(checked) >= 5, "the page shows what its examples print"
    ran = [c.argv[1] for b in blocks if b.language == "console" for c in run_console_block(b.body)]
    assert ran == ["inspect", "inspect"]

    def size(name: str) -> int:
        """The dataset's shards on disk (which the page reads from the manifest)."""
        shards = rk.Manifest.load(f"data/{name}").split("train").shards
        return sum((in_tmp_path / "data" / name / shard.file).stat().st_size for shard in shards)

    sizes = {name: size(name) for name in ("raw", "keep", "png", "jpeg-100", "jpeg-95")}
    # The order the page states: raw pixels several times the files; keep the files plus
    # about a hundred bytes a record; re-encoding the PNGs as JPEG saves, more at 95.
    assert sizes["raw"] > 4 * on_disk
    assert on_disk < sizes["keep"] < on_disk + 150 * len(files)
    assert sizes["raw"] > sizes["png"] > sizes["keep"] > sizes["jpeg-100"] > sizes["jpeg-95"]

    # Raw pixels are the arrays back, exactly; keep gives the files' pixels too.
    by_name = {path.name: path for path in files}
    for raw, kept in zip(rk.iter_records("data/raw"), rk.iter_records("data/keep"), strict=True):
        assert raw["file"] == kept["file"]
        with Image.open(by_name[raw["file"]]) as original:
            np.testing.assert_array_equal(raw["image"], np.asarray(original))
            np.testing.assert_array_equal(kept["image"], np.asarray(original))
    # Flattened onto white: the transparent corners of the cut-outs are white, not black.
    for record in rk.iter_records("data/jpeg-95"):
        assert record["image"].shape[2] == 3
        if record["file"].startswith("cutout"):
            assert record["image"][:4, :4].min() >= 245
