"""docs/tutorials/where-the-bytes-go.md: on ten generated JPEG and PNG files (photo-like,
two PNGs with transparency), the page's examples and commands run and print what it
shows, and the sizes it reports are those of the datasets on disk, ordered as it says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from _console import run_console_block
from PIL import Image

import recordkit as rk


def _photo(rng: np.random.Generator, height: int, width: int, noise: float) -> np.ndarray:
    """Photo-like pixels: smooth colour waves and soft detail, with some sensor noise."""
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    waves = np.stack(
        [np.sin(rng.uniform(3, 12) * x + rng.uniform(2, 8) * y + rng.uniform(0, 6)) for _ in range(3)], -1
    )
    coarse = rng.integers(0, 256, (height // 16 + 1, width // 16 + 1, 3), dtype=np.uint8)
    soft = Image.fromarray(coarse).resize((width, height), Image.Resampling.BICUBIC)
    detail = (np.asarray(soft, np.float64) - 128) / 4
    pixels = rng.integers(60, 200, 3) + 50 * waves + detail + rng.normal(0, noise, (height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8)


def make_images(root: Path) -> list[Path]:
    """Six JPEG photos (quality 90), two PNG photos, and two PNG cut-outs whose corners
    are transparent (an opaque ellipse on a transparent ground)."""
    rng = np.random.default_rng(18)
    root.mkdir()
    paths = []
    for i in range(10):
        height, width = (int(v) for v in rng.integers(240, 400, 2))
        pixels = _photo(rng, height, width, noise=1.0)
        if i < 6:
            path = root / f"photo-{i}.jpg"
            Image.fromarray(pixels).save(path, "JPEG", quality=90)
        elif i < 8:
            path = root / f"scan-{i}.png"
            Image.fromarray(pixels).save(path)
        else:
            y, x = np.mgrid[0:height, 0:width]
            inside = ((x - width / 2) / (width / 2)) ** 2 + ((y - height / 2) / (height / 2)) ** 2 < 1
            path = root / f"cutout-{i}.png"
            Image.fromarray(np.dstack([pixels, (inside * 255).astype(np.uint8)])).save(path)
        paths.append(path)
    return paths


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
