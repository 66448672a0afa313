"""Geometry: how pictures are brought to the model's size, and how the values tied to them follow.

:class:`ImageGeometry` is the one object every reader takes (``ds.tf(geometry=...)``,
``ds.records(geometry=...)``, the PyTorch datasets and Grain): the size pictures are
brought to, the fit (a resize, a resize with pad, a crop, a random resized crop), a random
left-right flip, and the form boxes are read in.

Each record's fit is one :class:`ImageTransform`: where a point of the stored picture
lands on the output canvas. A codec whose values lie on a picture (boxes, keypoints)
follows it through the optional capability :class:`FollowsImage`; the tie between a
field and its picture is the codec's :meth:`~recordkit.Codec.related_fields` (the bbox
codec's ``image_field``). Pictures themselves (``rk.Raster`` codecs: images, masks) are
fitted by the readers; a field tied to no picture is never touched.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Literal, Protocol, get_args, runtime_checkable

__all__ = [
    "FITS",
    "BoxFormatName",
    "Fit",
    "FollowsImage",
    "ImageGeometry",
    "ImageTransform",
    "JpegScale",
    "follows_image",
]

#: How a picture is brought to the size: stretched (``"resize"``), scaled into it keeping
#: its aspect ratio and padded (``"resize_with_pad"``), cut or padded at the centre
#: (``"crop_or_pad"``) or at random (``"random_crop_or_pad"``), or a random window of
#: random area and aspect ratio resized to it (``"random_resized_crop"``, torchvision's
#: ``RandomResizedCrop``).
Fit = Literal["resize", "resize_with_pad", "crop_or_pad", "random_crop_or_pad", "random_resized_crop"]
FITS: tuple[str, ...] = get_args(Fit)
BoxFormatName = Literal["xyxy", "xywh", "yxyx", "cxcywh"]
_BOX_FORMATS: tuple[str, ...] = get_args(BoxFormatName)
Size = tuple[int, int]
#: How pictures brought to a known size are decoded: ``"auto"`` at the largest reduced
#: scale that still covers the size where the codec can (a JPEG at 1/2, 1/4 or 1/8 in
#: libjpeg's IDCT), then resized as ever; ``"full"`` always at full size.
JpegScale = Literal["auto", "full"]
JPEG_SCALES: tuple[str, ...] = get_args(JpegScale)


@dataclasses.dataclass(frozen=True)
class ImageGeometry:
    """The geometry of a read: pictures brought to one size, and every field tied to a
    picture (boxes, keypoints; masks are pictures themselves) moved with it.

    :param size: ``(height, width)`` of every picture field (whose codec is an
        ``rk.Raster``: image, mask), or a mapping of field name to size; None keeps
        each picture's own size (a flip or a box format still applies).
    :param fit: how a picture meets the size (:data:`Fit`): ``"resize"`` (default),
        ``"resize_with_pad"``, ``"crop_or_pad"``, ``"random_crop_or_pad"``,
        ``"random_resized_crop"``.
    :param method: the resize method, ``"bilinear"`` (default) or ``"nearest"``, or a
        mapping of field name to method (tf.data takes every ``tf.image.ResizeMethod``);
        class-index pictures (masks) are always resized with nearest neighbour.
    :param crop_scale: for ``"random_resized_crop"``: the range of the window's area, as
        fractions of the picture's (torchvision's ``scale``).
    :param crop_ratio: for ``"random_resized_crop"``: the range of the window's aspect
        ratio, width over height (torchvision's ``ratio``).
    :param flip: the probability of a left-right flip of a record (its pictures and
        everything tied to them); True means 0.5 (torchvision's ``RandomHorizontalFlip``).
    :param box_format: the format boxes are read in (``"xyxy"``, ``"xywh"``, ``"yxyx"``,
        ``"cxcywh"``); None: the schema's.
    :param normalized: boxes (and keypoints) read in fractions of the output picture
        (True) or in its pixels (False); None: as the schema stores them.
    :param keep_empty_boxes: keep the boxes a crop leaves with no area (clipped to the
        picture's edge, with zero width or height) instead of dropping them with their
        labels and extras: the number of boxes then never changes.
    :param seed: the random draws of the numpy readers (PyTorch, Grain, ``records()``):
        each record's draws are keyed by ``(seed, record index)``, the same on every
        read; None draws anew every time a record is read (other windows every epoch).
        The canonical epoch readers (``torch_iterable``, ``torch_batches``, ``tf_epochs``)
        key them by ``(seed, epoch, the record's place in the epoch)`` instead: new
        windows each epoch, the same ones after a resume on any cluster.
        ``tf()`` keys its draws by its own ``seed`` argument, or by this one when that is None.
    :param jpeg_scale: ``"auto"`` (default): a JPEG that is resized (``"resize"``,
        ``"resize_with_pad"``, ``"random_resized_crop"``) decodes at the largest libjpeg
        scale (1/2, 1/4, 1/8) whose picture still covers the size (of the crop's window),
        then goes through the same resize (within 40 dB PSNR of the full decode; the
        quality table is in the how-to *Images at the model's size*); the boxes follow
        the full picture's geometry exactly. ``"full"``: always decode at full size.
    """

    size: Size | Mapping[str, Size] | None = None
    fit: Fit = "resize"
    method: str | Mapping[str, str] | None = None
    crop_scale: tuple[float, float] = (0.08, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip: float = 0.0
    box_format: BoxFormatName | None = None
    normalized: bool | None = None
    keep_empty_boxes: bool = False
    seed: int | None = None
    jpeg_scale: JpegScale = "auto"

    def __post_init__(self) -> None:
        if self.fit not in FITS:
            raise ValueError(f"fit must be one of {', '.join(FITS)}, not {self.fit!r}")
        if self.jpeg_scale not in JPEG_SCALES:
            raise ValueError(f"jpeg_scale must be one of {', '.join(JPEG_SCALES)}, not {self.jpeg_scale!r}")
        if self.flip is True:
            object.__setattr__(self, "flip", 0.5)
        flip = float(self.flip)
        if not 0.0 <= flip <= 1.0:
            raise ValueError(f"flip is a probability between 0 and 1 (or True for 0.5), not {self.flip!r}")
        object.__setattr__(self, "flip", flip)
        if self.box_format is not None and self.box_format not in _BOX_FORMATS:
            raise ValueError(f"box_format must be one of {', '.join(_BOX_FORMATS)}, not {self.box_format!r}")
        low, high = self.crop_scale
        if not 0.0 < low <= high <= 1.0:
            raise ValueError(
                f"crop_scale must be (low, high) with 0 < low <= high <= 1, not {self.crop_scale!r}"
            )
        low, high = self.crop_ratio
        if not (0.0 < low <= high and math.isfinite(high)):
            raise ValueError(f"crop_ratio must be (low, high) with 0 < low <= high, not {self.crop_ratio!r}")
        if self.fit == "random_resized_crop" and self.size is None:
            raise ValueError("fit='random_resized_crop' needs a size")

    @property
    def random(self) -> bool:
        """Whether records are drawn at random (a random crop, or a flip)."""
        return self.flip > 0 or (self.size is not None and self.fit.startswith("random"))

    @property
    def moves_boxes(self) -> bool:
        """Whether anything is asked of the fields tied to pictures."""
        return (
            self.size is not None
            or self.flip > 0
            or self.box_format is not None
            or self.normalized is not None
        )


@dataclasses.dataclass(frozen=True)
class ImageTransform:
    """Where one record's picture went: its point ``(x, y)`` (in the stored picture's
    pixels, edges at 0 and width) lands at ``(x * scale_x + shift_x, y * scale_y +
    shift_y)`` of the output canvas of ``height`` x ``width`` pixels, then, when
    ``flip`` is 1, at ``width - x``. ``source_height`` and ``source_width`` are the
    stored picture's (what normalized coordinates are fractions of before the fit).

    The numbers are floats (numpy readers) or float32 scalar tensors (tf.data): the
    methods here are plain arithmetic, the same for both, so that a codec writes its
    geometry once. ``flip`` is 0.0 or 1.0 (a number, so that it works in a graph too).
    """

    source_height: Any
    source_width: Any
    height: Any
    width: Any
    scale_y: Any
    scale_x: Any
    shift_y: Any
    shift_x: Any
    flip: Any

    def x(self, x: Any) -> Any:
        """Stored picture pixels along x to output pixels (flipped when ``flip``)."""
        moved = x * self.scale_x + self.shift_x
        return moved + self.flip * (self.width - 2 * moved)

    def y(self, y: Any) -> Any:
        """Stored picture pixels along y to output pixels."""
        return y * self.scale_y + self.shift_y


# --8<-- [start:follows_image]
@runtime_checkable
class FollowsImage(Protocol):
    """A codec whose values lie on a picture of their record (boxes, keypoints) and
    follow its geometry: when a reader resizes, crops, pads or flips the picture that
    :meth:`~recordkit.Codec.related_fields` names first, it calls these with each
    record's value and :class:`ImageTransform`."""

    def follow_numpy(self, value: Any, transform: ImageTransform, geometry: ImageGeometry) -> Any:
        """``value`` (as ``decode_numpy`` gives it) moved onto the output canvas, in the
        form ``geometry`` asks for (``box_format``, ``normalized``,
        ``keep_empty_boxes``)."""

    def follow_tf(self, value: Any, transform: ImageTransform, geometry: ImageGeometry) -> Any:
        """The same in TensorFlow, on one record's value (``decode_tf`` of a batch of
        one, without its batch dimension: dense), graph-safe; the same numbers as
        :meth:`follow_numpy` up to float32 rounding."""


# --8<-- [end:follows_image]


def follows_image(codec: object) -> str | None:
    """The picture field ``codec``'s values follow (its first related field), or None."""
    if not isinstance(codec, FollowsImage):
        return None
    related = codec.related_fields()  # type: ignore[attr-defined]  # every Codec has it
    return str(related[0]) if related else None
