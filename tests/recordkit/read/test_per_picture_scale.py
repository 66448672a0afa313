"""Where a field's pictures do not share one libjpeg scale (some too small to scale, the
others large), each picture decodes at its own scale, chosen from its stored size: the
largest of 1/8, 1/4, 1/2 at which it still covers the target, so that the resize after
it shrinks by less than twice. Both readers take that choice picture by picture, agree
within a level, and stay within 40 dB of the full decode resized with antialiasing, on
photos smooth and detailed, of several sizes and every kind of JPEG."""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from _photos import JPEG_KINDS, jpeg, photo, psnr

import recordkit as rk

SIZE = (224, 224)
#: Sides that reach each scale on their own: 1/2, 1/4, 1/8 (remaining shrink under 2x).
SCALED = [(500, 620), (1100, 1024), (2048, 1900), (1411, 1057)]
#: Too small to scale: with it in the dataset, no one scale fits every picture.
SMALL = (300, 260)
PHOTO = rk.Schema(name="photos", fields={"photo": rk.FieldSpec(codec="image", options={"format": "keep"})})


def _pictures() -> list[bytes]:
    kinds = list(JPEG_KINDS)
    pictures = [jpeg(photo(*SMALL, 0), "4:2:0")]
    for seed, (height, width) in enumerate(SCALED * 2, start=1):
        pictures.append(
            jpeg(photo(height, width, seed, detailed=seed > len(SCALED)), kinds[seed % len(kinds)])
        )
    return pictures


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[bytes]]:
    pictures = _pictures()
    root = tmp_path_factory.mktemp("mixed") / "data"
    rk.write_dataset([{"photo": data} for data in pictures], PHOTO, root, progress=False)
    return root, pictures


def _tf_read(root: Path, jpeg_scale: str = "auto") -> list[np.ndarray]:
    dataset = rk.load_dataset(root, image_size=SIZE, jpeg_scale=jpeg_scale)  # type: ignore[arg-type]
    return [record["photo"] for record in dataset.as_numpy_iterator()]


def _numpy_read(root: Path) -> list[np.ndarray]:
    geometry = rk.ImageGeometry(size=SIZE, fit="resize")
    return [record["photo"] for record in rk.open(root).records(geometry=geometry)]


def _reference(data: bytes) -> np.ndarray:
    """The full decode resized with antialiasing: what the quality is judged by."""
    full = tf.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE")
    return np.asarray(tf.saturate_cast(tf.round(tf.image.resize(full, SIZE, antialias=True)), tf.uint8))


def _as_picture(value: np.ndarray) -> np.ndarray:
    return value if value.ndim == 3 else value[..., None]


def test_the_dataset_fixes_no_one_scale_so_each_picture_takes_its_own(
    mixed: tuple[Path, list[bytes]], tmp_path: Path
) -> None:
    """Each picture read from the mixed dataset has the very pixels it has in a dataset of
    its own (where the recorded sizes fix that picture's scale for the field)."""
    root, pictures = mixed
    assert rk.Manifest.load(root).splits["train"].picture_sizes is not None
    together = _tf_read(root)
    for index, data in enumerate(pictures):
        alone = tmp_path / f"alone-{index}"
        rk.write_dataset([{"photo": data}], PHOTO, alone, progress=False)
        np.testing.assert_array_equal(together[index], _tf_read(alone)[0], err_msg=f"picture {index}")
    # Scaled pictures differ from the full decode's; the small one is the full decode's.
    full = _tf_read(root, "full")
    np.testing.assert_array_equal(together[0], full[0])
    for index in range(1, len(pictures)):
        assert not np.array_equal(together[index], full[index]), index


def test_each_pictures_own_scale_stays_within_40_db_of_the_full_decode_antialiased(
    mixed: tuple[Path, list[bytes]],
) -> None:
    root, pictures = mixed
    scores = [
        psnr(_as_picture(got), _reference(data)) for got, data in zip(_tf_read(root), pictures, strict=True)
    ]
    smooth, detailed = scores[1 : 1 + len(SCALED)], scores[1 + len(SCALED) :]
    assert statistics.mean(smooth) >= 40, smooth
    assert statistics.mean(detailed) >= 40, detailed
    assert min(scores) >= 38, scores


def test_the_numpy_reader_takes_the_same_scale_per_picture_and_agrees_with_tf_data_to_a_level(
    mixed: tuple[Path, list[bytes]],
) -> None:
    root, pictures = mixed
    mine, theirs = _numpy_read(root), _tf_read(root)
    assert len(mine) == len(theirs) == len(pictures)
    for index, (got, want) in enumerate(zip(mine, theirs, strict=True)):
        assert got.shape == want.shape, index
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1, index
