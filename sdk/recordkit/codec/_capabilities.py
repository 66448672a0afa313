"""What a codec may offer beyond its contract: ways to show, count and convert its values.

A codec is its contract (:class:`~recordkit.Codec`); everything here is optional. A codec
has a capability by defining its method, nothing else: the commands that use one ask
``isinstance(codec, Drawable)`` (these are runtime-checkable protocols), never the
codec's name, so a plugin's codec is shown, counted and converted exactly as a built-in
one is. The conformance kit checks each capability a codec has.

* :class:`Pictured`: the value *is* a picture (``image``); ``recordkit show`` draws it,
  with the values of the record's :class:`Drawable` fields on top.
* :class:`Drawable`: the value is drawn on a picture of its record, through a
  :class:`Canvas` (boxes, masks, keypoints). :class:`Backdrop` lets a drawable value
  that covers a picture of its own size (a mask) be drawn when its record has no picture.
* :class:`Audible`: the value is a sound (samples and a rate); ``show`` draws its
  waveform and spectrogram and saves it as a WAV file.
* :class:`Captioned`: one line of text for a value (class names for a label); values
  without a caption are described by their type and size.
* :class:`Summarized`: the statistics one value contributes to ``recordkit stats``: named
  lists of numbers (summarised as count, min, max, mean and a histogram) and named counts
  (a bar chart, most common first).
* :class:`Convertible`: how a field read from foreign records (a TFDS folder) is stored
  natively by ``recordkit convert``.

Three more serve the readers (``load_dataset``'s tf.data pipeline, and the PyTorch collate):

* :class:`Raster` (a mix-in the codec subclasses): the values are pictures that readers
  resize, crop and pad (``image_size``), decoded record by record, and cut to a window
  before decoding where the codec can (``image``, ``mask``), or decoded at a reduced
  scale that still covers the size they are resized to (``image``: a JPEG in libjpeg's
  IDCT).
* :class:`PadsAsDecoded`: a decode straight into the padded form ``pad=...`` gives
  (``image``, ``mask``, ``bbox``).
* :class:`DecodedPerRecord`: values that cost less decoded where each record is, when the
  reader splits its batches anyway (``audio``).

One serves the numpy reader: :class:`DecodedInColumns`, the values of many records of
one layout decoded in a few numpy steps rather than record by record (``tensor``,
``label``).
:class:`DecodedAsRawArray` serves a ``tf.data`` read of shards whose records all have one
layout (a field group's): values stored as the raw bytes of an array of one shape
(``tensor``) are taken out of the shard as one array, in numpy.

Each of these must give the values the plain decode gives (padded, cut or split): the
conformance kit checks it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from recordkit.codec._wire import Shape, WireKind

if TYPE_CHECKING:  # Pillow is imported only when a picture is drawn.
    from PIL import Image, ImageDraw, ImageFont

__all__ = [
    "PALETTE",
    "Audible",
    "DataTyped",
    "Backdrop",
    "Canvas",
    "Captioned",
    "Convertible",
    "DecodedAsRawArray",
    "DecodedInColumns",
    "DecodedPerRecord",
    "Drawable",
    "NativeField",
    "NativeRequest",
    "PadsAsDecoded",
    "Pictured",
    "RawArray",
    "Raster",
    "Rgb",
    "Statistics",
    "Summarized",
    "HfDescribed",
    "HfFeature",
    "TfdsDescribed",
    "TfdsFeature",
    "check_capability_members",
    "class_color",
    "column_decode",
    "decodes_per_record",
    "padded_decode",
    "raster_kind",
    "raw_array",
]

#: A colour as red, green and blue, 0 to 255.
Rgb = tuple[int, int, int]

#: Class colours, by class id (cycled): what boxes, masks and points of a class are drawn in.
PALETTE: tuple[Rgb, ...] = (
    (230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
    (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212), (0, 128, 128), (220, 190, 255),
    (170, 110, 40), (255, 250, 200), (128, 0, 0), (170, 255, 195), (128, 128, 0), (255, 215, 180),
    (0, 0, 128), (128, 128, 128),
)  # fmt: skip

#: What :meth:`Summarized.summarize` returns: by statistic name, either numbers (a list of
#: numbers; summarised as count, min, max and mean, and drawn as a histogram) or counts (a
#: dict of a key, such as a class name, to how many times the value holds it).
Statistics = dict[str, list[float] | dict[str, int]]


def class_color(class_id: int) -> Rgb:
    """The colour things of class ``class_id`` are drawn in (from :data:`PALETTE`)."""
    return PALETTE[class_id % len(PALETTE)]


class Canvas:
    """A picture of a record being drawn, as :meth:`Drawable.draw` receives it.

    The picture shows an image of ``height`` x ``width`` pixels (its own, as decoded),
    drawn ``scale`` times larger: :meth:`point` turns a value's coordinates into the
    canvas's. Draw outlines, marks and text with :attr:`draw` (Pillow's ``ImageDraw``; it
    clips to the picture, so nothing is drawn outside it), and tint regions with
    :meth:`tint` (half transparent, always under the outlines, whatever the order the
    fields are drawn in). Name colours in :attr:`legend`, drawn below the picture.

    Outlines are :attr:`line_width` canvas pixels wide.

    :attr:`label` is the name of the field being drawn, with ``[i]`` for the i-th value of
    a sequence field, whose position :attr:`item` gives (None for a single value).
    """

    #: The width of outlines (a box's edges), in canvas pixels.
    line_width = 2
    #: The height of the text :meth:`tag` writes, in canvas pixels.
    tag_size = 13

    def __init__(self, picture: Image.Image, *, height: int, width: int, scale: int = 1) -> None:
        from PIL import Image

        self.height = height
        self.width = width
        self.scale = scale
        self.label = ""
        self.item: int | None = None
        #: Colours to explain below the picture, by what they mean.
        self.legend: dict[str, Rgb] = {}
        self._base = picture.convert("RGB")
        self._ink = Image.new("RGBA", self._base.size, (0, 0, 0, 0))

    @property
    def size(self) -> tuple[int, int]:
        """The canvas's width and height, in its own pixels."""
        return self._base.size

    @property
    def draw(self) -> ImageDraw.ImageDraw:
        """An ``ImageDraw`` on the canvas (above every tint): rectangles, lines, ellipses, text."""
        from PIL import ImageDraw

        return ImageDraw.Draw(self._ink)

    @staticmethod
    def color(class_id: int) -> Rgb:
        """The colour of class ``class_id`` (the same in every field and record)."""
        return class_color(class_id)

    def point(self, x: float, y: float, *, normalized: bool = False) -> tuple[int, int]:
        """The canvas pixel of the image's point ``(x, y)``: in the image's pixels, or in
        fractions of its width and height when ``normalized``.

        A point farther outside the canvas than its larger side (or not finite) is
        brought to that distance: what is drawn inside the canvas stays the same for
        boxes and marks, and Pillow never walks a line billions of pixels long."""
        if normalized:
            x, y = x * self.width, y * self.height
        return self._within(x), self._within(y)

    def _within(self, coordinate: float) -> int:
        side = max(self.size)
        scaled = coordinate * self.scale
        if not math.isfinite(scaled):
            return -side if math.isnan(scaled) or scaled < 0 else 2 * side
        return min(max(round(scaled), -side), 2 * side)

    def tint(self, classes: np.ndarray, colors: Mapping[int, Rgb]) -> None:
        """Tint each region of ``classes`` (a map of class ids, resized to the canvas with
        nearest neighbour) whose id ``colors`` names in that colour, half transparent."""
        from PIL import Image, ImageDraw

        index = Image.fromarray(np.asarray(classes, dtype=np.uint8)).resize(
            self._base.size, Image.Resampling.NEAREST
        )
        colour = Image.new("RGB", self._base.size)
        alpha = Image.new("L", self._base.size, 0)
        draw_colour, draw_alpha = ImageDraw.Draw(colour), ImageDraw.Draw(alpha)
        values = np.asarray(index)
        for class_id, rgb in colors.items():
            region = Image.fromarray((values == class_id).astype(np.uint8) * 255)
            draw_colour.bitmap((0, 0), region, fill=rgb)
            draw_alpha.bitmap((0, 0), region, fill=128)
        self._base = Image.composite(colour, self._base, alpha)

    def tag(self, xy: tuple[int, int], text: str) -> None:
        """``text`` with its top left at ``xy``, white on a dark tag, at :attr:`tag_size`
        pixels: a class name beside its box, readable on any picture and any class
        colour."""
        font = _tag_font(self.tag_size)
        draw = self.draw
        left, top, right, bottom = draw.textbbox(xy, text, font=font)
        draw.rectangle((left - 2, top - 1, right + 2, bottom + 1), fill=(0, 0, 0, 200))
        draw.text(xy, text, fill=(255, 255, 255, 255), font=font)

    def picture(self) -> Image.Image:
        """The drawn picture: the image, its tints, then everything drawn on top."""
        picture = self._base.convert("RGBA")
        picture.alpha_composite(self._ink)
        return picture.convert("RGB")


@functools.lru_cache(maxsize=4)
def _tag_font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's own font at ``size`` pixels (its bitmap font where FreeType is missing)."""
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


# --8<-- [start:picture]
@runtime_checkable
class Pictured(Protocol):
    """A codec whose values are pictures (the built-in ``image``)."""

    def picture(self, value: Any) -> np.ndarray:
        """``value`` (as the numpy reader decodes it) as 8-bit pixels: ``[H, W]`` grey, or
        ``[H, W, 3]`` (or 4) colour."""


# --8<-- [end:picture]


# --8<-- [start:draw]
@runtime_checkable
class Drawable(Protocol):
    """A codec whose values are drawn on a picture of their record (boxes, masks, points).

    A field whose codec names related fields (:meth:`~recordkit.Codec.related_fields`,
    such as a bbox field's ``image_field``) is drawn on the picture of those fields;
    otherwise on every picture of its record."""

    def draw(self, canvas: Canvas, value: Any) -> None:
        """Draw ``value`` (as the numpy reader decodes it) on ``canvas``."""


# --8<-- [end:draw]


# --8<-- [start:backdrop_size]
@runtime_checkable
class Backdrop(Protocol):
    """A :class:`Drawable` codec whose values cover a picture of their own (a mask): a
    record with no picture is drawn on a black one of that size."""

    def backdrop_size(self, value: Any) -> tuple[int, int]:
        """The height and width of the picture ``value`` covers."""


# --8<-- [end:backdrop_size]


# --8<-- [start:sound]
@runtime_checkable
class Audible(Protocol):
    """A codec whose values are sounds (the built-in ``audio``)."""

    def sound(self, value: Any) -> tuple[np.ndarray, int]:
        """``value`` as float samples in [-1, 1] (``[N]`` or ``[N, channels]``) and their rate in Hz."""


# --8<-- [end:sound]


@runtime_checkable
class DataTyped(Protocol):
    """A codec that names the data type of its values in MLCommons Croissant's terms
    (schema.org's and Croissant's): ``recordkit croissant`` types its fields with it."""

    def data_type(self) -> str:
        """``sc:ImageObject``, ``sc:AudioObject``, ``sc:Text``, ``sc:Integer``,
        ``sc:Float``, ``cr:BoundingBox`` ... (without it: ``sc:Text``)."""


# --8<-- [start:caption]
@runtime_checkable
class Captioned(Protocol):
    """A codec that describes a value in a line of text (class names for a label)."""

    def caption(self, value: Any) -> str:
        """One line describing ``value`` (shown cut to 120 characters)."""


# --8<-- [end:caption]


# --8<-- [start:summarize]
@runtime_checkable
class Summarized(Protocol):
    """A codec that says what one value contributes to a dataset's statistics."""

    def summarize(self, value: Any) -> Statistics:
        """The statistics of ``value`` (as the numpy reader decodes it), by name: a list of
        numbers (``{"boxes_per_record": [3.0]}``) or counts by key (``{"classes": {"cat":
        2}}``). The same value always gives the same statistics, as plain JSON data."""


# --8<-- [end:summarize]


@dataclasses.dataclass(frozen=True)
class NativeRequest:
    """What ``recordkit convert`` asks of a field it rewrites: the options and description
    of the field as read from the foreign records, and how the user wants audio samples
    stored (``"wav"``, ``"flac"``, or None to keep them as they are)."""

    options: Mapping[str, Any]
    description: str = ""
    audio: str | None = None


@dataclasses.dataclass(frozen=True)
class NativeField:
    """How a converted field is stored: its new options, and whether its values are copied
    as the foreign records store them (encoded image bytes, never decoded) rather than
    decoded and encoded again."""

    options: dict[str, Any]
    copy_stored: bool = False


# --8<-- [start:to_native]
@runtime_checkable
class Convertible(Protocol):
    """A codec whose fields read from foreign records store differently when written
    natively (TFDS's float lists become recordkit's packed bytes, images are kept as
    they are)."""

    def to_native(self, request: NativeRequest) -> NativeField:
        """The native form of a field of this codec read as ``request`` says. Raise
        ValueError with the reason when the request cannot be met for this field."""


# --8<-- [end:to_native]


@dataclasses.dataclass(frozen=True)
class TfdsFeature:
    """One TensorFlow Datasets feature that parses one of a codec's wire features as it
    is stored, and what it expects to find there.

    ``wire`` names the codec's wire feature (``""``: its main one); the field's Example
    key for it (its own, or the one mapped in the schema's ``keys``) is where TFDS looks,
    and its ``/`` give the nesting of TFDS's ``FeaturesDict``. ``entry`` is the feature's
    ``features.json`` entry for one value (``{"pythonClassName": ..., ...}``), and
    ``label_names`` the class names TFDS keeps beside a ``ClassLabel`` in a
    ``.labels.txt`` file.

    ``kind`` and ``shape`` are what TFDS parses under the key in one record: the export
    compares them with what the field stores there and refuses the field when they
    differ, so a field TFDS would misread is never described. ``sequence``: each record
    holds a list of such values (``shape`` starts with None), which TFDS reads inside a
    ``Sequence``, with the field's other ``sequence`` features beside them in one
    ``Sequence`` of a ``FeaturesDict`` (a box's class id beside its box)."""

    entry: Mapping[str, Any]
    kind: WireKind
    shape: Shape = ()
    wire: str = ""
    sequence: bool = False
    label_names: tuple[str, ...] = ()


@runtime_checkable
class TfdsDescribed(Protocol):
    """A codec whose stored keys TFDS features parse as they are (an image's encoded
    bytes, a class id, text, boxes stored as TFDS stores them), so that
    :func:`recordkit.write_tfds_metadata` can describe its fields for
    ``tfds.builder_from_directory``."""

    def tfds_features(self) -> tuple[TfdsFeature, ...]:
        """The TFDS features of a field of this codec with its options, one for each
        wire feature TFDS reads (those not named are left to recordkit). Raise
        ValueError with the reason, and what to change, when these options store values
        TFDS cannot parse as they are."""


@dataclasses.dataclass(frozen=True)
class HfFeature:
    """How a field travels as a Hugging Face ``datasets`` column, and so in Parquet: the
    feature's JSON as ``datasets.Features.to_dict()`` gives it (``{"_type": "Image"}``,
    ``{"_type": "ClassLabel", "names": [...]}``), and ``value``, which turns one record's
    stored wire values (as :meth:`~recordkit.Codec.decode_numpy` receives them) into the
    column's value without decoding pixels or samples (an image's encoded bytes as
    ``{"bytes": ..., "path": None}``)."""

    entry: Mapping[str, Any]
    value: Callable[[Mapping[str, Any]], Any]


@runtime_checkable
class HfDescribed(Protocol):
    """A codec whose fields :func:`recordkit.to_hf` and :func:`recordkit.export_parquet`
    can hand over as Hugging Face features (see :class:`HfFeature`)."""

    def hf_feature(self) -> HfFeature:
        """The feature of a field of this codec with its options. Raise ValueError with
        the reason when these options have no Hugging Face equivalent."""


# -- what the readers ask -------------------------------------------------------------------


# --8<-- [start:raster]
class Raster:
    """Mix-in of a codec whose values are pictures that readers resize, crop and pad
    (``load_dataset(image_size=...)`` applies to its fields unless it names fields); they
    are decoded record by record, so that pictures decode on every core. Subclass it:
    ``class DepthCodec(rk.Raster, rk.Codec[DepthOptions])``."""

    #: ``"pixels"`` (an image ``[H, W, C]``, resized with interpolation) or ``"indices"``
    #: (a map of class indices ``[H, W]`` or ``[H, W, 1]``, only ever resized with
    #: nearest neighbour, so that no index is blended into another).
    raster: ClassVar[Literal["pixels", "indices"]]
    #: The wire features (INT64, shape ``()``) that hold each picture's stored height and
    #: width, when the codec stores them. With :meth:`decode_tf_window`, they let readers
    #: that crop (``image_fit="crop_or_pad"``, ``"random_crop_or_pad"``) place the window
    #: before decoding, and decode only the window. None: not stored.
    size_features: ClassVar[tuple[str, str] | None] = None

    def decode_tf_record(self, wire: Mapping[str, Any]) -> Any | None:
        """Decode one record's picture from its own wire values (each feature's value
        without a batch dimension: a scalar string, scalar sizes), for the readers that
        decode pictures record by record. Return the pixels ``[H, W, ...]``: the values,
        dtype, static shape and checks of ``decode_tf`` of a batch of one, without the
        batch dimension. None (the default): readers decode a batch of one (static size
        1) and take the record out of it, a few more ops a record."""
        return None

    def decode_tf_window(self, wire: Mapping[str, Any], window: Any) -> Any | None:
        """Decode only a window of one picture (for codecs with :attr:`size_features`).

        ``wire`` is a batch of one record (static size 1); ``window`` is int ``[4]``:
        top, left, height, width, inside the stored picture. Return the window's pixels
        without the batch dimension (``[height, width, ...]``), the same values a full
        decode cut to the window gives; None (the default) when the codec has no cheaper
        way than decoding the whole picture (readers then decode it and cut)."""
        return None

    def decode_scale_tf(self, wire: Mapping[str, Any], cover: tuple[int, int]) -> Any | None:
        """The scale one picture decodes at for readers that resize it to ``cover``
        (height, width): an int32 scalar, 1 (the full decode) or a larger reduction whose
        result still covers ``cover`` (a JPEG in libjpeg's IDCT: 2, 4 or 8), worked out
        from the stored size without decoding. ``wire`` is a batch of one record (static
        size 1). None (the default): the codec decodes at full size only."""
        return None

    def decodes_scaled(self, wire: Mapping[str, Any]) -> bool:
        """Whether one picture, as :meth:`~recordkit.Codec.encode` returned its wire values,
        can decode at a reduced scale (a JPEG; not a PNG). The writer records, with the
        sizes of a field's pictures, whether any of them decodes at full size only, which
        :meth:`decode_scale_fixed` is told. Default: False."""
        return False

    def decode_scale_fixed(
        self,
        smallest: tuple[int, int],
        largest: tuple[int, int],
        cover: tuple[int, int],
        *,
        full_size_only: bool,
    ) -> int | None:
        """The one scale every picture of a field decodes at for a reader that resizes to
        ``cover``, when the dataset says its pictures' heights and widths range from
        ``smallest`` to ``largest`` (height, width), and ``full_size_only`` whether some
        of them cannot decode scaled (:meth:`decodes_scaled`): 1 (every picture at full
        size: the plain decode, as ``jpeg_scale="full"``) or a larger scale that covers
        ``cover`` for each of them, given to :meth:`decode_tf_scaled` (as a Python int)
        and to :meth:`decode_numpy_scaled` (``scale=``) for every record. None (the
        default): decide record by record (:meth:`decode_scale_tf`). The sizes come from
        the manifest: a wrong one may cost quality, never a crash."""
        return None

    def decode_tf_scaled(self, wire: Mapping[str, Any], scale: Any) -> tuple[Any, Any] | None:
        """Decode one picture at 1/``scale`` (what :meth:`decode_scale_tf` gave, or for a
        random resized crop a smaller power of two, the largest at which the window still
        covers the size: an int32 scalar). Return ``(pixels, shape)``: the pixels without
        the batch dimension, such that pixel ``i`` stands for the full picture's pixels
        ``[i * scale, (i + 1) * scale)`` (at scale 1, the plain decode's pixels exactly),
        and the full picture's int64 shape. Readers resize them onto the full picture's geometry. Keep what
        depends on the scale small (one decode op a scale, in ``tf.switch_case``): a
        branch's every op costs again for every record in a ``tf.data`` map."""
        return None

    def decode_numpy_scaled(
        self, wire: Mapping[str, Any], cover: tuple[int, int], scale: int | None = None
    ) -> tuple[Any, tuple[int, ...], int] | None:
        """:meth:`decode_scale_tf` and :meth:`decode_tf_scaled` without TensorFlow, from
        one record's wire values (as ``decode_numpy`` takes them), with the same scale and
        pixels: ``(pixels, shape, scale)`` (scale 1: the full decode), or None (the
        default). ``scale``: the scale :meth:`decode_scale_fixed` chose for every
        picture, or the one a random resized crop's window allows (None: the codec's own
        choice for this one)."""
        return None


# --8<-- [end:raster]


# --8<-- [start:decode_tf_padded]
@runtime_checkable
class PadsAsDecoded(Protocol):
    """A codec that decodes a batch straight into the dense form ``load_dataset(pad=...)``
    gives, saving the copy that padding the ragged decode would make (``image``,
    ``mask``, and ``bbox`` from its packed bytes)."""

    def decode_tf_padded(self, wire: Mapping[str, Any]) -> tuple[Any, Any] | None:
        """Return ``(padded, shapes)``: ``padded`` is what ``decode_tf`` returns (a
        ragged tensor) made dense, padded with the codec's ``pad_value()`` to the batch's
        largest, and ``shapes`` int64 ``[B, rank - 1]``, each record's
        true shape. A codec whose ``decode_tf`` returns a dict of ragged tensors may return
        a dict of padded values and a dict of their shapes, by the same keys. None: the
        reader pads what ``decode_tf`` returns (for these options)."""


# --8<-- [end:decode_tf_padded]


# --8<-- [start:decodes_per_record]
@runtime_checkable
class DecodedPerRecord(Protocol):
    """A codec whose large values cost less decoded where each record is (``audio``)."""

    def decodes_per_record(self) -> bool:
        """Whether readers that split their batches into records anyway (pictures decoded
        record by record and batched again with ``pad``, or single records) should
        decode this codec's values in that per-record step, from a batch of static size
        1, rather than a batch at a time before the split. The values must be the same
        either way."""


# --8<-- [end:decodes_per_record]


# --8<-- [start:decode_numpy_column]
@runtime_checkable
class DecodedInColumns(Protocol):
    """A codec that decodes the values of many records at once in the numpy reader, when
    their Examples have one layout (a field group's embeddings, a dataset of fixed-shape
    tensors and labels): their wire values arrive as columns, one array per feature."""

    def decode_numpy_column(self, wire: Mapping[str, Any], count: int) -> Sequence[Any] | None:
        """Decode ``count`` records' values of this field from ``wire``: each wire
        feature of a fixed shape as an array ``[count, *shape]`` (``shape`` that of the
        feature in the wire spec), a bytes feature of shape ``()`` as a list of ``count``
        ``bytes``. Return ``count`` values, each equal, in value, type, dtype and shape,
        to what ``decode_numpy`` gives for that record's wire (arrays writable and of
        their own memory, not views of one block that would keep it alive); or None when
        these options or values have no column form, and the reader decodes the records
        one by one (as it does when this raises a recordkit error, ``ValueError`` or
        ``ArithmeticError`` for a value it refuses: then the record's own error is given).
        Any other exception is taken for a fault of this method: the read stops with a
        ``DecodeError`` naming the codec and the field."""


# --8<-- [end:decode_numpy_column]


# --8<-- [start:wire_bytes]
@runtime_checkable
class FixedWireBytes(Protocol):
    """A codec whose bytes wire features hold values of one known size in every record
    (``tensor``'s raw values of a fixed shape): the ``tf.data`` reader checks each value's
    size before decoding a batch, so that a record holding another size (511 floats
    where the field's shape holds 512) stops the read with an error naming its shard,
    record and field, instead of an error of the batched decode that names none."""

    def wire_bytes(self) -> Mapping[str, int]:
        """The size in bytes of every value of each bytes wire feature that has one, by
        the feature's name in the wire spec (``""``: the main key); a feature left out
        (or a codec that returns ``{}`` for these options) is not checked."""


# --8<-- [end:wire_bytes]


@dataclasses.dataclass(frozen=True)
class RawArray:
    """How a codec's values are stored and decoded when they are plain arrays
    (:class:`DecodedAsRawArray`): the bytes wire feature ``feature`` (``""``: the main
    key) holds, in every record, the C-order little-endian bytes of one array of
    ``dtype`` (a numpy dtype name) and ``shape``, and nothing else is read."""

    feature: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        """The bytes of one record's value."""
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    def decode(self, rows: np.ndarray) -> np.ndarray:
        """The values of ``rows`` (``[records, nbytes]`` uint8, each record's bytes), as
        ``[records, *shape]`` of ``dtype``: a view of ``rows`` when they are C-contiguous
        and already hold the values (a little-endian machine), else a copy."""
        wire = np.ascontiguousarray(rows).view(np.dtype(self.dtype).newbyteorder("<"))
        values: np.ndarray = wire.astype(self.dtype, copy=False).reshape(len(rows), *self.shape)
        return values


# --8<-- [start:raw_array]
@runtime_checkable
class DecodedAsRawArray(Protocol):
    """A codec whose values are stored as the raw bytes of an array of one dtype and
    shape (``tensor`` of a fixed shape): a ``tf.data`` read of shards whose records all
    have one layout (a field group's) takes them out of the file as one array a shard,
    in numpy, with no work per record in TensorFlow."""

    def raw_array(self) -> RawArray | None:
        """How these options store values, when they are raw arrays (else None): then the
        codec's wire spec has the one bytes feature :attr:`RawArray.feature` of shape
        ``()``, and both ``decode_tf`` of a batch and ``decode_numpy`` of a record give,
        in value, dtype and shape, each record's bytes read as :meth:`RawArray.decode`
        reads them."""


# --8<-- [end:raw_array]


def raw_array(codec: object) -> RawArray | None:
    """``codec``'s :meth:`DecodedAsRawArray.raw_array`; None without one."""
    return codec.raw_array() if isinstance(codec, DecodedAsRawArray) else None


def fixed_wire_bytes(codec: object) -> Mapping[str, int]:
    """``codec``'s :meth:`FixedWireBytes.wire_bytes`; ``{}`` without one."""
    return codec.wire_bytes() if isinstance(codec, FixedWireBytes) else {}


def raster_kind(codec: object) -> Literal["pixels", "indices"] | None:
    """What pictures ``codec``'s values are (:attr:`Raster.raster`), or None: not a raster."""
    return codec.raster if isinstance(codec, Raster) else None


def padded_decode(codec: object, wire: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """``codec``'s :meth:`PadsAsDecoded.decode_tf_padded` of ``wire``; None without one."""
    return codec.decode_tf_padded(wire) if isinstance(codec, PadsAsDecoded) else None


def column_decode(codec: object) -> Callable[[Mapping[str, Any], int], Sequence[Any] | None] | None:
    """``codec``'s :meth:`DecodedInColumns.decode_numpy_column`; None without one. Looked
    up as an attribute, the answer ``isinstance(codec, DecodedInColumns)`` gives: this runs
    once per layout group of every fetched batch, where a runtime-checkable protocol's
    ``isinstance`` costs 10 to 20 µs on Python 3.11 (some 15% of a small fetch's fixed cost)."""
    decode = getattr(codec, "decode_numpy_column", None)
    return decode if callable(decode) else None


def decodes_per_record(codec: object) -> bool:
    """Whether ``codec`` asks to be decoded record by record (:class:`DecodedPerRecord`)."""
    return isinstance(codec, DecodedPerRecord) and bool(codec.decodes_per_record())


_RASTER_MEMBERS = (
    "raster",
    "size_features",
    "decode_tf_record",
    "decode_tf_window",
    "decode_scale_tf",
    "decodes_scaled",
    "decode_scale_fixed",
    "decode_tf_scaled",
    "decode_numpy_scaled",
)


def check_capability_members(cls: type) -> None:
    """TypeError for a codec class that declares a :class:`Raster` member without being a
    Raster: readers would silently treat its pictures as plain values."""
    if issubclass(cls, Raster):
        return
    declared = [name for name in _RASTER_MEMBERS if hasattr(cls, name)]
    if declared:
        raise TypeError(
            f"codec class {cls.__qualname__} declares {', '.join(declared)} but is not a recordkit.Raster: "
            f"subclass it (class {cls.__name__}(rk.Raster, rk.Codec[...])) so that readers fit its pictures"
        )
