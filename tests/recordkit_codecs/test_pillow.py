"""The header checks the image codec runs on every image it keeps: JPEG segment walks
(the quick walk over plain segments and the careful one for everything else) and the
end-of-image check, on JPEG bytes built segment by segment."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest
from PIL import Image

import recordkit as rk
from recordkit_codecs._pillow import check_structure, read_header

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
