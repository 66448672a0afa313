"""What a streaming consumer of :class:`recordkit.Dataset` is handed, and the
``tf.data`` pipeline's options.

:class:`Opened` is the opened dataset as one read sees it: checked, with this worker's
share and the report of skipped records (:meth:`recordkit.Dataset.tf` and
:meth:`~recordkit.Dataset.records` make one). :class:`PipelineOptions` are the
``tf.data`` pipeline's own (shuffling, interleaving, batching, layout, prefetch): the
keywords of :meth:`~recordkit.Dataset.tf` and the fields of its groups
:class:`~recordkit.ReadConfig` and :class:`~recordkit.Layout`, by name, checked once
when the pipeline is built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Literal

from recordkit.codec._geometry import FITS, JPEG_SCALES, ImageGeometry, JpegScale
from recordkit.read._corruption import CorruptionReport
from recordkit.read._image_fit import ImageFit, Size
from recordkit.read._open import OpenedDataset
from recordkit.read._share import WorkerShare

__all__ = [
    "DEFAULT_BLOCK_LENGTH",
    "IMAGE_FITS",
    "JPEG_SCALES",
    "JpegScale",
    "Opened",
    "PipelineOptions",
    "check_parallel_calls",
]

#: Records read from one shard before the reader moves on to the next one. Shards are
#: read in blocks (one tf.data element per block, not per record), which keeps the
#: per-element cost of interleaving off the hot path; a shuffle buffer mixes the blocks.
DEFAULT_BLOCK_LENGTH = 64
#: How ``load_dataset`` reads remote shards: ``"auto"`` through TensorFlow's own
#: filesystem where TensorFlow registers the URL's scheme (``gs``), else through fsspec;
#: ``"tensorflow"`` or ``"fsspec"`` to force one (see the how-to *Datasets in cloud storage*).
RemoteIO = Literal["auto", "tensorflow", "fsspec"]
REMOTE_IOS = ("auto", "tensorflow", "fsspec")
#: The values of ``image_fit`` (:class:`~recordkit.ImageGeometry`'s ``fit``).
IMAGE_FITS = FITS


@dataclasses.dataclass(frozen=True)
class Opened:
    """A dataset opened for one reader: the shards and fields, this worker's share (None:
    the whole split) and the report that collects skipped records (None: raise)."""

    dataset: OpenedDataset
    share: WorkerShare | None
    report: CorruptionReport | None
    #: The tf.data read checks each shard (its size too) as it opens it, not when it is
    #: built (:func:`~recordkit.read._framed_read.checked_as_opened`, decided at open).
    checked_as_opened: bool = False


def check_parallel_calls(calls: int | None) -> None:
    """ValueError unless ``calls`` is None, a positive count or ``tf.data.AUTOTUNE`` (-1)."""
    if calls is not None and (
        isinstance(calls, bool) or not isinstance(calls, int) or (calls < 1 and calls != -1)
    ):
        raise ValueError(
            f"num_parallel_calls must be a positive number of calls or tf.data.AUTOTUNE (-1), not {calls!r}"
        )


@dataclasses.dataclass(frozen=True)
class PipelineOptions:
    """The ``tf.data`` pipeline's options (see :func:`recordkit.load_dataset` for each)."""

    batch_size: int | None = None
    shuffle_files: bool = False
    seed: int | None = None
    shuffle_buffer: int = 0
    cycle_length: int | None = None
    block_length: int = DEFAULT_BLOCK_LENGTH
    deterministic: bool = True
    repeat: bool | int = False
    drop_remainder: bool = False
    pad: bool | Sequence[str] = False
    image_size: Size | Mapping[str, Size] | None = None
    image_fit: ImageFit = "resize"
    image_method: str | Mapping[str, str] | None = None
    jpeg_scale: JpegScale = "auto"
    prefetch: bool = True
    remote_io: RemoteIO = "auto"
    num_parallel_calls: int | None = None
    geometry: ImageGeometry | None = None

    def check(self) -> None:
        """Raise ValueError on an option that cannot be right, before anything is read."""
        if self.remote_io not in REMOTE_IOS:
            raise ValueError(f"remote_io must be one of {', '.join(REMOTE_IOS)}, not {self.remote_io!r}")
        if self.image_fit not in IMAGE_FITS:
            raise ValueError(f"image_fit must be one of {', '.join(IMAGE_FITS)}, not {self.image_fit!r}")
        if self.jpeg_scale not in JPEG_SCALES:
            raise ValueError(f"jpeg_scale must be one of {', '.join(JPEG_SCALES)}, not {self.jpeg_scale!r}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {self.batch_size}")
        if self.block_length < 1:
            raise ValueError(f"block_length must be at least 1, not {self.block_length}")
        check_parallel_calls(self.num_parallel_calls)
        if self.geometry is not None and (
            self.image_size is not None or self.image_method is not None or self.jpeg_scale != "auto"
        ):
            raise ValueError(
                "give the image size, method and jpeg_scale in geometry=, or as "
                "image_size=/image_method=/jpeg_scale=, not both"
            )
        self.image_geometry  # noqa: B018  # the image options checked as a geometry

    @property
    def image_geometry(self) -> ImageGeometry:
        """The read's geometry: ``geometry``, or the one ``image_size``, ``image_fit`` and
        ``image_method`` make."""
        if self.geometry is not None:
            return self.geometry
        return ImageGeometry(
            size=self.image_size, fit=self.image_fit, method=self.image_method, jpeg_scale=self.jpeg_scale
        )

    @property
    def random_crop(self) -> bool:
        """Whether records are drawn at random (a random crop or a flip; each record's
        draws keyed by the seed)."""
        return self.image_geometry.random
