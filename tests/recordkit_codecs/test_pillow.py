"""The header checks the image codec runs on every image it keeps: JPEG segment walks
(the quick walk over plain segments and the careful one for everything else) and the
end-of-image check, on JPEG bytes built segment by segment; and the numpy reader's
JPEG decode, which skips Image.open for plain JPEGs: the same pixels on JPEGs of every
common kind Pillow writes, the fallback for the others, the pixel limits."""

from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np
import pytest
from _codec_io import png_with_header
from PIL import Image

import recordkit as rk
from recordkit_codecs import _pillow
from recordkit_codecs._pillow import DEFAULT_MAX_PIXELS, check_structure, decode_array, read_header

_APP0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + bytes(9)
_NO_FRAME = "corrupt or truncated JPEG: no frame header (SOF) before the image data"
_SCAN = b"\xff\xda" + struct.pack(">H", 8) + bytes(6) + b"\x12\x34\xff\xd9"


def _sof(height: int, width: int, components: int = 3) -> bytes:
    body = struct.pack(">BHHB", 8, height, width, components) + bytes(3 * components)
    return b"\xff\xc0" + struct.pack(">H", 2 + len(body)) + body


def _jpeg(*segments: bytes) -> bytes:
    return b"\xff\xd8" + b"".join(segments)


@pytest.mark.parametrize(
    "data",
    [
        _jpeg(_APP0, _sof(5, 7), _SCAN),
        _jpeg(_APP0, b"\xff\xff\xff", _sof(5, 7), _SCAN),  # fill bytes before a marker
        _jpeg(b"\xff\xd0", _APP0, b"\xff\x01", _sof(5, 7), _SCAN),  # standalone markers
        _jpeg(_APP0, b"\xff\xff" + _sof(5, 7)[1:], _SCAN),  # fill bytes before the frame header
    ],
    ids=["plain", "fill", "standalone", "fill-before-sof"],
)
def test_jpeg_headers_are_read_through_any_segment_layout(data: bytes) -> None:
    header = read_header(data)
    assert header is not None
    assert (header.format, header.height, header.width, header.components) == ("JPEG", 5, 7, 3)
    assert check_structure(data, header) == 3


def test_a_real_jpeg_header_matches_what_pillow_reads() -> None:
    out = io.BytesIO()
    Image.fromarray(np.full((13, 21, 3), 90, np.uint8)).save(out, format="JPEG")
    header = read_header(out.getvalue())
    assert header is not None
    assert (header.height, header.width, header.components) == (13, 21, 3)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_jpeg(_APP0, _sof(0, 7), _SCAN), "corrupt JPEG: the frame header declares a 7x0 image"),
        (_jpeg(_APP0, b"\xff\xe1\x00\x01", _sof(5, 7)), "corrupt JPEG: segment of length 1 at byte 22"),
        (_jpeg(_APP0, b"\x00\x00", _sof(5, 7)), "corrupt JPEG: no marker at byte 20"),
        (_jpeg(_APP0, _SCAN), _NO_FRAME),
        (_jpeg(_APP0, _sof(5, 7)[:8]), _NO_FRAME),
        (_jpeg(_APP0[:10]), _NO_FRAME),
    ],
    ids=["empty-frame", "bad-length", "no-marker", "scan-first", "short-frame", "truncated"],
)
def test_corrupt_jpeg_headers_say_what_is_wrong(data: bytes, message: str) -> None:
    with pytest.raises(rk.errors.InvalidValueError) as caught:
        read_header(data)
    assert caught.value.reason == message


def test_the_end_of_image_marker_may_be_followed_by_zero_padding_only() -> None:
    data = _jpeg(_APP0, _sof(5, 7), _SCAN)
    header = read_header(data)
    assert header is not None
    assert check_structure(data + bytes(5), header) == 3
    for cut in (data[:-1], data + b"\x01"):
        with pytest.raises(rk.errors.InvalidValueError, match="does not end with the end-of-image marker"):
            check_structure(cut, header)


# -- the numpy reader's JPEG decode (decode_array with the record's size) -------------------


def _photo(height: int, width: int, channels: int, seed: int = 0) -> np.ndarray:
    """Smooth colours with some noise: JPEG's chroma subsampling and DCT both matter."""
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(x * 7 + y * 3 + 60 * k) % 256 for k in range(channels)], -1)
    noise = np.random.default_rng(seed).integers(-25, 25, base.shape)
    array = np.clip(base + noise, 0, 255).astype(np.uint8)
    return array[:, :, 0] if channels == 1 else array


def _saved(array: np.ndarray | Image.Image, **save: Any) -> bytes:
    image = array if isinstance(array, Image.Image) else Image.fromarray(array)
    out = io.BytesIO()
    image.save(out, format="JPEG", **save)
    return out.getvalue()


def _pillow_open(data: bytes, mode: str) -> np.ndarray:
    """What the numpy reader decoded before: Image.open, load, convert when needed."""
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image if image.mode == mode else image.convert(mode))


_KINDS: dict[str, dict[str, Any]] = {
    "4:2:0": {"subsampling": 2},
    "4:2:2": {"subsampling": 1},
    "4:4:4": {"subsampling": 0},
    "progressive": {"progressive": True},
    "progressive-4:4:4": {"progressive": True, "subsampling": 0},
    "optimized": {"optimize": True},
    "adobe-rgb": {"keep_rgb": True},  # 3 components stored as RGB, not YCbCr
    "restart-markers": {"restart_marker_blocks": 3},
    "quality-100": {"quality": 100},
    "quality-5": {"quality": 5},
}


def _no_image_open(*args: object, **kwargs: object) -> None:
    raise AssertionError("the JPEG went through Image.open")


@pytest.mark.parametrize("size", [(1, 1), (1, 37), (17, 13), (64, 64), (201, 319)])
@pytest.mark.parametrize("kind", sorted(_KINDS))
@pytest.mark.parametrize("channels", [1, 3])
def test_a_plain_jpeg_decodes_without_image_open_to_the_same_pixels(
    size: tuple[int, int], kind: str, channels: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    height, width = size
    data = _saved(_photo(height, width, channels, seed=height + width), **_KINDS[kind])
    mode = "L" if channels == 1 else "RGB"
    expected = _pillow_open(data, mode)
    monkeypatch.setattr(_pillow, "open_image", _no_image_open)
    for padded in (data, data + bytes(3)):  # zero bytes after the end marker, as some writers leave
        pixels = decode_array(padded, DEFAULT_MAX_PIXELS, mode, size)
        assert pixels.dtype == np.uint8
        assert pixels.shape == expected.shape
        np.testing.assert_array_equal(pixels, expected)


def _cmyk() -> bytes:
    return _saved(Image.new("CMYK", (9, 7), (10, 200, 30, 5)))


def _count_image_opens(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The bytes of every image decode_array leaves to Image.open, from now on."""
    opened: list[bytes] = []
    real_open = _pillow.open_image

    def counting_open(data: bytes, *args: Any, **kwargs: Any) -> Image.Image:
        opened.append(data)
        return real_open(data, *args, **kwargs)

    monkeypatch.setattr(_pillow, "open_image", counting_open)
    return opened


@pytest.mark.parametrize(
    ("data", "mode", "size"),
    [
        (_saved(_photo(8, 9, 3)), "L", (8, 9)),  # a conversion: Image.open, then convert
        (_saved(_photo(8, 9, 1)), "RGB", (8, 9)),
        (_cmyk(), "RGB", (7, 9)),  # 4 components: Image.open inverts Adobe CMYK
        (_saved(_photo(8, 9, 3)), "RGB", (8, 10)),  # the record's size is not the frame's
        (_saved(_photo(8, 9, 3)), "RGB", None),  # no size given
    ],
    ids=["rgb-as-gray", "gray-as-rgb", "cmyk", "other-size", "no-size"],
)
def test_other_jpegs_go_through_image_open(
    data: bytes, mode: str, size: tuple[int, int] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = _count_image_opens(monkeypatch)
    expected = _pillow_open(data, mode)
    np.testing.assert_array_equal(decode_array(data, DEFAULT_MAX_PIXELS, mode, size), expected)
    assert opened == [data]


def test_a_truncated_jpeg_fails_as_it_did_through_image_open() -> None:
    data = _saved(_photo(40, 40, 3))
    with pytest.raises(rk.errors.DecodeError, match="corrupt or truncated JPEG"):
        decode_array(data[: len(data) // 2], DEFAULT_MAX_PIXELS, "RGB", (40, 40))


def test_a_truncated_jpeg_decodes_as_image_open_does_when_pillow_loads_truncated_images(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from PIL import ImageFile

    cut = _saved(_photo(40, 40, 3))[:-300]
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    opened = _count_image_opens(monkeypatch)
    np.testing.assert_array_equal(
        decode_array(cut, DEFAULT_MAX_PIXELS, "RGB", (40, 40)), _pillow_open(cut, "RGB")
    )
    assert opened == [cut]


def test_a_jpeg_libjpeg_warns_about_decodes_as_image_open_decodes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Junk before the end marker: libjpeg decodes it with a warning ("extraneous bytes
    # before marker"), which the quick decode takes as a refusal; Image.open decodes it.
    data = _saved(_photo(24, 32, 3))
    assert data.endswith(b"\xff\xd9")
    warned = data[:-2] + b"\x12\x34\x56" + data[-2:]
    opened = _count_image_opens(monkeypatch)
    pixels = decode_array(warned, DEFAULT_MAX_PIXELS, "RGB", (24, 32))
    np.testing.assert_array_equal(pixels, _pillow_open(warned, "RGB"))
    assert opened == [warned]


def test_the_pixel_limits_hold_before_the_jpeg_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _saved(_photo(20, 30, 3))
    monkeypatch.setattr(_pillow, "open_image", _no_image_open)  # refused before any decoding
    with pytest.raises(rk.errors.DecodeError, match="30x20 = 600 pixels is over the limit of 100 pixels"):
        decode_array(data, 100, "RGB", (20, 30))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 50)
    with pytest.raises(rk.errors.DecodeError, match=r"over the limit of 50 pixels .*MAX_IMAGE_PIXELS"):
        decode_array(data, DEFAULT_MAX_PIXELS, "RGB", (20, 30))


@pytest.mark.parametrize("walked_size", [(10, 15), (21, 30)], ids=["smaller", "larger"])
def test_simplejpeg_decodes_only_into_the_size_checked(
    walked_size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A JPEG whose size the quick header walk reads otherwise than libjpeg (crafted, say):
    # simplejpeg decodes into an array of the size the walk read and checked, so a larger
    # frame does not fit and a smaller one does not fill it; Image.open decides both.
    data = _saved(_photo(20, 30, 3))
    walked = read_header(data)
    assert walked is not None
    height, width = walked_size
    monkeypatch.setattr(_pillow, "_jpeg_header", lambda *_: walked._replace(height=height, width=width))
    opened = _count_image_opens(monkeypatch)
    # Pillow decodes what it reads; the image codec then reports the record's other size.
    assert decode_array(data, DEFAULT_MAX_PIXELS, "RGB", walked_size).shape == (20, 30, 3)
    assert opened == [data]


def test_a_png_bomb_is_refused_on_read_before_it_is_decoded() -> None:
    bomb = png_with_header(100_000, 100_000)
    with pytest.raises(rk.errors.DecodeError, match=r"100000x100000 = 10000000000 pixels is over the limit"):
        decode_array(bomb, DEFAULT_MAX_PIXELS, "L", (100_000, 100_000))


def test_the_jpeg_frame_kind_and_precision_are_read() -> None:
    baseline = read_header(_saved(_photo(5, 6, 3)))
    progressive = read_header(_saved(_photo(5, 6, 3), progressive=True))
    assert baseline is not None
    assert progressive is not None
    assert (baseline.frame, baseline.precision) == (0xC0, 8)
    assert (progressive.frame, progressive.precision) == (0xC2, 8)
    twelve_bit = read_header(_jpeg(_APP0, _sof(5, 7)[:4] + b"\x0c" + _sof(5, 7)[5:], _SCAN))
    assert twelve_bit is not None
    assert twelve_bit.precision == 12


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "LA", "P", "1", "I;16", "I", "F"])
@pytest.mark.parametrize("size", [(1, 1), (7, 5), (333, 2)])
def test_pixels_array_gives_what_np_asarray_gives(mode: str, size: tuple[int, int]) -> None:
    rng = np.random.default_rng(7)
    image = Image.fromarray(rng.integers(0, 256, (size[1], size[0], 4), dtype=np.uint8), "RGBA").convert(mode)
    expected = np.asarray(image, dtype=np.uint8)
    pixels = _pillow.pixels_array(image)
    assert pixels.dtype == np.uint8
    assert pixels.shape == expected.shape
    assert np.array_equal(pixels, expected)
    assert pixels.flags.writeable == expected.flags.writeable
    assert pixels.flags.c_contiguous


def test_pixels_array_loads_a_lazily_opened_image() -> None:
    source = np.arange(6 * 4 * 3, dtype=np.uint8).reshape(6, 4, 3)
    buffer = io.BytesIO()
    Image.fromarray(source).save(buffer, "PNG")
    with Image.open(io.BytesIO(buffer.getvalue())) as image:
        assert np.array_equal(_pillow.pixels_array(image), source)
