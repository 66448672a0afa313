"""docs/tutorials/segmentation.md: on a miniature Pascal VOC (JPEG photos, palette PNG
masks with a void border, the VOC folder layout), the page's examples run and print what
it shows; what they read equals the files, the random crop cuts image and mask at the
same place (padding the mask with the void index), windows differ from record to record
and repeat with the seed, and full-size validation batches pad masks with the void index."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import numpy as np
from make_tutorial_data import VOID, make_voc
from PIL import Image

import recordkit as rk

PAGE = Path("docs") / "tutorials" / "segmentation.md"


def originals(root: Path, names: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    voc = root / "VOCdevkit" / "VOC2012"
    return [
        (
            np.asarray(Image.open(voc / "JPEGImages" / f"{name}.jpg")),
            np.asarray(Image.open(voc / "SegmentationClass" / f"{name}.png")),
        )
        for name in names
    ]


def window(original: np.ndarray, offset: np.ndarray, size: tuple[int, int], fill: int) -> np.ndarray:
    """The window of ``size`` at ``offset`` (top, left; negative: padding first) of
    ``original``, padded with ``fill`` where it reaches outside."""
    margin = max(size)
    canvas = np.full(
        (original.shape[0] + 2 * margin, original.shape[1] + 2 * margin, *original.shape[2:]),
        fill,
        original.dtype,
    )
    canvas[margin : margin + original.shape[0], margin : margin + original.shape[1]] = original
    top, left = (int(v) + margin for v in offset)
    return canvas[top : top + size[0], left : left + size[1]]


def crop_origin(
    crop_image: np.ndarray,
    crop_mask: np.ndarray,
    offset: np.ndarray,
    train: list[tuple[np.ndarray, np.ndarray]],
) -> int:
    """Which original ``crop_image`` was cut from at ``offset`` (exactly one must
    match, pixel for pixel, padding 0); the mask must be the same original's mask cut at
    the same place, padded with the void index."""
    size = crop_mask.shape
    found = [
        index
        for index, (image, _) in enumerate(train)
        if np.array_equal(window(image, offset, size, 0), crop_image)
    ]
    assert len(found) == 1, f"the crop matches {len(found)} originals at {offset.tolist()}"
    mask = train[found[0]][1]
    assert np.array_equal(window(mask, offset, size, VOID), crop_mask), (
        "the mask was not cut where the image was"
    )
    return found[0]


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    names = make_voc(in_tmp_path)
    blocks = page_examples.code_blocks(page_examples.root / PAGE)
    schemas = [b for b in blocks if b.language == "yaml"]
    assert len(schemas) == 1
    (in_tmp_path / "voc.yaml").write_text(schemas[0].body, encoding="utf-8")

    seen = page_examples.run_python_blocks(blocks)

    # The dataset: both splits, every image once, listed in the manifest.
    manifest = rk.Manifest.load(in_tmp_path / "data" / "voc")
    assert {name: split.num_records for name, split in manifest.splits.items()} == {"train": 8, "val": 4}
    stored = [
        record["name"] for split in ("train", "val") for record in rk.iter_records("data/voc", split, "name")
    ]
    assert stored == names
    printed = [b for b in blocks if b.language == "text" and b.adjacent]
    assert len(printed) == 6, "every step shows what it prints"
    # The pascal_voc source wrote the same images and masks as the page's generator.
    for split in ("train", "val"):
        by_hand = list(rk.iter_records("data/voc", split, fields=["image", "mask"]))
        by_source = list(rk.iter_records("data/voc-source", split, fields=["image", "mask"]))
        assert len(by_source) == len(by_hand)
        for ours, theirs in zip(by_source, by_hand, strict=True):
            np.testing.assert_array_equal(ours["mask"], theirs["mask"])
            np.testing.assert_array_equal(ours["image"], theirs["image"])

    # The training batches: crops of the originals, image and mask cut at the same place,
    # padded with 0 (image) and 255 (mask) where an original is smaller than the crop.
    crop = seen["CROP"]
    train = originals(in_tmp_path, names[:8])
    sources, windows = [], []
    batches = [{k: v.numpy() for k, v in batch.items()} for batch in seen["train"].take(6)]
    for batch in batches:
        assert batch["image"].shape == (4, *crop, 3)
        assert batch["mask"].shape == (4, *crop)
        np.testing.assert_array_equal(batch["image/offset"], batch["mask/offset"])  # one window
        for image, mask, offset in zip(batch["image"], batch["mask"], batch["mask/offset"], strict=True):
            source = crop_origin(image, mask, offset, train)
            sources.append(source)
            windows.append((source, tuple(offset.tolist())))
            height, width = train[source][1].shape
            top, left = (int(v) for v in offset)
            assert (0 <= top <= height - crop[0]) if height >= crop[0] else (height - crop[0] <= top <= 0)
            assert (0 <= left <= width - crop[1]) if width >= crop[1] else (width - crop[1] <= left <= 0)
    assert len(set(sources)) > 1, "the batches mix several images"
    padded_ones = {
        i for i, (image, _) in enumerate(train) if image.shape[0] < crop[0] or image.shape[1] < crop[1]
    }
    assert set(sources) & padded_ones, "some crops hold padding (void in the mask)"
    assert any((b["mask"] == VOID).all(axis=2).any() for b in batches), "whole rows of void padding"
    # Windows differ from record to record, and an image seen twice (6 batches of 4 from 8
    # images: every image is seen again) is cut elsewhere the second time.
    assert len({offset for _, offset in windows}) > len(windows) // 2
    roomy = {i for i, (image, _) in enumerate(train) if image.shape[0] > crop[0] and image.shape[1] > crop[1]}
    again = [w for w in windows if w[0] in roomy]
    assert len(set(again)) > len({source for source, _ in again}), "a second epoch crops elsewhere"
    # The same seed gives the same windows: the page's block run again (a new dataset
    # from the same call) prints the same windows and gives the same crops.
    (block,) = [b for b in blocks if b.language == "python" and "random_crop_or_pad" in b.body]
    again_seen = dict(seen)
    printed_again = io.StringIO()
    with contextlib.redirect_stdout(printed_again):
        exec(compile(block.body, "<the crop block, again>", "exec", dont_inherit=True), again_seen)
    assert printed_again.getvalue() == block.output
    repeat = [{k: v.numpy() for k, v in batch.items()} for batch in again_seen["train"].take(6)]
    for first, second in zip(batches, repeat, strict=True):
        np.testing.assert_array_equal(first["mask/offset"], second["mask/offset"])
        np.testing.assert_array_equal(first["mask"], second["mask"])

    # Validation at full size: padded to the batch's largest, masks with the void index.
    val = originals(in_tmp_path, names[8:])
    batch = seen["batch"]
    assert batch["mask/shape"].numpy().tolist() == [list(mask.shape) for _, mask in val]
    for i, (image, mask) in enumerate(val):
        height, width = mask.shape
        got_image, got_mask = batch["image"][i].numpy(), batch["mask"][i].numpy()
        np.testing.assert_array_equal(got_image[:height, :width], image)
        np.testing.assert_array_equal(got_mask[:height, :width], mask)
        assert (got_mask[height:] == VOID).all()
        assert (got_mask[:, width:] == VOID).all()
        assert (got_image[height:] == 0).all()
        assert (got_image[:, width:] == 0).all()
