"""The reader options, each defined once.

:class:`OpenOptions` are what both readers take about where records come from and how
they are checked (the reader schema, the codec registry, corruption handling, sha256,
compression, the worker's share): :func:`recordkit.load_dataset` and
:func:`recordkit.iter_records` build one from their keyword arguments, and both open
the dataset through :meth:`OpenOptions.open`, so the two readers cannot drift apart.
:class:`PipelineOptions` are the ``tf.data`` pipeline's own (shuffling, interleaving,
batching, layout, prefetch), checked once when the pipeline is built.

A new reader option goes into one of the two, with its check in ``check`` and its
documentation in the reader's docstring.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from recordkit.codec._registry import CodecRegistry
from recordkit.read._corruption import CorruptionReport, OnCorrupt
from recordkit.read._dense import ImageFit, Size
from recordkit.read._open import OpenedDataset, open_dataset
from recordkit.read._paths import Paths
from recordkit.read._share import WorkerShare, worker_share
from recordkit.schema._schema import Schema
from recordkit.storage import StorageOptions

__all__ = [
    "DEFAULT_BLOCK_LENGTH",
    "IMAGE_FITS",
    "JPEG_SCALES",
    "JpegScale",
    "OpenOptions",
    "Opened",
    "PipelineOptions",
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
#: The values of ``image_fit``.
IMAGE_FITS = ("resize", "resize_with_pad", "crop_or_pad", "random_crop_or_pad")
#: How pictures that are resized to a known size are decoded: ``"auto"`` at the largest
#: reduced scale that still covers the size where the codec can (a JPEG at 1/2, 1/4 or
#: 1/8 in libjpeg's IDCT), ``"full"`` always at full size.
JpegScale = Literal["auto", "full"]
JPEG_SCALES = ("auto", "full")


@dataclasses.dataclass(frozen=True)
class Opened:
    """A dataset opened for one reader: the shards and fields, this worker's share (None:
    the whole split) and the report that collects skipped records (None: raise)."""

    dataset: OpenedDataset
    share: WorkerShare | None
    report: CorruptionReport | None


@dataclasses.dataclass(frozen=True)
class OpenOptions:
    """The options both readers share (see :func:`recordkit.load_dataset` for each)."""

    schema: Schema | str | os.PathLike[str] | None = None
    registry: CodecRegistry | None = None
    on_corrupt: OnCorrupt = "raise"
    report: CorruptionReport | None = None
    verify_sha256: bool = False
    compression: str | None = None
    input_context: Any = None
    num_workers: int | None = None
    worker_index: int | None = None
    storage_options: StorageOptions | None = None

    def check(self) -> None:
        """Raise ValueError on an option that cannot be right, before anything is read."""
        if self.on_corrupt not in ("raise", "skip"):
            raise ValueError(f"on_corrupt must be 'raise' or 'skip', not {self.on_corrupt!r}")

    def open(self, path: Paths, split: str, fields: str | Sequence[str] | None) -> Opened:
        """Check the options, read the manifest, compare the schemas, find the worker's share."""
        self.check()
        share = worker_share(self.input_context, self.num_workers, self.worker_index)
        dataset = open_dataset(
            path,
            split,
            fields,
            schema=self.schema,
            registry=self.registry,
            compression=self.compression,
            check_sizes=self.on_corrupt == "raise",
            verify_sha256=self.verify_sha256,
            storage_options=self.storage_options,
        )
        report = self.report
        if report is None and self.on_corrupt == "skip":
            report = CorruptionReport()  # still logs each skip
        return Opened(dataset, share, report)


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

    @property
    def random_crop(self) -> bool:
        """Whether images are cut at random places (each record's draws keyed by the seed)."""
        return self.image_fit == "random_crop_or_pad" and self.image_size is not None
