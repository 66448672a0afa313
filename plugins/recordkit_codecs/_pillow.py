"""Pillow helpers shared by the ``image`` and ``mask`` codecs: reading untrusted inputs safely.

Every image a codec reads goes through the same gate: the format is sniffed from the
first bytes, the size of a PNG or JPEG is read from its header (IHDR, SOF) *before*
Pillow decodes anything, and the pixel count is checked against the codec's
``max_pixels`` and Pillow's own ``Image.MAX_IMAGE_PIXELS``. Only then is the image
decoded; a corrupt, truncated or oversized image becomes an ``InvalidValueError`` (when
writing) or a ``DecodeError`` (when reading) that says why.

The numpy reader decodes plain JPEGs with simplejpeg rather than Pillow (the same
libjpeg-turbo and the same pixels, with the GIL released; see :func:`_jpeg_array`);
every other image, and any JPEG simplejpeg refuses, goes through Pillow.
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import NamedTuple

import numpy as np
import simplejpeg
from PIL import Image, UnidentifiedImageError

import recordkit as rk

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "Header",
    "check_pixels",
    "check_structure",
    "decode_array",
    "decode_array_scaled",
    "load",
    "open_image",
    "pixel_limit",
    "pixels_array",
    "read_header",
    "save",
]

#: Pillow's default ``Image.MAX_IMAGE_PIXELS`` (about 89.5 megapixels), written out so a
#: schema's fingerprint does not depend on a global someone may have changed.
DEFAULT_MAX_PIXELS = 1024 * 1024 * 1024 // 4 // 3

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_SIGNATURE = b"\xff\xd8\xff"

# JPEG start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) share the range.
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_STANDALONE_MARKERS = frozenset([0x01, *range(0xD0, 0xD9)])

Error = type[rk.errors.RecordkitError]


class Header(NamedTuple):
    """What the first bytes of a PNG or JPEG say, read without decoding pixels.

    A named tuple, not a frozen dataclass: one is made for every image a writer
    keeps, and a tuple is made several times faster."""

    format: str  # "PNG" or "JPEG"
    width: int
    height: int
    #: PNG: bit depth and colour type from IHDR; JPEG: None.
    bit_depth: int | None = None
    color_type: int | None = None
    #: JPEG: number of colour components in the frame; PNG: None.
    components: int | None = None
    #: JPEG: the start-of-frame marker's code (0xC0 baseline, 0xC2 progressive ...) and
    #: the sample precision in bits; PNG: None.
    frame: int | None = None
    precision: int | None = None


def sniff(data: bytes) -> str | None:
    """``"PNG"``, ``"JPEG"`` or None (another format, or not an image) from the signature."""
    if data.startswith(PNG_SIGNATURE):
        return "PNG"
    if data.startswith(JPEG_SIGNATURE):
        return "JPEG"
    return None


def _png_header(data: bytes, error: Error) -> Header:
    # Signature (8), then the IHDR chunk: length (4) "IHDR" width height depth colour ...
    if len(data) < 33 or data[12:16] != b"IHDR":
        raise error("corrupt PNG: the IHDR header is missing or truncated")
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    if width == 0 or height == 0:
        raise error(f"corrupt PNG: the header declares a {width}x{height} image")
    return Header("PNG", width, height, bit_depth=depth, color_type=color)


_U16 = struct.Struct(">H")
_SEGMENT = struct.Struct(">BBH")  # 0xFF, the marker's code, the segment's length
_SOF_FIELDS = struct.Struct(">BHHB")  # after the length: precision, height, width, components
#: Markers the quick walk of :func:`_jpeg_header` leaves to the careful one.
_NOT_PLAIN = _STANDALONE_MARKERS | {0xD9, 0xDA, 0xFF}


def _jpeg_header(data: bytes, error: Error) -> Header:
    # Walks the segments before the frame header (a few: APPn, DQT...), reading lengths
    # in place (no slices): this runs for every JPEG a writer keeps. First quickly, one
    # unpack per segment, over plain segments (marker, length >= 2, payload); anything
    # else (fill bytes, standalone markers, a bad length, a short or empty frame header,
    # the end of the data) is left, from that segment on, to the careful walk below,
    # which says what is wrong.
    pos = 2
    end = len(data)
    unpack_segment = _SEGMENT.unpack_from
    while pos + 4 <= end:
        ff, marker, length = unpack_segment(data, pos)
        if ff != 0xFF or marker in _NOT_PLAIN or length < 2:
            break
        if marker in _SOF_MARKERS:
            if pos + 10 > end:
                break
            precision, height, width, components = _SOF_FIELDS.unpack_from(data, pos + 4)
            if width == 0 or height == 0:
                break
            return Header("JPEG", width, height, None, None, components, marker, precision)
        pos += 2 + length
    unpack_u16 = _U16.unpack_from
    while pos < end:
        # Markers are 0xFF followed by a code; any number of 0xFF fill bytes may precede it.
        if data[pos] != 0xFF:
            raise error(f"corrupt JPEG: no marker at byte {pos}")
        pos += 1
        while pos < end and data[pos] == 0xFF:
            pos += 1
        if pos >= end:
            break
        marker = data[pos]
        pos += 1
        if marker in _STANDALONE_MARKERS:
            continue
        if marker == 0xD9 or marker == 0xDA:  # end of image or start of scan before any frame
            break
        if pos + 2 > end:
            break
        (length,) = unpack_u16(data, pos)
        if length < 2:
            raise error(f"corrupt JPEG: segment of length {length} at byte {pos}")
        if marker in _SOF_MARKERS:
            if pos + 8 > end:
                break
            precision, height, width, components = _SOF_FIELDS.unpack_from(data, pos + 2)
            if width == 0 or height == 0:
                raise error(f"corrupt JPEG: the frame header declares a {width}x{height} image")
            return Header("JPEG", width, height, None, None, components, marker, precision)
        pos += length
    raise error("corrupt or truncated JPEG: no frame header (SOF) before the image data")


def read_header(data: bytes, error: Error = rk.errors.InvalidValueError) -> Header | None:
    """The header of PNG or JPEG ``data``; None for other formats.

    Raises ``error`` when the bytes claim to be PNG/JPEG but the header is broken.
    """
    kind = sniff(data)
    if kind == "PNG":
        return _png_header(data, error)
    if kind == "JPEG":
        return _jpeg_header(data, error)
    return None


def _png_chunks_ok(data: bytes, error: Error) -> bool:
    """Walk every PNG chunk, checking its CRC; True when the image has no tRNS chunk
    (a transparent colour, which TensorFlow's decoder ignores and Pillow applies)."""
    pos = len(PNG_SIGNATURE)
    transparent = False
    while pos + 12 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            break
        (crc,) = struct.unpack(">I", data[end - 4 : end])
        if zlib.crc32(data[pos + 4 : end - 4]) != crc:
            raise error(f"corrupt PNG: CRC mismatch in chunk {kind.decode('latin-1')!r} at byte {pos}")
        transparent = transparent or kind == b"tRNS"
        if kind == b"IEND":
            return not transparent
        pos = end
    raise error("corrupt or truncated PNG: it ends before its IEND chunk")


def check_structure(data: bytes, header: Header, error: Error = rk.errors.InvalidValueError) -> int | None:
    """Check PNG/JPEG bytes without decoding pixels; return the channel count TensorFlow
    and Pillow would both decode them to, or None when they may differ (so the caller
    re-encodes instead of keeping the bytes).

    PNG: every chunk's CRC and the closing IEND chunk (catches truncation and bit flips).
    JPEG: the frame header and the closing end-of-image marker (catches truncation;
    JPEG has no checksum, so damage inside the compressed data is only found by a full
    decode, the codec's ``verify: decode``).
    """
    if header.format == "PNG":
        if not _png_chunks_ok(data, error) or header.bit_depth != 8:
            return None
        return {0: 1, 2: 3, 6: 4}.get(header.color_type or -1)
    # The common JPEG ends with the marker itself: checked in place; only one padded
    # with zero bytes pays for rstrip's copy of the whole image.
    if not data.endswith(b"\xff\xd9") and data.rstrip(b"\x00")[-2:] != b"\xff\xd9":
        raise error("corrupt or truncated JPEG: it does not end with the end-of-image marker")
    return {1: 1, 3: 3}.get(header.components or -1)


def pixel_limit(max_pixels: int) -> int:
    """The effective limit: the codec's ``max_pixels`` and Pillow's global, whichever is lower."""
    pillow = Image.MAX_IMAGE_PIXELS
    return min(max_pixels, int(pillow)) if pillow else max_pixels


def check_pixels(
    width: int, height: int, max_pixels: int, error: Error = rk.errors.InvalidValueError
) -> None:
    """Refuse an image with more pixels than :func:`pixel_limit` allows (decompression bombs)."""
    limit = pixel_limit(max_pixels)
    if width * height > limit:
        raise error(
            f"image of {width}x{height} = {width * height} pixels is over the limit of {limit} pixels "
            "(decompression-bomb guard: the codec's max_pixels option and PIL.Image.MAX_IMAGE_PIXELS)"
        )


def open_image(
    data: bytes, max_pixels: int, *, verify: bool = False, error: Error = rk.errors.InvalidValueError
) -> Image.Image:
    """Decode ``data`` fully with Pillow after the header and pixel-limit checks.

    ``verify`` also runs Pillow's ``verify()`` first (for PNG it checks every chunk's
    CRC, which a plain decode skips for the image data), as needed before storing the
    bytes unchanged.
    """
    header = read_header(data, error)
    if header is not None:
        check_pixels(header.width, header.height, max_pixels, error)
    try:
        if verify:
            with Image.open(io.BytesIO(data)) as probe:
                probe.verify()
        image = Image.open(io.BytesIO(data))
        check_pixels(image.width, image.height, max_pixels, error)
        image.load()
    except Image.DecompressionBombError as exc:
        raise error(f"decompression bomb refused by Pillow: {exc}") from None
    except UnidentifiedImageError:
        if header is not None:
            raise error(f"corrupt or truncated {header.format}: Pillow cannot read it") from None
        raise error(f"not a readable image ({_describe_start(data)})") from None
    except (OSError, SyntaxError, ValueError, struct.error, EOFError) as exc:
        name = header.format if header is not None else "image"
        raise error(f"corrupt or truncated {name}: {exc}") from None
    return image


def load(image: Image.Image) -> None:
    """Make sure a PIL image given by a record has its pixels (a lazily opened image whose
    file is truncated or closed fails here, as an InvalidValueError)."""
    try:
        image.load()
    except (OSError, SyntaxError, ValueError, struct.error, EOFError) as exc:
        raise rk.errors.InvalidValueError(f"the PIL image cannot be loaded: {exc}") from None


def save(image: Image.Image, fmt: str, *, quality: int = 95) -> bytes:
    """Encode ``image`` as PNG or JPEG."""
    buffer = io.BytesIO()
    if fmt == "JPEG":
        image.save(buffer, "JPEG", quality=quality)
    else:
        image.save(buffer, "PNG")
    return buffer.getvalue()


def decode_array(
    data: bytes,
    max_pixels: int,
    mode: str | None,
    size: tuple[int, int] | None = None,
    *,
    fast_dct: bool = False,
) -> np.ndarray:
    """Stored bytes to a uint8 array (read side); errors are ``DecodeError``.

    ``mode`` converts the decoded image (``"L"``, ``"RGB"``, ``"RGBA"``) when given.
    ``size`` is the ``(height, width)`` the record says the image has: a plain JPEG of
    that size already in ``mode`` is decoded by :func:`_jpeg_array` (with libjpeg's
    fast DCT when ``fast_dct``: TensorFlow's ``INTEGER_FAST``, the same pixels);
    anything else, or an image that does not decode that way, by :func:`open_image`
    (Pillow, whose JPEG decode has only the accurate DCT at full size).
    """
    if size is not None and data[:3] == JPEG_SIGNATURE:
        pixels = _jpeg_array(data, max_pixels, mode, size, fast_dct)
        if pixels is not None:
            return pixels
    image = open_image(data, max_pixels, error=rk.errors.DecodeError)
    if mode is not None and image.mode != mode:
        image = image.convert(mode)
    return pixels_array(image)


#: JPEG frames :func:`_jpeg_array` decodes: Huffman-coded baseline, extended sequential
#: and progressive (SOF0 to SOF2, nearly every JPEG); the rarer kinds go to Image.open.
_PLAIN_FRAMES = frozenset({0xC0, 0xC1, 0xC2})
#: The mode Pillow's JPEG plugin gives a frame of 1 or 3 components (4, CMYK, is left
#: to Image.open, which inverts Adobe CMYK).
_JPEG_MODES = {1: "L", 3: "RGB"}


def decode_array_scaled(
    data: bytes,
    max_pixels: int,
    mode: str | None,
    size: tuple[int, int],
    scale: int,
    *,
    fast_dct: bool = False,
) -> tuple[np.ndarray, int]:
    """A JPEG of ``size`` (height, width) decoded at 1/``scale`` of its size in libjpeg's
    IDCT (``scale`` 1, 2, 4 or 8: ``ceil(height / scale) x ceil(width / scale)`` pixels,
    the pixels TensorFlow's ``decode_jpeg(ratio=scale)`` gives), and the scale used.
    The JPEGs :func:`decode_array` leaves to Pillow (CMYK, 12-bit, arithmetic-coded,
    lossless), and any other image, decode at full size: scale 1."""
    if scale > 1 and data[:3] == JPEG_SIGNATURE:
        pixels = _jpeg_array(data, max_pixels, mode, size, fast_dct, scale)
        if pixels is not None:
            return pixels, scale
    return decode_array(data, max_pixels, mode, size, fast_dct=fast_dct), 1


def _jpeg_array(
    data: bytes,
    max_pixels: int,
    mode: str | None,
    size: tuple[int, int],
    fast_dct: bool = False,
    scale: int = 1,
) -> np.ndarray | None:
    """Decode a plain JPEG with simplejpeg, or None to leave it to :func:`open_image`.

    Why: ``Image.open`` reads the JPEG's markers in Python, ``load`` feeds the decoder
    in 64 KiB blocks, Pillow allocates and zeroes the image and packs its pixels into
    the array, all holding the GIL, which is what kept the numpy reader's threads from
    decoding on every core. simplejpeg decodes the whole JPEG into a numpy array in one
    call that releases the GIL, with libjpeg-turbo as Pillow does and with the
    arguments Pillow gives it (libjpeg's own guess of the colour space, its ISLOW DCT,
    its smooth chroma upsampling), so the pixels are the same as Pillow's and as the
    tf.data reader's (tested for every kind of JPEG Pillow writes). With ``fast_dct``
    the DCT is libjpeg's IFAST, TensorFlow's ``INTEGER_FAST``: the tf.data reader's
    pixels for ``jpeg_dct: fast``.

    Taken only when the frame is 8-bit, of a plain kind (:data:`_PLAIN_FRAMES`), in
    ``mode`` already (no conversion), and of the record's ``size``, so the frame
    header, not the record, sets the array's size; a record that disagrees goes to
    Image.open, which reports the mismatch. The pixel limits are checked first, as
    Image.open's path does, and simplejpeg decodes into an array of that checked size
    (by itself it would allocate the size libjpeg reads: a JPEG crafted so that the two
    readers of its header disagree cannot make it allocate past the limits). A JPEG
    simplejpeg refuses, or decodes only with a warning (``strict``: truncated or
    corrupt data), also goes to Image.open, so errors and
    ``ImageFile.LOAD_TRUNCATED_IMAGES`` behave as they always did.

    ``scale`` (2, 4, 8) decodes at that fraction of the size in libjpeg's IDCT; simplejpeg
    is held to exactly that factor (``min_factor`` and the minimum sides), so that it picks
    none of libjpeg-turbo's other factors (3/8, 5/8 ...), which TensorFlow cannot use.
    """
    header = _jpeg_header(data, rk.errors.DecodeError)
    natural = _JPEG_MODES.get(header.components or 0)
    if (
        natural is None
        or (mode is not None and mode != natural)
        or header.frame not in _PLAIN_FRAMES
        or header.precision != 8
        or (header.height, header.width) != size
    ):
        return None
    check_pixels(header.width, header.height, max_pixels, rk.errors.DecodeError)
    # The array of the size just checked, for simplejpeg to decode into: a JPEG whose
    # header libjpeg reads as larger does not fit (ValueError), one it reads as smaller
    # comes back smaller; both go to Image.open.
    out = (-(-size[0] // scale), -(-size[1] // scale))
    pixels = np.empty((*out, 1 if natural == "L" else 3), np.uint8)
    try:
        decoded = simplejpeg.decode_jpeg(
            data,
            colorspace=_SIMPLEJPEG_COLORSPACES[natural],
            fastdct=fast_dct,
            strict=True,
            buffer=pixels,
            **({} if scale == 1 else {"min_height": out[0], "min_width": out[1], "min_factor": scale}),
        )
    except ValueError:  # simplejpeg's error for data libjpeg refuses or warns about
        return None
    if decoded.shape[:2] != out:
        return None
    return pixels.reshape(out) if natural == "L" else pixels


#: simplejpeg's colour space for each of :data:`_JPEG_MODES`' modes.
_SIMPLEJPEG_COLORSPACES = {"L": "GRAY", "RGB": "RGB"}


#: The 8-bit modes :func:`pixels_array` packs itself, and their channels (None: a 2-D array).
_PACKED_CHANNELS = {"L": None, "RGB": 3, "RGBA": 4}


def pixels_array(image: Image.Image) -> np.ndarray:
    """A decoded image's pixels as a read-only uint8 array: what ``np.asarray(image)``
    gives, with less work and no fresh memory but the array's own.

    Why: ``np.asarray`` goes through ``Image.tobytes``, which packs the pixels in 64 KiB
    pieces and joins them, a second copy of the image. The pieces and the join made
    every decode allocate and free about twice the image's size, and in the numpy
    reader's threads glibc's per-thread arenas gave that memory back to the kernel
    (``madvise``) and faulted it in again on the next record. Here Pillow's raw encoder
    (the one ``tobytes`` runs, same packing) writes all the rows in one call into one
    bytes object of exactly the image's size, which the array then wraps. Other modes,
    or an encoder that does not finish in that call, go through ``np.asarray``.
    """
    channels = _PACKED_CHANNELS.get(image.mode, 0)
    width, height = image.size
    # Image._getencoder is Pillow's own (private) way to an encoder: a Pillow without it
    # gets np.asarray, which gives the same array.
    get_encoder = getattr(Image, "_getencoder", None)
    if channels == 0 or width == 0 or height == 0 or get_encoder is None:
        return np.asarray(image, dtype=np.uint8)
    image.load()  # as tobytes does (a lazily opened image reads its file here)
    encoder = get_encoder(image.mode, "raw", image.mode)
    encoder.setimage(image.im, (0, 0, width, height))
    _, status, data = encoder.encode(width * height * (channels or 1))
    if status != 1:  # not all of it in one call (never seen): Pillow's own way
        return np.asarray(image, dtype=np.uint8)
    shape = (height, width) if channels is None else (height, width, channels)
    return np.frombuffer(data, dtype=np.uint8).reshape(shape)


def _describe_start(data: bytes) -> str:
    if not data:
        return "the bytes are empty"
    return f"{len(data)} bytes starting with {data[:8]!r}"
