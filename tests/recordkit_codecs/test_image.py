"""Tests of the ``image`` codec: real PNG/JPEG bytes made with Pillow, real TFRecord files,
real batched tf.data pipelines through the parser generated from the schema."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _codec_io import (
    SingleField,
    assert_stored_near_payload,
    field_share,
    png_with_header,
    read_numpy,
    read_tf,
    run_doc_example_first,
    write,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

import recordkit as rk
from recordkit.format._example import (  # private: builds and reads Example bytes by hand
    decode_example,
    encode_example,
    encode_feature,
)
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)
from recordkit.testing import BadInput, CodecCase, check_codec
from recordkit_codecs.image import ImageCodec, ImageOptions

FIELD = "photo"


# -- helpers -----------------------------------------------------------------------------


def pixels(height: int, width: int, channels: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (height, width) if channels == 1 else (height, width, channels)
    return rng.integers(0, 256, shape, dtype=np.uint8)


def smooth(height: int, width: int) -> np.ndarray:
    """An RGB gradient: JPEG keeps it close, unlike noise."""
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), (x + y) % 256], -1).astype(
        np.uint8
    )


def encoded(array_or_image: np.ndarray | Image.Image, fmt: str, **save: Any) -> bytes:
    image = array_or_image if isinstance(array_or_image, Image.Image) else Image.fromarray(array_or_image)
    buffer = io.BytesIO()
    image.save(buffer, fmt, **save)
    return buffer.getvalue()


def hwc(array: np.ndarray) -> np.ndarray:
    return array[:, :, None] if array.ndim == 2 else array


def stored(image_field: SingleField, value: Any, **options: Any) -> dict[str, Any]:
    """The encoded bytes and the stored shape the Example holds for the field."""
    wire = image_field.wire(value, **options)
    return {"bytes": wire[""], "shape": tuple(int(wire[k]) for k in ("height", "width", "channels"))}


# -- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_png_round_trip_is_exact_to_the_pixel(
    image_field: SingleField, tmp_path: Path, channels: int
) -> None:
    arrays = [pixels(5, 7, channels, 1), pixels(9, 4, channels, 2), pixels(3, 11, channels, 3)]
    # The same pixels given four ways: array, PNG bytes, a path, a PIL image.
    path = tmp_path / "third.png"
    path.write_bytes(encoded(arrays[2], "PNG"))
    values = [arrays[0], encoded(arrays[1], "PNG"), path, Image.fromarray(arrays[0])]
    expected = [arrays[0], arrays[1], arrays[2], arrays[0]]
    batches, numpy_values = image_field.round_trip(tmp_path, values, batch=4)
    (batch,) = batches
    import tensorflow as tf

    assert isinstance(batch, tf.RaggedTensor)
    assert batch.shape.as_list() == [4, None, None, channels]
    assert batch.dtype == tf.uint8
    for i, want in enumerate(expected):
        np.testing.assert_array_equal(batch[i].numpy(), hwc(want))
        np.testing.assert_array_equal(numpy_values[i], hwc(want))
        assert numpy_values[i].dtype == np.uint8


def test_every_array_layout_is_accepted(image_field: SingleField, tmp_path: Path) -> None:
    """uint8 H x W, H x W x 1, H x W x 3 and H x W x 4 arrays, each stored with its own
    channel count and read back exactly (one per batch: channel counts differ)."""
    gray = pixels(3, 4, 1, 1)
    arrays = [gray, gray[:, :, None], pixels(3, 4, 3, 2), pixels(3, 4, 4, 3)]
    assert [stored(image_field, a)["shape"] for a in arrays] == [(3, 4, 1), (3, 4, 1), (3, 4, 3), (3, 4, 4)]
    batches, numpy_values = image_field.round_trip(tmp_path, arrays, batch=1)
    for array, batch, from_numpy in zip(arrays, batches, numpy_values, strict=True):
        np.testing.assert_array_equal(batch[0].numpy(), hwc(array))
        np.testing.assert_array_equal(from_numpy, hwc(array))


def test_ragged_batch_rows_have_their_own_height_and_width(image_field: SingleField, tmp_path: Path) -> None:
    arrays = [pixels(2, 3, 3, 1), pixels(4, 1, 3, 2)]
    (batch,), _ = image_field.round_trip(tmp_path, arrays)
    assert batch.row_lengths(axis=1).numpy().tolist() == [2, 4]
    assert batch.values.row_lengths().numpy().tolist() == [3, 3, 1, 1, 1, 1]
    # The documented way to a dense, padded batch.
    dense = batch.to_tensor()
    assert dense.shape == (2, 4, 3, 3)
    np.testing.assert_array_equal(dense[1, :, :1].numpy(), arrays[1])
    assert not dense[0, 2:].numpy().any()


def test_fixed_size_decodes_to_a_dense_batch(image_field: SingleField, tmp_path: Path) -> None:
    import tensorflow as tf

    arrays = [pixels(6, 5, 3, seed) for seed in range(3)]
    batches, numpy_values = image_field.round_trip(tmp_path, arrays, batch=2, height=6, width=5, channels=3)
    assert all(isinstance(b, tf.Tensor) and not isinstance(b, tf.RaggedTensor) for b in batches)
    assert [b.shape.as_list() for b in batches] == [[2, 6, 5, 3], [1, 6, 5, 3]]
    np.testing.assert_array_equal(np.concatenate([b.numpy() for b in batches]), np.stack(arrays))
    np.testing.assert_array_equal(numpy_values[2], arrays[2])


def test_optional_and_default_fields(tmp_path: Path) -> None:
    """An optional image is absent (presence flag False, None in numpy) where a record
    leaves it out; a field with a default (a path, as schema files hold data) gets it."""
    placeholder = pixels(2, 3, 3, 9)
    default_path = tmp_path / "placeholder.png"
    default_path.write_bytes(encoded(placeholder, "PNG"))
    bound = rk.Schema(
        name="images",
        fields={
            "thumb": rk.FieldSpec(codec="image", options={"channels": 3}, optional=True),
            "photo": rk.FieldSpec(codec="image", options={"channels": 3}, default=str(default_path)),
        },
    ).bind()
    first, second = pixels(4, 5, 3, 1), pixels(3, 3, 3, 2)
    records: list[dict[str, Any]] = [{"thumb": first, "photo": second}, {}, {"thumb": second}]
    path = write(bound, records, tmp_path / "optional.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    assert batch["thumb/present"].numpy().tolist() == [True, False, True]
    np.testing.assert_array_equal(batch["thumb"][0].numpy(), first)
    assert batch["thumb"][1].shape[0] == 0  # an absent image has no rows
    np.testing.assert_array_equal(batch["thumb"][2].numpy(), second)
    for i, want in enumerate([second, placeholder, placeholder]):
        np.testing.assert_array_equal(batch["photo"][i].numpy(), want)

    rows = read_numpy(bound, path)
    assert rows[1]["thumb"] is None
    np.testing.assert_array_equal(rows[2]["thumb"], second)
    np.testing.assert_array_equal(rows[1]["photo"], placeholder)


def test_fixed_size_is_checked_on_write(image_field: SingleField) -> None:
    error = image_field.error(pixels(6, 4, 3), height=6, width=5)
    assert "image is 6x4 (height x width), the schema declares a fixed size of 6x5" in str(error)


def test_keep_stores_jpeg_bytes_byte_for_byte(image_field: SingleField, tmp_path: Path) -> None:
    jpeg = encoded(smooth(12, 16), "JPEG", quality=80)
    gray_jpeg = encoded(pixels(7, 9, 1), "JPEG", quality=90)
    path = tmp_path / "photo.jpg"
    path.write_bytes(jpeg)
    assert stored(image_field, jpeg, format="keep") == {"bytes": jpeg, "shape": (12, 16, 3)}
    assert stored(image_field, path, format="keep")["bytes"] == jpeg
    assert stored(image_field, gray_jpeg, format="keep") == {"bytes": gray_jpeg, "shape": (7, 9, 1)}
    # TensorFlow and Pillow decode the kept JPEG to the same pixels.
    # Mixed channel counts cannot share a batch (channels is not set): read them one by one.
    (first, second), numpy_values = image_field.round_trip(
        tmp_path, [jpeg, gray_jpeg], batch=1, format="keep"
    )
    for source, batch, from_numpy in zip((jpeg, gray_jpeg), (first, second), numpy_values, strict=True):
        with Image.open(io.BytesIO(source)) as original:
            np.testing.assert_array_equal(from_numpy, hwc(np.asarray(original)))
        # TensorFlow and Pillow decode the kept JPEG to the same pixels.
        np.testing.assert_array_equal(batch[0].numpy(), from_numpy)


def test_keep_stores_png_bytes_byte_for_byte(image_field: SingleField) -> None:
    for channels in (1, 3, 4):
        png = encoded(pixels(4, 6, channels), "PNG", compress_level=9)
        assert stored(image_field, png, format="keep") == {"bytes": png, "shape": (4, 6, channels)}


def test_keep_re_encodes_other_inputs_as_png(image_field: SingleField, tmp_path: Path) -> None:
    array = pixels(5, 6, 3)
    palette = Image.fromarray(array).quantize(colors=8)
    palette_png = encoded(palette, "PNG")
    bmp = encoded(array, "BMP")
    gray16 = encoded(Image.fromarray(pixels(4, 4, 1)).convert("I;16"), "PNG")
    kept = [stored(image_field, v, format="keep") for v in (palette_png, bmp)]
    assert all(k["bytes"].startswith(b"\x89PNG") for k in kept)
    assert kept[0]["bytes"] != palette_png
    _, numpy_values = image_field.round_trip(tmp_path, [palette_png, bmp], format="keep")
    np.testing.assert_array_equal(numpy_values[0], np.asarray(palette.convert("RGB")))
    np.testing.assert_array_equal(numpy_values[1], array)
    assert "more than 8 bits per sample" in str(image_field.error(gray16, format="keep"))


def test_keep_only_jpegs_and_encode_the_rest_as_jpeg(image_field: SingleField, tmp_path: Path) -> None:
    jpeg = encoded(smooth(12, 16), "JPEG", quality=80)
    png = encoded(smooth(10, 14), "PNG")
    options = {"format": "keep", "keep_formats": ["jpeg"], "fallback": "jpeg", "quality": 90}
    assert stored(image_field, jpeg, **options)["bytes"] == jpeg
    from_png = stored(image_field, png, **options)
    assert from_png["bytes"].startswith(b"\xff\xd8")  # re-encoded as JPEG, not kept
    assert from_png["bytes"] == encoded(Image.open(io.BytesIO(png)).convert("RGB"), "JPEG", quality=90)
    assert from_png["shape"] == (10, 14, 3)
    # JPEG's rules apply to what falls back to it: alpha is refused unless flattened.
    see_through = encoded(pixels(4, 4, 4), "PNG")
    assert "transparent pixels (alpha) and JPEG cannot store it" in str(
        image_field.error(see_through, **options)
    )
    assert stored(image_field, see_through, **options, alpha="flatten")["shape"] == (4, 4, 3)
    with pytest.raises(rk.errors.CodecOptionsError, match="JPEG cannot store 4 channels"):
        ImageCodec({**options, "channels": 4})
    # The options change what is stored: they are part of the fingerprint.
    prints = {image_field.bound(**o).fingerprint() for o in ({"format": "keep"}, options)}
    assert len(prints) == 2


def test_fallback_error_stores_only_the_kept_formats(image_field: SingleField, tmp_path: Path) -> None:
    jpeg = encoded(smooth(12, 16), "JPEG", quality=80)
    png = encoded(smooth(10, 14), "PNG")
    options = {"format": "keep", "keep_formats": ["jpeg"], "fallback": "error"}
    assert stored(image_field, jpeg, **options)["bytes"] == jpeg
    named_jpg = tmp_path / "screenshot.jpg"  # a PNG whatever its name says
    named_jpg.write_bytes(png)
    refused = "the image is a PNG; the codec stores only JPEG files unchanged (format: keep, fallback: error)"
    for value in (png, named_jpg):
        assert refused in str(image_field.error(value, **options))
    message = str(image_field.error(smooth(4, 4), **options))
    assert "expected encoded JPEG bytes or a path to them, got ndarray" in message
    gray_jpeg = encoded(smooth(6, 6)[:, :, 0], "JPEG")
    message = str(image_field.error(gray_jpeg, **options, channels=3))
    assert "the JPEG cannot be stored unchanged" in message
    # The default re-encodes what it cannot keep (as PNG), silently and losslessly.
    assert stored(image_field, png, format="keep", keep_formats=["jpeg"])["bytes"].startswith(b"\x89PNG")
    assert ImageOptions().fallback == "png"


def test_keep_with_other_channels_converts(image_field: SingleField, tmp_path: Path) -> None:
    gray = pixels(4, 5, 1)
    png = encoded(gray, "PNG")
    wire = stored(image_field, png, format="keep", channels=3)
    assert wire["shape"] == (4, 5, 3)
    (batch,), numpy_values = image_field.round_trip(tmp_path, [png], format="keep", channels=3)
    np.testing.assert_array_equal(numpy_values[0], np.repeat(gray[:, :, None], 3, axis=2))
    np.testing.assert_array_equal(batch[0].numpy(), numpy_values[0])


def test_jpeg_format_re_encodes_at_the_quality_asked(image_field: SingleField, tmp_path: Path) -> None:
    image = smooth(24, 32)
    low, high = (
        stored(image_field, image, format="jpeg", quality=30),
        stored(image_field, image, format="jpeg", quality=95),
    )
    assert low["bytes"].startswith(b"\xff\xd8\xff")
    assert high["bytes"].startswith(b"\xff\xd8\xff")
    assert len(low["bytes"]) < len(high["bytes"])
    (batch,), numpy_values = image_field.round_trip(tmp_path, [image], format="jpeg", quality=95)
    # TensorFlow decodes with the method Pillow uses, so both readers agree exactly.
    np.testing.assert_array_equal(batch[0].numpy(), numpy_values[0])
    assert np.abs(numpy_values[0].astype(int) - image).mean() < 3


def test_rgba_to_jpeg_is_an_error_unless_flattened(image_field: SingleField, tmp_path: Path) -> None:
    rgba = pixels(4, 4, 4)
    rgba[0, 0, 3] = 0  # fully transparent
    rgba[0, 1, 3] = 255  # opaque
    error = image_field.error(rgba, format="jpeg")
    assert "transparent pixels (alpha) and JPEG cannot store it" in str(error)
    assert "alpha: flatten" in str(error)
    # Flattened onto white in PNG (so the check is exact), then onto grey in JPEG.
    _, numpy_values = image_field.round_trip(
        tmp_path, [rgba], channels=3, alpha="flatten", background=[255, 255, 255]
    )
    flat = numpy_values[0]
    assert flat.shape == (4, 4, 3)
    np.testing.assert_array_equal(flat[0, 0], [255, 255, 255])
    np.testing.assert_array_equal(flat[0, 1], rgba[0, 1, :3])
    alpha = rgba[..., 3:].astype(float) / 255
    np.testing.assert_allclose(flat, rgba[..., :3] * alpha + 255 * (1 - alpha), atol=1)
    wire = stored(image_field, rgba, format="jpeg", alpha="flatten", background=[128, 128, 128])
    assert wire["bytes"].startswith(b"\xff\xd8")
    assert wire["shape"] == (4, 4, 3)


def test_opaque_alpha_is_dropped_without_an_error(image_field: SingleField) -> None:
    rgba = pixels(3, 3, 4)
    rgba[..., 3] = 255
    assert stored(image_field, rgba, format="jpeg")["shape"] == (3, 3, 3)
    assert stored(image_field, rgba, channels=3)["shape"] == (3, 3, 3)
    assert stored(image_field, rgba)["shape"] == (3, 3, 4)  # png, channels as the input


def test_channels_option_converts(image_field: SingleField, tmp_path: Path) -> None:
    rgb = pixels(4, 5, 3)
    gray = pixels(4, 5, 1)
    _, numpy_values = image_field.round_trip(tmp_path, [rgb], channels=1)
    np.testing.assert_array_equal(numpy_values[0][:, :, 0], np.asarray(Image.fromarray(rgb).convert("L")))
    _, numpy_values = image_field.round_trip(tmp_path, [gray], channels=4)
    np.testing.assert_array_equal(numpy_values[0][:, :, :3], np.repeat(gray[:, :, None], 3, axis=2))
    assert (numpy_values[0][:, :, 3] == 255).all()
    transparent = pixels(4, 5, 4)
    transparent[..., 3] = 10
    assert "channels is 3" in str(image_field.error(transparent, channels=3))


def test_options_that_contradict_each_other_are_schema_errors() -> None:
    with pytest.raises(rk.errors.CodecOptionsError, match="JPEG cannot store 4 channels"):
        ImageCodec({"format": "jpeg", "channels": 4})
    with pytest.raises(rk.errors.CodecOptionsError, match="both height and width"):
        ImageCodec({"height": 4})
    with pytest.raises(rk.errors.CodecOptionsError, match="quality"):
        ImageCodec({"quality": 0})
    with pytest.raises(rk.errors.CodecOptionsError, match="background"):
        ImageCodec({"background": [0, 0, 256]})


# -- bad inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize("verify", ["structure", "decode"])
def test_corrupt_and_truncated_images_are_refused(image_field: SingleField, verify: str) -> None:
    png = encoded(pixels(16, 16, 3), "PNG")
    jpeg = encoded(smooth(32, 32), "JPEG")
    assert "not a readable image" in str(image_field.error(b"certainly not an image", verify=verify))
    assert "corrupt or truncated PNG" in str(image_field.error(png[: len(png) // 2], verify=verify))
    truncated_jpeg = image_field.error(jpeg[: len(jpeg) // 2], format="keep", verify=verify)
    assert "corrupt or truncated JPEG" in str(truncated_jpeg)
    assert "IHDR header is missing" in str(image_field.error(png[:20], verify=verify))
    # A flipped byte inside the image data: the chunk CRC no longer matches.
    damaged = bytearray(png)
    damaged[png.index(b"IDAT") + 10] ^= 0xFF
    message = str(image_field.error(bytes(damaged), format="keep", verify=verify))
    assert "corrupt" in message
    assert "PNG" in message


def test_keep_checks_structure_without_decoding_pixels(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify: structure stores good JPEG/PNG bytes without ever asking Pillow to decode."""
    png = encoded(pixels(16, 12, 4), "PNG")
    jpeg = encoded(smooth(32, 24), "JPEG")

    def no_decoding(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Pillow was asked to open the image")

    monkeypatch.setattr(Image, "open", no_decoding)
    codec = ImageCodec({"format": "keep"})
    assert codec.encode(png) == {"": png, "height": 16, "width": 12, "channels": 4}
    assert codec.encode(jpeg) == {"": jpeg, "height": 32, "width": 24, "channels": 3}


def test_decompression_bombs_are_refused(image_field: SingleField, monkeypatch: pytest.MonkeyPatch) -> None:
    # The codec's own limit.
    error = image_field.error(pixels(20, 20, 3), max_pixels=100)
    assert "20x20 = 400 pixels is over the limit of 100 pixels" in str(error)
    assert "over the limit of 100" in str(
        image_field.error(encoded(pixels(20, 20, 3), "PNG"), max_pixels=100)
    )
    # A crafted PNG header claiming 100000 x 100000 pixels, refused before any decoding.
    bomb = png_with_header(100_000, 100_000)
    assert "100000x100000 = 10000000000 pixels is over the limit" in str(image_field.error(bomb))
    assert "decompression-bomb guard" in str(image_field.error(bomb, format="keep"))
    # Pillow's global limit is honoured even when the codec's is higher.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 50)
    assert "over the limit of 50 pixels" in str(image_field.error(encoded(pixels(10, 10, 1), "PNG")))


def test_wrong_values_are_refused(image_field: SingleField, tmp_path: Path) -> None:
    assert "must be uint8" in str(image_field.error(np.zeros((4, 4, 3), np.float32)))
    assert "got shape (4, 4, 2)" in str(image_field.error(np.zeros((4, 4, 2), np.uint8)))
    assert "is empty" in str(image_field.error(np.zeros((0, 4), np.uint8)))
    assert "expected encoded image bytes, a path" in str(image_field.error(12))
    missing = tmp_path / "nope.png"
    assert f"cannot read image file {str(missing)!r}" in str(image_field.error(missing))
    assert "more than 8 bits per sample" in str(image_field.error(Image.new("I;16", (3, 3))))
    assert "cannot read image file" in str(image_field.error("bad\0path.png"))
    # A PIL image opened lazily from a truncated file fails when its pixels are needed.
    png = encoded(pixels(32, 32, 3), "PNG")
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(png[: len(png) // 2])
    with Image.open(truncated) as lazy:
        assert "the PIL image cannot be loaded" in str(image_field.error(lazy))


def _lying_record(height: int, width: int, channels: int, png: bytes) -> bytes:
    """An Example whose stored size disagrees with its PNG (a damaged or foreign record)."""
    wire = rk.WireKind
    return encode_example(
        [
            (FIELD.encode(), encode_feature(wire.BYTES, [png])),
            (f"{FIELD}/height".encode(), encode_feature(wire.INT64, np.array([height]))),
            (f"{FIELD}/width".encode(), encode_feature(wire.INT64, np.array([width]))),
            (f"{FIELD}/channels".encode(), encode_feature(wire.INT64, np.array([channels]))),
        ]
    )


def test_decoding_checks_the_stored_size(image_field: SingleField) -> None:
    import tensorflow as tf

    png = encoded(pixels(4, 5, 3), "PNG")
    bound = image_field.bound()
    good, bad = _lying_record(4, 5, 3, png), _lying_record(4, 6, 3, png)
    parser = rk.make_parser(bound)
    assert parser(tf.constant([good]))[FIELD].shape.as_list() == [1, None, None, 3]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"image codec: .*differs from the height"):
        parser(tf.constant([good, bad]))
    with pytest.raises(rk.errors.DecodeError, match=r"record 7, field 'photo'.*stores \(4, 6, 3\)"):
        decode_record_numpy(bound.fields, bad, index=7)


@pytest.mark.parametrize(
    ("height", "width"),
    [(33, 41), (33, 39), (32, 40), (34, 40)],
    ids=["wider", "narrower", "shorter", "taller"],
)
def test_a_jpeg_whose_stored_size_lies_is_refused_not_misread(
    image_field: SingleField, height: int, width: int
) -> None:
    """The numpy reader decodes JPEGs into an image of the frame header's size, never
    the record's: a record claiming another size is refused, naming record and field
    (a wider image would otherwise show memory the decoder never wrote)."""
    jpeg = encoded(smooth(33, 40), "JPEG", quality=90)
    with pytest.raises(
        rk.errors.DecodeError,
        match=rf"record 4, field 'photo'.*decoded image is \(33, 40, 3\).*stores \({height}, {width}, 3\)",
    ):
        decode_record_numpy(image_field.bound().fields, _lying_record(height, width, 3, jpeg), index=4)


def test_both_readers_give_the_same_pixels_for_jpegs_of_every_common_kind(
    image_field: SingleField, tmp_path: Path
) -> None:
    """Kept JPEGs of the kinds the numpy reader decodes without Image.open (4:2:0,
    4:2:2, 4:4:4, progressive, RGB-coded, restart markers, grayscale): tf.data's
    INTEGER_ACCURATE decode and the numpy decode agree to the pixel."""
    array = smooth(37, 45)
    saves: list[dict[str, Any]] = [
        {"subsampling": 2},
        {"subsampling": 1},
        {"subsampling": 0},
        {"progressive": True},
        {"keep_rgb": True},
        {"restart_marker_blocks": 2},
    ]
    jpegs = [encoded(array, "JPEG", quality=90, **save) for save in saves]
    jpegs.append(encoded(pixels(37, 45, 1, seed=3), "JPEG", quality=90))
    batches, numpy_values = image_field.round_trip(tmp_path, jpegs, batch=1, format="keep")
    for source, batch, from_numpy in zip(jpegs, batches, numpy_values, strict=True):
        with Image.open(io.BytesIO(source)) as original:
            np.testing.assert_array_equal(from_numpy, hwc(np.asarray(original)))
        np.testing.assert_array_equal(batch[0].numpy(), from_numpy)


def test_both_readers_give_the_same_pixels_with_the_fast_dct(
    image_field: SingleField, tmp_path: Path
) -> None:
    """``jpeg_dct: fast`` (TensorFlow's INTEGER_FAST) in both readers: the numpy decode
    uses libjpeg's fast DCT too, so the two agree to the pixel, for every common kind of
    JPEG; and the pixels are not the accurate ones."""
    import tensorflow as tf

    array = pixels(37, 45, 3, seed=5)  # noise: the two DCTs round it differently
    saves: list[dict[str, Any]] = [{"subsampling": 2}, {"subsampling": 0}, {"progressive": True}]
    jpegs = [encoded(array, "JPEG", quality=90, **save) for save in saves]
    jpegs.append(encoded(pixels(37, 45, 1, seed=3), "JPEG", quality=90))
    batches, numpy_values = image_field.round_trip(tmp_path, jpegs, batch=1, format="keep", jpeg_dct="fast")
    for source, batch, from_numpy in zip(jpegs, batches, numpy_values, strict=True):
        np.testing.assert_array_equal(batch[0].numpy(), from_numpy)
        gray = from_numpy.shape[-1] == 1
        fast = tf.io.decode_jpeg(source, channels=1 if gray else 3, dct_method="INTEGER_FAST")
        np.testing.assert_array_equal(from_numpy, fast.numpy())
    accurate = [hwc(np.asarray(Image.open(io.BytesIO(source)))) for source in jpegs]
    assert any(not np.array_equal(a, f) for a, f in zip(accurate, numpy_values, strict=True))


def test_mixed_channel_counts_in_one_batch_fail_clearly(image_field: SingleField) -> None:
    import tensorflow as tf

    bound = image_field.bound()
    encoder = rk.RecordEncoder(bound)
    records = [encoder.encode({FIELD: pixels(3, 3, c)}) for c in (1, 3)]
    with pytest.raises(tf.errors.InvalidArgumentError, match="different channel counts"):
        rk.make_parser(bound)(tf.constant(records))


# -- bytes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "value"),
    [
        ({"format": "png"}, pixels(32, 48, 3)),
        ({"format": "jpeg", "quality": 90}, smooth(32, 48)),
        ({"format": "keep"}, encoded(smooth(32, 48), "JPEG")),
    ],
)
def test_stored_bytes_are_the_encoded_image(
    image_field: SingleField, options: dict[str, Any], value: Any
) -> None:
    bound = image_field.bound(**options)
    data = rk.RecordEncoder(bound).encode({FIELD: value})
    payload = stored(image_field, value, **options)["bytes"]
    field_bytes = rk.byte_breakdown(bound, data)[FIELD]
    # Framing: each Example key's name plus a few bytes of tags, lengths and the int64 sizes.
    framing = sum(len(key) + 16 for key in bound[FIELD].keys)
    assert len(payload) <= field_bytes <= len(payload) * 1.01 + framing
    # Stored raw, the pixels alone would take 32 * 48 * 3 = 4608 bytes.
    if options["format"] != "png":
        assert field_bytes < 32 * 48 * 3 / 2


def photo(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A photo-like RGB image: a gradient with sensor noise (neither trivially
    compressible nor pure noise)."""
    noise = np.random.default_rng(seed).integers(-12, 13, (height, width, 3))
    return np.clip(smooth(height, width).astype(int) + noise, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("fmt", ["keep", "png", "jpeg"])
def test_a_large_image_costs_its_encoded_bytes_by_the_byte_breakdown(
    image_field: SingleField, fmt: str
) -> None:
    """A 768 x 1024 photo: the field's share of the serialized record (rk.byte_breakdown)
    is the encoded file plus a few bytes of keys and sizes, never pixels."""
    array = photo(768, 1024)
    jpeg = encoded(array, "JPEG", quality=90)
    value = jpeg if fmt == "keep" else array
    bound = image_field.bound(format=fmt)
    data, share, _ = field_share(bound, FIELD, value)
    payload = decode_example(data)[FIELD][1][0]
    if fmt == "keep":
        assert payload == jpeg
    assert share == assert_stored_near_payload(bound, FIELD, value, len(payload))
    assert share - len(payload) < 100  # keys, tags, lengths and three int64 sizes
    assert share < array.nbytes / (1 if fmt == "png" else 4)  # raw pixels would be 2.4 MB


# -- properties --------------------------------------------------------------------------------


@given(
    hnp.arrays(
        np.uint8,
        st.tuples(st.integers(1, 6), st.integers(1, 6), st.sampled_from([1, 3, 4])),
        elements=st.integers(0, 255),
    )
)
def test_png_round_trip_property(array: np.ndarray) -> None:
    import tensorflow as tf

    codec = ImageCodec({"format": "png"})
    wire = codec.encode(array)
    assert (wire["height"], wire["width"], wire["channels"]) == array.shape
    np.testing.assert_array_equal(codec.decode_numpy(wire), array)
    batch = {
        "": tf.constant([wire[""]]),
        **{k: tf.constant([wire[k]], tf.int64) for k in ("height", "width", "channels")},
    }
    np.testing.assert_array_equal(codec.decode_tf(batch)[0].numpy(), array)


@given(st.integers(1, 5), st.integers(1, 5), st.sampled_from([1, 3]), st.integers(0, 2**32 - 1))
def test_keep_round_trip_property(height: int, width: int, channels: int, seed: int) -> None:
    data = encoded(pixels(height, width, channels, seed), "JPEG", quality=75)
    codec = ImageCodec({"format": "keep"})
    wire = codec.encode(data)
    assert wire[""] == data
    with Image.open(io.BytesIO(data)) as original:
        np.testing.assert_array_equal(codec.decode_numpy(wire), hwc(np.asarray(original)))


# -- conformance ----------------------------------------------------------------------------------


def test_conformance_png(tmp_path: Path) -> None:
    rgba = pixels(3, 4, 4, 5)
    rgba[0, 0, 3] = 0
    report = check_codec(
        ImageCodec({"format": "png"}),
        cases=[
            CodecCase(pixels(4, 5, 3, 1), id="rgb"),
            CodecCase(encoded(pixels(2, 7, 3, 2), "PNG"), expected=pixels(2, 7, 3, 2), id="png bytes"),
            CodecCase(pixels(6, 3, 3, 3), id="rgb, taller"),
        ],
        bad_inputs=[
            BadInput(b"\x89PNG\r\n\x1a\n broken", match="corrupt PNG"),
            BadInput(np.zeros((2, 2), np.int32), match="must be uint8"),
            BadInput(png_with_header(60_000, 60_000), match="over the limit"),
        ],
        tmp_path=tmp_path,
    )
    assert "sequence field: tf.data batched decode" in report.checks


def test_conformance_keep_and_fixed_size(tmp_path: Path) -> None:
    jpegs = [encoded(smooth(8, 8), "JPEG", quality=q) for q in (60, 90)]
    expected = []
    for data in jpegs:
        with Image.open(io.BytesIO(data)) as image:
            expected.append(np.asarray(image))
    check_codec(
        ImageCodec({"format": "keep", "height": 8, "width": 8, "channels": 3}),
        cases=[CodecCase(d, expected=e) for d, e in zip(jpegs, expected, strict=True)],
        bad_inputs=[BadInput(encoded(smooth(8, 9), "JPEG"), match="8x9 .* fixed size of 8x8")],
        tmp_path=tmp_path,
    )


def test_conformance_jpeg(tmp_path: Path) -> None:
    """format: jpeg re-encodes at the quality asked; both readers give the pixels Pillow
    decodes from that JPEG."""
    arrays = [smooth(6, 8), photo(5, 9, 1), smooth(7, 7)]
    expected = []
    for array in arrays:
        with Image.open(io.BytesIO(encoded(array, "JPEG", quality=85))) as image:
            expected.append(np.asarray(image))
    rgba = pixels(4, 4, 4)
    rgba[0, 0, 3] = 0
    check_codec(
        ImageCodec({"format": "jpeg", "quality": 85}),
        cases=[CodecCase(a, expected=e) for a, e in zip(arrays, expected, strict=True)],
        bad_inputs=[BadInput(rgba, match="transparent pixels .* JPEG cannot store it")],
        tmp_path=tmp_path,
    )


# -- docs --------------------------------------------------------------------------------------


def test_docs_page_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/codecs/image.md: the example runs and prints what the page says (the other
    snippets run after it, on its results)."""
    namespace = run_doc_example_first("image.md", tmp_path, monkeypatch)
    printed = capsys.readouterr().out
    assert "(2, None, None, 3)\n(2, 8, 8, 3)\n" in printed
    assert 0 < int(printed.splitlines()[2]) < 100
    assert namespace["resized"].shape == (2, 224, 224, 3)
