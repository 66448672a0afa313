"""docs/tutorials/image-folder.md: on a generated folder of real JPEG photos (three
classes, of different sizes), the page's examples run and print what it shows, and the
dataset they write holds the photos byte for byte with the right labels and names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from make_tutorial_data import FLOWER_CLASSES as CLASSES
from make_tutorial_data import make_flower_photos
from PIL import Image

import recordkit as rk


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    photos = make_flower_photos(in_tmp_path / "flower_photos")
    blocks = page_examples.code_blocks(page_examples.root / "docs" / "tutorials" / "image-folder.md")
    page_examples.run_python_blocks(blocks)
    checked = [b for b in blocks if b.language == "text" and b.adjacent]
    assert len(checked) >= 6, "the page shows what its examples print"

    # The dataset holds every photo once, with its bytes unchanged, its class and its name.
    by_name = {path.name: path for path in photos}
    manifest = rk.Manifest.load("data/flowers")
    assert {name: s.num_records for name, s in manifest.splits.items()} == {"train": 18, "validation": 6}
    assert manifest.schema.fields["label"].options["names"] == sorted(CLASSES)
    seen = []
    for split in ("train", "validation"):
        for record in rk.iter_records("data/flowers", split):
            path = by_name[record["file"]]
            assert sorted(CLASSES)[record["label"]] == path.parent.name
            with Image.open(path) as original:
                np.testing.assert_array_equal(record["image"], np.asarray(original.convert("RGB")))
            seen.append(record["file"])
    assert sorted(seen) == sorted(by_name)
    stored = {}
    for shard in manifest.split("train").shards:
        for data in tf.data.TFRecordDataset(f"data/flowers/{shard.file}"):
            feature = tf.train.Example.FromString(data.numpy()).features.feature
            stored[feature["file"].bytes_list.value[0].decode()] = feature["image"].bytes_list.value[0]
    assert len(stored) == 18
    assert all(data == by_name[name].read_bytes() for name, data in stored.items()), "format keep"

    # The Keras-ready pipeline, as the page builds it: floats in [0, 1] of one size,
    # labels that are the classes' ids, and the same pixels as a resize by hand.
    batches = list(
        rk.load_dataset("data/flowers", fields=["image", "label", "file"], batch_size=18, image_size=(64, 64))
    )
    assert len(batches) == 1
    images = tf.cast(batches[0]["image"], tf.float32) / 255.0
    assert images.shape == (18, 64, 64, 3)
    assert float(tf.reduce_min(images)) >= 0.0
    assert float(tf.reduce_max(images)) <= 1.0
    first = by_name[batches[0]["file"][0].numpy().decode()]
    with Image.open(first) as original:
        by_hand = tf.image.resize(np.asarray(original), (64, 64))
    np.testing.assert_allclose(images[0].numpy(), np.round(by_hand.numpy()) / 255.0, atol=1.01 / 255)
    assert (Path("flowers-by-hand.tfrecord")).is_file()
