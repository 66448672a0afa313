"""The public, frozen option groups of :meth:`recordkit.Dataset.tf`.

``tf()`` takes what changes the records it yields (batching, shuffling, repeating, the
worker's share, resuming) as its own keywords, and two groups as objects, as TFDS takes
its ``ReadConfig``: :class:`ReadConfig`, how shards are read (speed, never values), and
:class:`Layout`, the shapes values come in (padding, image sizes). An object can be made
once and passed to every read; each checks its values when it is made.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from recordkit.read._image_fit import ImageFit, Size
from recordkit.read._options import (
    DEFAULT_BLOCK_LENGTH,
    IMAGE_FITS,
    JPEG_SCALES,
    REMOTE_IOS,
    JpegScale,
    RemoteIO,
    check_parallel_calls,
)

__all__ = ["Layout", "ReadConfig"]


@dataclasses.dataclass(frozen=True)
class ReadConfig:
    """How ``tf.data`` reads the shards: how many at once, in blocks of how many
    records, in order or not, prefetching, and through which filesystem (a remote
    dataset). None of these changes the values read; ``deterministic=False`` may change
    their order.

    :param cycle_length: shards read at once (default: up to 16, one per CPU).
    :param block_length: records taken from one shard before moving to the next.
    :param deterministic: keep the order reproducible; False lets parallel steps yield
        out of order when that is faster (a resumed read needs True).
    :param prefetch: prefetch batches (``tf.data.AUTOTUNE``).
    :param remote_io: how remote shards are read: ``"auto"`` through TensorFlow's
        filesystem where it registers the scheme (``gs``), else streamed through fsspec;
        ``"tensorflow"`` or ``"fsspec"`` forces one.
    :param num_parallel_calls: records (or batches) parsed and decoded at once by each
        of the read's parallel maps (default: one more than the CPUs the process may run
        on); ``tf.data.AUTOTUNE`` leaves the choice to tf.data's autotuner.
    """

    cycle_length: int | None = None
    block_length: int = DEFAULT_BLOCK_LENGTH
    deterministic: bool = True
    prefetch: bool = True
    remote_io: RemoteIO = "auto"
    num_parallel_calls: int | None = None

    def __post_init__(self) -> None:
        if self.cycle_length is not None and self.cycle_length < 1:
            raise ValueError(f"cycle_length must be at least 1, not {self.cycle_length}")
        if self.block_length < 1:
            raise ValueError(f"block_length must be at least 1, not {self.block_length}")
        if self.remote_io not in REMOTE_IOS:
            raise ValueError(f"remote_io must be one of {', '.join(REMOTE_IOS)}, not {self.remote_io!r}")
        check_parallel_calls(self.num_parallel_calls)


@dataclasses.dataclass(frozen=True)
class Layout:
    """The shapes ``tf.data`` gives values in: ragged values padded, and pictures
    (fields whose codec declares a ``raster``: image, mask, plugins' pictures) brought
    to one size, so that batches are dense.

    :param pad: pad ragged outputs to the batch's largest, adding ``"<field>/shape"``
        with each record's true shape; True for every field, or the names of the fields
        to pad (with each codec's pad value: zeros, a mask's ignore index).
    :param image_size: ``(height, width)`` that pictures are brought to, or a mapping of
        field name to size; ``"<field>/shape"`` then holds each original shape.
    :param image_fit: ``"resize"``, ``"resize_with_pad"``, ``"crop_or_pad"`` or
        ``"random_crop_or_pad"`` (the same window for the pictures of one record;
        reproducible with ``tf(seed=...)``); the crops add ``"<field>/offset"``.
    :param image_method: a ``tf.image.ResizeMethod`` name, or a mapping of field name to
        method (default ``"bilinear"``, ``"nearest"`` for class indices such as masks).
    :param jpeg_scale: ``"auto"``: JPEGs that are resized (``"resize"``,
        ``"resize_with_pad"``) decode at the largest libjpeg scale (1/2, 1/4, 1/8) that
        still covers ``image_size``, then resize; ``"full"``: always at full size.

    The four image options make an :class:`~recordkit.ImageGeometry` (which every reader
    takes, with a flip and the boxes' form too): the fields tied to a picture (a bbox
    field's ``image_field``) move with it.
    """

    pad: bool | Sequence[str] = False
    image_size: Size | Mapping[str, Size] | None = None
    image_fit: ImageFit = "resize"
    image_method: str | Mapping[str, str] | None = None
    jpeg_scale: JpegScale = "auto"

    def __post_init__(self) -> None:
        if self.image_fit not in IMAGE_FITS:
            raise ValueError(f"image_fit must be one of {', '.join(IMAGE_FITS)}, not {self.image_fit!r}")
        if self.jpeg_scale not in JPEG_SCALES:
            raise ValueError(f"jpeg_scale must be one of {', '.join(JPEG_SCALES)}, not {self.jpeg_scale!r}")
        if isinstance(self.pad, str):
            raise TypeError(f"pad takes True or a list of field names, not the string {self.pad!r}")
