"""The older reading functions, each a shortcut for :func:`recordkit.open` and one
consumer of the :class:`~recordkit.Dataset` it returns: :func:`load_dataset` is
``open(...).tf(...)`` and :func:`iter_records` is ``open(...).records(...)``, with the
options they always took (``num_workers`` and ``worker_index`` are ``world_size`` and
``rank``; ``verify_sha256=True`` is ``verify="sha256"``; the ``tf.data`` options are
grouped into :class:`~recordkit.ReadConfig` and :class:`~recordkit.Layout`).

Their options are checked before the dataset is opened, as they always were: a bad
option fails at once, naming it as the caller spelled it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recordkit.codec._geometry import ImageGeometry
from recordkit.codec._registry import CodecRegistry
from recordkit.read._corruption import CorruptionReport, OnCorrupt, check_on_corrupt
from recordkit.read._dataset import Verify, open_handle
from recordkit.read._image_fit import ImageFit, Size
from recordkit.read._iter_records import RecordIterator
from recordkit.read._options import DEFAULT_BLOCK_LENGTH, JpegScale, RemoteIO
from recordkit.read._paths import Paths
from recordkit.read._position import Start
from recordkit.read._read_config import Layout, ReadConfig
from recordkit.read._share import worker_share
from recordkit.schema._schema import SchemaLike
from recordkit.storage import StorageOptions

__all__ = ["iter_records", "load_dataset"]


def load_dataset(
    path: Paths,
    split: str = "train",
    fields: str | Sequence[str] | None = None,
    batch_size: int | None = None,
    *,
    schema: SchemaLike | None = None,
    registry: CodecRegistry | None = None,
    shuffle_files: bool = False,
    seed: int | None = None,
    shuffle_buffer: int = 0,
    cycle_length: int | None = None,
    block_length: int = DEFAULT_BLOCK_LENGTH,
    deterministic: bool = True,
    repeat: bool | int = False,
    drop_remainder: bool = False,
    pad: bool | Sequence[str] = False,
    image_size: Size | Mapping[str, Size] | None = None,
    image_fit: ImageFit = "resize",
    image_method: str | Mapping[str, str] | None = None,
    jpeg_scale: JpegScale = "auto",
    on_corrupt: OnCorrupt = "raise",
    report: CorruptionReport | None = None,
    verify_sha256: bool = False,
    input_context: Any = None,
    num_workers: int | None = None,
    worker_index: int | None = None,
    compression: str | None = None,
    prefetch: bool = True,
    start: Start = None,
    storage_options: StorageOptions | None = None,
    remote_io: RemoteIO = "auto",
    num_parallel_calls: int | None = None,
    geometry: ImageGeometry | None = None,
) -> Any:
    """Read a split of a dataset as a ``tf.data.Dataset`` of dicts of decoded tensors.

    A shortcut for ``recordkit.open(path, split, fields=fields).tf(batch_size, ...)``,
    which opens the dataset once for every reader and groups these options
    (:class:`recordkit.ReadConfig`, :class:`recordkit.Layout`); the same pipeline.

    :param path: a dataset folder (with ``dataset.json``); or, with ``schema``, TFRecord
        files recordkit did not write (a file, a glob pattern or a list).
    :param split: the split to read, or a slice of splits in TFDS's syntax
        (``"train[:10%]"``, ``"train[100:200]"``, ``"train+validation"``): only the
        shards it touches are opened.
    :param fields: the fields to parse and decode (default: all). Other Example keys
        are not even parsed.
    :param batch_size: records per batch; None yields single records (still parsed in
        batches of ``block_length`` inside the pipeline).
    :param schema: the reader's schema (a Schema, or the path of a schema file): checked
        against the stored one with the compatibility rules, and used to decode (default:
        the stored schema).
    :param registry: the codec registry (default: the installed plugins).
    :param shuffle_files: read the shards in a random order (reshuffled every epoch;
        reproducible with ``seed``).
    :param seed: seed of the shard and record shuffles, and of the random crops (None:
        other windows every run).
    :param shuffle_buffer: shuffle records through a buffer of this many (0: no shuffle).
    :param cycle_length: shards read at once (default: up to 16, one per CPU).
    :param block_length: records taken from one shard before moving to the next.
    :param deterministic: keep the order reproducible; False lets parallel steps
        yield out of order when that is faster.
    :param repeat: False reads once, True forever, an int that many times.
    :param drop_remainder: drop the last batch when it is smaller than ``batch_size``.
    :param pad: turn ragged outputs into dense ones padded to the batch's largest,
        adding ``"<field>/shape"`` with each record's true shape; True for every field,
        or the names of the fields to pad. Padding is each codec's
        :meth:`~recordkit.Codec.pad_value`: zeros (empty strings), and the ignore index
        for ``mask`` fields.
    :param image_size: ``(height, width)`` that picture fields (those whose codec
        declares a ``raster``: image, mask, and plugins' alike) are brought to (by
        ``image_fit``), so they batch densely; or a mapping of field name to size.
        ``"<field>/shape"`` then holds each image's original shape.
    :param image_fit: ``"resize"`` (stretch), ``"resize_with_pad"`` (keep the aspect
        ratio, pad), ``"crop_or_pad"`` (centre crop or pad, no resampling) or
        ``"random_crop_or_pad"`` (crop or pad at a random place, for augmentation: the
        image fields of a record that have one size and one target size, such as an
        image and its mask, are cut at the same place; reproducible with ``seed``).
        Padding holds each codec's pad value (0; a mask's ignore index). The crop fits
        add ``"<field>/offset"``: the window's top left corner in the original
        (negative where padding comes first).
    :param image_method: the ``tf.image.ResizeMethod`` name, or a mapping of field name
        to method (default ``"bilinear"``, and ``"nearest"`` for fields whose codec
        declares ``raster = "indices"``, such as ``mask``, so class indices are never
        blended; give ``"nearest"`` for masks stored otherwise). Resized images keep
        their dtype (uint8 stays uint8, rounded).
    :param jpeg_scale: ``"auto"`` (default): a JPEG that is resized (``image_fit``
        ``"resize"`` or ``"resize_with_pad"``, with an interpolating ``image_method``)
        decodes at the largest libjpeg scale (1/2, 1/4, 1/8) whose result still covers
        ``image_size``, then is resized onto the same pixels a full decode's resize
        lands on; pictures that small keep the full decode, exactly. ``"full"``: every
        JPEG decodes at full size. See the how-to "Images at the model's size".
    :param on_corrupt: ``"raise"``: a corrupt or truncated shard stops the read with an
        error naming the shard and the offset of the bad record; ``"skip"``: the rest of
        that shard is skipped, logged, and added to ``report``.
    :param report: a :class:`~recordkit.CorruptionReport` that collects what was skipped.
    :param verify_sha256: hash every shard before reading and compare with the manifest.
    :param input_context: a ``tf.distribute.InputContext``: this input pipeline reads
        its share of the shards (of the records, when there are fewer shards than
        pipelines).
    :param num_workers: with ``worker_index``, the same as ``input_context`` in plain
        numbers (for jobs launched without ``tf.distribute``).
    :param worker_index: this worker's index, 0 to ``num_workers - 1``.
    :param compression: for files without a manifest: ``"GZIP"``, ``"ZLIB"`` or None
        (guessed from the file suffix).
    :param prefetch: prefetch batches (``tf.data.AUTOTUNE``).
    :param start: resume: skip this many records of the order the other options give
        (an earlier read's batches times ``batch_size``); skipped records are read but
        not parsed. Shuffles need a ``seed``. The iterator can also be saved with
        ``tf.train.Checkpoint`` (see the how-to "Random access and resuming").
    :param storage_options: for a remote ``path`` (``s3://``, ``gs://``, any fsspec
        URL): the options of its fsspec filesystem (manifest, checks, fsspec reads).
    :param remote_io: how remote shards are read: ``"auto"`` (default) through
        TensorFlow's filesystem where it registers the scheme
        (``tf.io.gfile.get_registered_schemes()``: ``gs``, not ``s3``), else streamed
        through fsspec; ``"tensorflow"`` or ``"fsspec"`` forces one.
    :param num_parallel_calls: records (or batches) parsed and decoded at once by each
        parallel map of the read (default: one more than the CPUs the process may run
        on); ``tf.data.AUTOTUNE`` leaves the choice to tf.data's autotuner.
    :param geometry: the pictures' size, fit, flip and the boxes' form in one object
        (:class:`~recordkit.ImageGeometry`, instead of ``image_size``, ``image_fit`` and
        ``image_method``): the boxes, masks and keypoints tied to a picture move with it.
    """
    check_on_corrupt(on_corrupt)
    worker_share(input_context, num_workers, worker_index)  # a bad share named as given here
    layout = Layout(
        pad=pad, image_size=image_size, image_fit=image_fit, image_method=image_method, jpeg_scale=jpeg_scale
    )
    config = ReadConfig(cycle_length, block_length, deterministic, prefetch, remote_io, num_parallel_calls)
    verify: Verify = "sha256" if verify_sha256 else True
    ds = open_handle(
        path, split, fields, schema, registry, verify, compression, storage_options, shortcut=True
    )
    return ds.tf(
        batch_size,
        shuffle_files=shuffle_files,
        shuffle_buffer=shuffle_buffer,
        seed=seed,
        repeat=repeat,
        drop_remainder=drop_remainder,
        rank=worker_index,
        world_size=num_workers,
        input_context=input_context,
        start=start,
        on_corrupt=on_corrupt,
        report=report,
        layout=layout,
        read_config=config,
        geometry=geometry,
    )


def iter_records(
    path: Paths,
    split: str = "train",
    fields: str | Sequence[str] | None = None,
    *,
    schema: SchemaLike | None = None,
    registry: CodecRegistry | None = None,
    verify: bool = True,
    on_corrupt: OnCorrupt = "raise",
    report: CorruptionReport | None = None,
    verify_sha256: bool = False,
    compression: str | None = None,
    num_workers: int | None = None,
    worker_index: int | None = None,
    input_context: Any = None,
    start: Start = None,
    num_threads: int | None = None,
    storage_options: StorageOptions | None = None,
    geometry: ImageGeometry | None = None,
) -> RecordIterator:
    """Each record of a split as a dict of Python and numpy values (an iterator).

    A shortcut for ``recordkit.open(path, split, fields=fields).records(...)`` (there
    ``num_workers`` and ``worker_index`` are ``world_size`` and ``rank``).

    The options are checked, the manifest read and the schemas compared when it is
    called, so a bad option or an incompatible schema fails at once; the shards are read
    as the iterator is consumed.

    :param path: a dataset folder (with ``dataset.json``); or, with ``schema``, TFRecord
        files recordkit did not write (a file, a glob pattern or a list).
    :param fields: the fields to decode (default: all); others are not decoded.
    :param schema: the reader's schema, checked against the stored one (see
        :func:`recordkit.load_dataset`).
    :param verify: check each record's data CRC (header CRCs are always checked).
    :param on_corrupt: ``"raise"`` stops at the first corrupt record with a
        :class:`~recordkit.errors.CorruptRecordError` (or ``DecodeError``) naming the
        shard and offset; ``"skip"`` skips it and goes on (see the module docs).
    :param report: collects what ``"skip"`` skipped (each skip is also logged).
    :param verify_sha256: hash every shard first and compare with the manifest.
    :param compression: for files without a manifest (default: guessed from the suffix).
    :param storage_options: for a remote ``path`` (``s3://``, ``gs://``, any fsspec
        URL): the options of its fsspec filesystem; shards are streamed from it.
    :param num_workers: with ``worker_index``: read only this worker's share of the
        split (see the module docs); all the workers together read every record once.
    :param worker_index: this worker's index, 0 to ``num_workers - 1``.
    :param input_context: instead of the two above, anything with
        ``num_input_pipelines`` and ``input_pipeline_id`` (a
        ``tf.distribute.InputContext``), as :func:`recordkit.load_dataset` takes.
    :param num_threads: decode records in a pool of this many threads (None or 1: in the
        calling thread). The decoders (simplejpeg for JPEGs, Pillow for other images,
        soundfile) release the GIL while they decode, so images and audio decode on several
        cores; the records come in the same order, with the same values, and errors are
        raised (or skipped) as without threads.
    :param start: resume: the number of records an earlier read with the same options
        yielded, or the state dict its iterator's :meth:`~RecordIterator.state_dict` gave;
        the records before it are skipped without being decoded.
    :param geometry: pictures brought to one size (and flipped), the boxes and other
        fields tied to them moved with them (:class:`~recordkit.ImageGeometry`).

    The returned iterator's ``position`` is the number of records yielded so far (counting
    ``start``), and ``state_dict()`` the same as a dict to save and pass back as ``start``.

    An optional field that a record leaves out is ``None``.
    """
    if num_threads is not None and num_threads < 1:
        raise ValueError(f"num_threads must be at least 1, not {num_threads}")
    check_on_corrupt(on_corrupt)
    worker_share(input_context, num_workers, worker_index)  # a bad share named as given here
    # "sha256" also checks each record's CRC, which the sha256 check before reading makes moot.
    checks: Verify = "sha256" if verify_sha256 else verify
    ds = open_handle(
        path, split, fields, schema, registry, checks, compression, storage_options, shortcut=True
    )
    return ds.records(
        rank=worker_index,
        world_size=num_workers,
        input_context=input_context,
        num_threads=num_threads,
        start=start,
        on_corrupt=on_corrupt,
        report=report,
        geometry=geometry,
    )
