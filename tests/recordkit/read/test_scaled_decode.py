"""tf.data reads that resize JPEGs decode them at the largest libjpeg scale that still
covers ``image_size`` (``jpeg_scale="auto"``), then resize onto the full picture's
geometry; ``jpeg_scale="full"`` decodes at full size."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _photos import JPEG_KINDS, jpeg, photo, psnr

import recordkit as rk

SIZE = (224, 224)
#: The sides of the large photos (each kind of JPEG, smooth and detailed, takes the next):
#: multiples of 8 and not, reaching the scales 1/4 and 1/8.
LARGE = [(1024, 1024), (1411, 1057), (1001, 1283), (2048, 1536), (1800, 1920)]


def _write(tmp_path: Path, pictures: list[bytes], name: str = "data") -> Path:
    photo_field = rk.FieldSpec(codec="image", options={"format": "keep"})
    schema = rk.Schema(name="photos", fields={"photo": photo_field})
    rk.write_dataset([{"photo": data} for data in pictures], schema, tmp_path / name, progress=False)
    return tmp_path / name


def _read(root: Path, **layout: Any) -> dict[str, list[np.ndarray]]:
    """Every record's values, read one by one (gray and colour pictures do not batch)."""
    records = list(rk.load_dataset(root, image_size=SIZE, **layout).as_numpy_iterator())
    return {key: [record[key] for record in records] for key in records[0]}


def _resized(data: bytes, fit: str, *, antialias: bool = False, method: str = "bilinear") -> np.ndarray:
    """The full decode resized by ``fit`` as tf.image does it, rounded to uint8; with
    ``antialias``, what a downscale should give (the reference the quality is judged by)."""
    full = tf.io.decode_jpeg(data, dct_method="INTEGER_ACCURATE")
    if fit == "resize":
        resized = tf.image.resize(full, SIZE, method=method, antialias=antialias)
    else:
        resized = tf.image.resize_with_pad(full, *SIZE, method=method, antialias=antialias)
    return np.asarray(tf.saturate_cast(tf.round(resized), tf.uint8))


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[bytes]]:
    cases = [(kind, detailed) for kind in JPEG_KINDS for detailed in (False, True)]
    pictures = [
        jpeg(photo(*LARGE[seed % len(LARGE)], seed, detailed=detailed), kind)
        for seed, (kind, detailed) in enumerate(cases)
    ]
    return _write(tmp_path_factory.mktemp("large"), pictures), pictures


@pytest.mark.slow
@pytest.mark.parametrize("fit", ["resize", "resize_with_pad"])
def test_scaled_decode_is_within_40_db_of_the_full_decode_resized(
    large: tuple[Path, list[bytes]], fit: str
) -> None:
    """Against the full decode resized with antialiasing (the reference a downscale is
    judged by), the scaled decode's pixels are at least 40 dB on average, and never
    further from it than the full decode's own resize (which aliases: bilinear without
    antialiasing samples a 1,024 px picture every 4.6 pixels)."""
    root, pictures = large
    scaled = _read(root, image_fit=fit)["photo"]
    full = _read(root, image_fit=fit, jpeg_scale="full")["photo"]
    from_scaled, from_full = [], []
    for index, data in enumerate(pictures):
        ideal = _resized(data, fit, antialias=True)
        from_scaled.append(psnr(scaled[index], ideal))
        from_full.append(psnr(full[index], ideal))
        assert from_scaled[-1] >= from_full[-1], index
    assert statistics.mean(from_scaled) >= 40.0, from_scaled


@pytest.mark.slow
def test_a_scaled_picture_lands_where_the_full_picture_is_resized_to(tmp_path: Path) -> None:
    """A bright square on a dark ground, in pictures whose sides are not multiples of
    the scale (the last scaled row stands for part of a block): after the resize its
    centre is where the resize of the full picture puts the square's centre, to 0.15
    pixels (the resampling's own error; the full decode's aliased resize misses it by up to
    0.4). Resizing the scaled picture as if it covered whole blocks moves it by 0.3 to
    0.8 pixels here."""
    squares = [(1001, 1285, 700, 1000), (1793, 1797, 1500, 1500), (905, 2049, 600, 1800)]
    pictures = []
    for height, width, top, left in squares:
        picture = np.full((height, width, 3), 30, np.uint8)
        picture[top : top + 160, left : left + 160] = 220
        pictures.append(jpeg(picture, "4:4:4", quality=95))
    root = _write(tmp_path, pictures)
    for fit in ("resize", "resize_with_pad"):
        scaled = _read(root, image_fit=fit)["photo"]
        for picture, (height, width, top, left) in zip(scaled, squares, strict=True):
            sides = np.array([height, width], np.float32)
            if fit == "resize":
                inner, offset = np.array(SIZE, np.float32), np.zeros(2, np.float32)
            else:  # tf.image.resize_with_pad's arithmetic, in float32 as it is done
                ratio = max(sides / np.array(SIZE, np.float32))
                inner = np.floor(sides / ratio)
                offset = np.floor((np.array(SIZE, np.float32) - sides / ratio) / 2)
            # Pixel centres at i + 0.5: the square's centre, in output pixel indices.
            want = (np.array([top, left]) + 80) * inner / sides + offset - 0.5
            assert np.abs(_centre(picture) - want).max() < 0.15, (fit, height, width)


def _centre(picture: np.ndarray) -> np.ndarray:
    """Where the bright square's mass (above the ground's 30) is centred, (row, column)
    in output pixel indices; padding (0) weighs nothing."""
    values = picture[..., 0].astype(np.float64)
    weight = np.where(values > 0, values - 30, 0)
    rows, cols = np.mgrid[0 : picture.shape[0], 0 : picture.shape[1]]
    return np.array([(rows * weight).sum(), (cols * weight).sum()]) / weight.sum()


@pytest.mark.parametrize("fit", ["resize", "resize_with_pad"])
def test_pictures_too_small_to_scale_decode_exactly_as_before(tmp_path: Path, fit: str) -> None:
    """200 to 320 px JPEGs read to 224 x 224 (no scale covers it): the same pixels as a
    full decode resized, exactly; so are PNGs."""
    rng = np.random.default_rng(3)
    pictures = [
        jpeg(photo(int(h), int(w), seed), kind)
        for seed, (kind, (h, w)) in enumerate(
            (kind, rng.integers(200, 321, 2)) for kind in JPEG_KINDS for _ in range(3)
        )
    ]
    root = _write(tmp_path, pictures)
    auto = _read(root, image_fit=fit)
    full = _read(root, image_fit=fit, jpeg_scale="full")
    for key in ("photo", "photo/shape"):
        for got, want in zip(auto[key], full[key], strict=True):
            np.testing.assert_array_equal(got, want)
    for index, data in enumerate(pictures):
        np.testing.assert_array_equal(auto["photo"][index], _resized(data, fit))


def test_jpeg_scale_full_and_methods_that_do_not_interpolate_decode_at_full_size(tmp_path: Path) -> None:
    """``jpeg_scale="full"`` gives the full decode resized (tf.image.resize of
    decode_jpeg); so does ``"nearest"`` (a scaled decode would blend pixels), whatever
    jpeg_scale says; and the shapes reported are the full pictures'."""
    pictures = [jpeg(photo(1100, 1500, 0), "4:2:0"), jpeg(photo(1900, 1800, 1, detailed=True), "4:4:4")]
    root = _write(tmp_path, pictures)
    full = _read(root, jpeg_scale="full")
    auto = _read(root)
    assert not np.array_equal(full["photo"][0], auto["photo"][0])  # scaled: other pixels
    nearest = _read(root, image_method="nearest")
    for index, data in enumerate(pictures):
        np.testing.assert_array_equal(full["photo"][index], _resized(data, "resize"))
        np.testing.assert_array_equal(nearest["photo"][index], _resized(data, "resize", method="nearest"))
        assert auto["photo/shape"][index].tolist() == list(tf.io.extract_jpeg_shape(data).numpy())


def test_jpeg_scale_takes_auto_or_full(tmp_path: Path) -> None:
    root = _write(tmp_path, [jpeg(photo(64, 64, 0), "4:2:0")])
    with pytest.raises(ValueError, match="jpeg_scale must be one of auto, full, not 'half'"):
        rk.load_dataset(root, image_size=SIZE, jpeg_scale="half")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="jpeg_scale must be one of auto, full"):
        rk.Layout(image_size=SIZE, jpeg_scale="fast")  # type: ignore[arg-type]
    batch = next(iter(rk.open(root).tf(batch_size=1, layout=rk.Layout(image_size=SIZE, jpeg_scale="full"))))
    assert batch["photo"].shape == (1, *SIZE, 3)


@pytest.mark.slow
def test_the_geometry_carries_jpeg_scale_as_load_dataset_does(tmp_path: Path) -> None:
    """``rk.ImageGeometry(jpeg_scale=...)`` decodes as ``load_dataset(jpeg_scale=...)``;
    a bad value is refused when the geometry is made, and a read given both a geometry
    and ``jpeg_scale="full"`` is refused rather than one silently winning."""
    pictures = [jpeg(photo(1100, 1500, 0), "4:2:0")]
    root = _write(tmp_path, pictures)
    for scale in ("auto", "full"):
        geometry = rk.ImageGeometry(size=SIZE, jpeg_scale=scale)  # type: ignore[arg-type]
        through_geometry = next(iter(rk.open(root).tf(batch_size=1, geometry=geometry)))["photo"][0]
        np.testing.assert_array_equal(through_geometry, _read(root, jpeg_scale=scale)["photo"][0])
    with pytest.raises(ValueError, match="jpeg_scale must be one of auto, full, not 'half'"):
        rk.ImageGeometry(size=SIZE, jpeg_scale="half")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        rk.open(root).tf(layout=rk.Layout(jpeg_scale="full"), geometry=rk.ImageGeometry(size=SIZE))


@pytest.mark.slow
@pytest.mark.parametrize("fit", ["resize", "resize_with_pad"])
def test_the_numpy_reader_decodes_at_scale_and_agrees_with_tf_data_to_a_level(
    tmp_path: Path, fit: str
) -> None:
    """``ds.records(geometry=...)`` (and so PyTorch and Grain) decodes large JPEGs at a
    reduced scale too: its pixels differ from its own full decode's, and match tf.data's
    scaled read within one level (the same samples, float rounding apart); a picture too
    small to scale reads as with ``jpeg_scale="full"``."""
    pictures = [
        jpeg(photo(1100, 1500, 0), "4:2:0"),
        jpeg(photo(1900, 1800, 1, detailed=True), "4:4:4"),
        jpeg(photo(300, 250, 2), "4:2:0"),
    ]
    root = _write(tmp_path, pictures)
    auto = rk.ImageGeometry(size=SIZE, fit=fit)  # type: ignore[arg-type]
    full = rk.ImageGeometry(size=SIZE, fit=fit, jpeg_scale="full")  # type: ignore[arg-type]
    numpy_auto = [r["photo"] for r in rk.open(root).records(geometry=auto)]
    numpy_full = [r["photo"] for r in rk.open(root).records(geometry=full)]
    tf_auto = [r["photo"] for r in rk.open(root).tf(geometry=auto).as_numpy_iterator()]
    for index, (mine, theirs) in enumerate(zip(numpy_auto, tf_auto, strict=True)):
        assert mine.shape == (*SIZE, 3)
        assert np.abs(mine.astype(int) - theirs).max() <= 1, index
    assert not np.array_equal(numpy_auto[0], numpy_full[0])
    assert not np.array_equal(numpy_auto[1], numpy_full[1])
    np.testing.assert_array_equal(numpy_auto[2], numpy_full[2])


def test_small_and_large_pictures_of_one_dataset_take_each_their_decode(tmp_path: Path) -> None:
    """In one dataset, a picture under twice the size takes the plain decode (the very
    pixels of ``jpeg_scale="full"``) and a large one the scaled decode (other pixels)."""
    pictures = [jpeg(photo(260, 300, 5), "4:2:0"), jpeg(photo(1024, 1024, 6), "4:2:0")]
    root = _write(tmp_path, pictures)
    auto = _read(root)["photo"]
    full = _read(root, jpeg_scale="full")["photo"]
    np.testing.assert_array_equal(auto[0], full[0])
    np.testing.assert_array_equal(auto[0], _resized(pictures[0], "resize"))
    assert not np.array_equal(auto[1], full[1])
