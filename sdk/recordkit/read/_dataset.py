"""``recordkit.open``: a dataset opened once, as a :class:`Dataset` every reader hangs from.

:func:`open` resolves the path (a recordkit dataset, a folder TFDS prepared, or TFRecord
files with a schema), the split expression, the schema and the fields bound to their
codecs once, through :func:`~recordkit.read._open.open_dataset`; :meth:`Dataset.split`
and :meth:`Dataset.select` derive handles from the manifest already read
(:func:`~recordkit.read._open.open_split`). What costs reads waits until a consumer
needs it: nothing is made, read or stat'ed per shard when a split is opened; each
shard's size is checked when a reader first comes to it (``ds.tf()`` checks them all
before its first read, and ``verify="sha256"`` hashes them all), and a shard's record
index is loaded on the first random access to that shard.

The consumers are recordkit's readers fed the opened source instead of a path: the
``load_dataset`` pipeline (:meth:`Dataset.tf`, the only one that imports TensorFlow), the
``iter_records`` iterator, :class:`~recordkit.RandomAccess` (``ds[i]``) and the PyTorch
and Grain datasets over it (their extras imported by their consumers only).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from recordkit.codec._geometry import ImageGeometry
from recordkit.codec._plugins import default_registry
from recordkit.codec._registry import CodecRegistry
from recordkit.dataset._manifest import Manifest
from recordkit.dataset._shards import selected_records
from recordkit.errors import DatasetError, MissingExtraError, RecordkitError, SchemaError
from recordkit.read._corruption import CorruptionReport, OnCorrupt, check_on_corrupt
from recordkit.read._epoch_stream import EpochStream
from recordkit.read._framed_read import checked_as_opened
from recordkit.read._grain import DataSource
from recordkit.read._iter_records import RecordIterator, record_iterator
from recordkit.read._load_dataset import tf_pipeline
from recordkit.read._open import OpenedDataset, check_shards, open_dataset, open_split
from recordkit.read._options import Opened, PipelineOptions
from recordkit.read._paths import Paths
from recordkit.read._position import Start, tf_data_start
from recordkit.read._random_access import RandomAccess
from recordkit.read._read_config import Layout, ReadConfig
from recordkit.read._shard_index import DEFAULT_MAX_OPEN_FILES
from recordkit.read._share import worker_share
from recordkit.read._stream_order import StreamOrder
from recordkit.read._tf_epochs import TfEpochs
from recordkit.schema._schema import Schema, SchemaLike
from recordkit.storage import CACHE_OPTION, ShardCache, StorageOptions

if TYPE_CHECKING:  # the torch readers' types only: importing them needs torch
    from recordkit.read._batch_loader import BatchMapDataset, BatchStream
    from recordkit.read._torch import IterableDataset, MapDataset, Transform

__all__ = ["Dataset", "Verify", "epoch_options", "open", "open_handle"]

#: What :func:`open` checks: True (each record's CRCs as it is read, each shard's size
#: against the manifest before reading), ``"sha256"`` (also every shard's sha256, before
#: the first read: the whole split is read once more), or False (the numpy readers skip
#: each record's data CRC; sizes and headers are still checked).
Verify = bool | Literal["sha256"]


@dataclasses.dataclass(frozen=True)
class _Request:
    """What :func:`open` was given: derived handles share it, and a handle pickles as it
    (the other process opens the dataset again, with the default codec registry)."""

    path: Paths
    schema: Schema | None
    verify: Verify
    compression: str | None
    storage_options: StorageOptions | None


def open(
    path: Paths,
    split: str | None = None,
    *,
    fields: str | Sequence[str] | None = None,
    schema: SchemaLike | None = None,
    registry: CodecRegistry | None = None,
    verify: Verify = True,
    compression: str | None = None,
    storage_options: StorageOptions | None = None,
    cache: ShardCache | str | os.PathLike[str] | Literal[False] | None = None,
) -> Dataset:
    """Open a dataset once, and return the :class:`Dataset` its readers hang from.

    :param path: a dataset folder (with ``dataset.json``) or its ``dataset.json``, a
        folder TFDS prepared, local or remote (``s3://``, ``gs://``, any fsspec URL); or,
        with ``schema``, TFRecord files recordkit did not write (a file, a glob pattern
        or a list).
    :param split: a split, or an expression in TFDS's syntax (``"train[:10%]"``,
        ``"train[100:200]"``, ``"train+validation"``, ``"all"``). None: the dataset's
        only split; a dataset with several is opened without one (its schema, fields
        and splits are there; choose one with :meth:`Dataset.split` to read).
    :param fields: the fields to decode (default: all); the others are never parsed.
    :param schema: the reader's schema (a Schema, or a schema file's path or URL):
        checked against the stored one with the compatibility rules, and used to decode.
    :param registry: the codec registry (default: the installed plugins).
    :param verify: what is checked as records are read (see :data:`Verify`).
    :param compression: for TFRecord files without a manifest: ``"GZIP"``, ``"ZLIB"``
        or None (guessed from the file suffix).
    :param storage_options: for a remote ``path``: the options of its fsspec filesystem
        (``endpoint_url``, ``key``, ``token`` ...).
    :param cache: for a remote ``path``: a :class:`~recordkit.ShardCache` (or its folder,
        limited to 10 GiB) that keeps the shards on local disk after their first read,
        each checked against the manifest's sha256; later epochs, and later runs, read
        them from disk. Without one, a remote split's shard table is still kept in the
        user's cache folder (``RECORDKIT_CACHE`` moves it, ``RECORDKIT_CACHE=off`` turns it
        off), so the ranks and DataLoader workers of one machine download it once;
        ``False``: nothing cached, not even the table.

    An unknown split or field is a :class:`~recordkit.errors.RecordkitError` naming the
    dataset and the split or field.
    """
    return open_handle(path, split, fields, schema, registry, verify, compression, storage_options, cache)


def open_handle(
    path: Paths,
    split: str | None,
    fields: str | Sequence[str] | None,
    schema: SchemaLike | None,
    registry: CodecRegistry | None,
    verify: Verify,
    compression: str | None,
    storage_options: StorageOptions | None,
    cache: ShardCache | str | os.PathLike[str] | Literal[False] | None = None,
    *,
    shortcut: bool = False,
) -> Dataset:
    """:func:`open`, and what the older shortcuts (:func:`recordkit.load_dataset`,
    :func:`recordkit.iter_records`) open with ``shortcut=True``, to behave as they always
    did: TFRecord files read without a manifest take their ``split`` (default
    ``"train"``; the split their resume states name) where :func:`open` refuses one, and
    an error of the open phase is raised as it comes, where :func:`open` adds the
    dataset and the split to it."""
    if verify not in (True, False, "sha256"):
        raise ValueError(f"verify must be True, False or 'sha256', not {verify!r}")
    registry = registry if registry is not None else default_registry()
    if isinstance(cache, bool) and cache:  # True, against the annotation
        raise TypeError("cache= takes a ShardCache, a folder, or False (no cache), not True")
    if cache is not None:
        chosen = cache if isinstance(cache, ShardCache) or cache is False else ShardCache(os.fspath(cache))
        storage_options = {**(storage_options or {}), CACHE_OPTION: chosen}
    names = _names(fields)
    where = _describe(path)
    try:
        if schema is not None and not isinstance(schema, Schema):
            schema = Schema.load(schema, registry=registry, storage_options=storage_options)
        source = open_dataset(
            path,
            split,  # None: the only split, opened once (or all of several)
            names,
            schema=schema,
            registry=registry,
            compression=compression,
            check_sizes=False,  # checked before the first read that needs them
            storage_options=storage_options,
        )
    except RecordkitError as exc:
        if shortcut:
            raise
        raise exc.with_context(file=where, split=split) from None
    request = _Request(path, schema, verify, compression, storage_options)
    if source.manifest is None:
        if split is not None and not shortcut:
            raise DatasetError(
                f"TFRecord files read without a manifest have no splits; open them without split= "
                f"(got {split!r})",
                file=where,
            )
        return Dataset(source, split if shortcut else None, request, registry)
    if split is not None:
        return Dataset(source, split, request, registry)
    if len(source.manifest.splits) == 1:
        (only,) = source.manifest.splits
        return Dataset(source, only, request, registry)  # opened as that split
    return Dataset(source, None, request, registry)


class Dataset:
    """A dataset opened once by :func:`recordkit.open`: its schema, manifest and split,
    and every way to read it.

    * ``len(ds)``, ``ds[i]``, ``ds[[i, j]]``, ``ds[i:j]``: random access, records as dicts
      of numpy and Python values;
    * :meth:`tf`: a ``tf.data.Dataset``; :meth:`records`: an iterator, without TensorFlow;
    * :meth:`torch` and :meth:`torch_iterable`: PyTorch datasets; :meth:`grain`: a Grain
      data source;
    * :meth:`split` and :meth:`select`: other handles on the same open dataset.

    A handle may be shared between threads; it pickles as the arguments of
    :func:`recordkit.open` (the other process opens the dataset again).
    """

    def __init__(
        self, source: OpenedDataset, split: str | None, request: _Request, registry: CodecRegistry
    ) -> None:
        self._source = source
        self._split = split
        self._request = request
        self._registry = registry
        self._access: RandomAccess | None = None
        #: The shard checks already made ("sizes", "sha256").
        self._checked: set[str] = set()
        #: Guards the two above: threads sharing a handle check and load indexes once.
        self._lock = threading.Lock()

    # -- what was opened ---------------------------------------------------------------------

    @property
    def _split_name(self) -> str:
        """The split the readers name in their orders and states (``"train"`` for a
        handle opened without one)."""
        return self._split if self._split is not None else "train"

    @property
    def path(self) -> Paths:
        """The path or URL the dataset was opened from."""
        return self._request.path

    @property
    def schema(self) -> Schema:
        """The schema records are decoded with (the reader's, or the stored one)."""
        return self._source.schema

    @property
    def manifest(self) -> Manifest | None:
        """The dataset's manifest (None: TFRecord files read without one)."""
        return self._source.manifest

    @property
    def splits(self) -> tuple[str, ...]:
        """The dataset's splits, in manifest order (none for files without a manifest)."""
        return () if self.manifest is None else tuple(self.manifest.splits)

    @property
    def current_split(self) -> str | None:
        """The split expression this handle reads (None: none chosen yet, or files
        without a manifest)."""
        return self._split

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields each record holds, in schema order."""
        return tuple(f.name for f in self._source.fields)

    def __len__(self) -> int:
        """The number of records of the split (from the manifest; else from the record
        indexes, loaded for it)."""
        count = selected_records(self._readable().shards)
        return count if count is not None else len(self._random_access())

    def __repr__(self) -> str:
        split = "" if self._split is None else f", split={self._split!r}"
        return f"recordkit.Dataset({_describe(self.path)!r}{split}, fields={list(self.fields)!r})"

    # -- derived handles ---------------------------------------------------------------------

    def split(self, split: str) -> Dataset:
        """The same dataset, reading ``split`` (a name or a TFDS-style expression), from
        the manifest already read."""
        if self.manifest is None:
            raise DatasetError(
                f"TFRecord files read without a manifest have no splits (asked for {split!r})",
                file=_describe(self.path),
            )
        where = _describe(self.path)
        source = _derive(self._source, split, list(self.fields), self._request, self._registry, where)
        return Dataset(source, split, self._request, self._registry)

    def select(self, fields: str | Sequence[str]) -> Dataset:
        """The same split, decoding only ``fields`` (a subset of :attr:`fields`)."""
        names = _names(fields) or []
        where = _describe(self.path)
        for name in names:
            if name not in self.fields:
                raise SchemaError(
                    f"not among the fields of this handle ({', '.join(self.fields)})", field=name, file=where
                )
        if self.manifest is None:
            bound = self.schema.bind(self._registry, fields=names)
            return Dataset(
                dataclasses.replace(self._source, bound=bound), None, self._request, self._registry
            )
        split = self._split if self._split is not None else "all"
        source = _derive(self._source, split, names, self._request, self._registry, where)
        return Dataset(source, self._split, self._request, self._registry)

    # -- random access -----------------------------------------------------------------------

    def __getitem__(self, index: Any) -> Any:
        """Record ``index`` decoded (numpy and Python values); a list, array or slice of
        indices gives a list of records, fetched together."""
        return self._random_access()[index]

    def _random_access(self) -> RandomAccess:
        """The split's random access, made on first use (its record indexes loaded)."""
        if self._access is not None:
            return self._access
        with self._lock:
            if self._access is not None:
                return self._access
            source = self._checked_source(sizes=False)  # each shard's, as its index loads
            args = {
                "path": self.path,
                "split": self._split_name,
                "fields": list(self.fields),
                "schema": self._request.schema,
                "verify": self._request.verify is not False,
                "max_open_files": DEFAULT_MAX_OPEN_FILES,
                "storage_options": self._request.storage_options,
            }
            self._access = RandomAccess.over(source, args)
            return self._access

    # -- consumers ---------------------------------------------------------------------------

    def tf(
        self,
        batch_size: int | None = None,
        *,
        shuffle_files: bool = False,
        shuffle_buffer: int = 0,
        seed: int | None = None,
        repeat: bool | int = False,
        drop_remainder: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
        input_context: Any = None,
        start: Start = None,
        on_corrupt: OnCorrupt = "raise",
        report: CorruptionReport | None = None,
        layout: Layout | None = None,
        read_config: ReadConfig | None = None,
        geometry: ImageGeometry | None = None,
    ) -> Any:
        """The split as a ``tf.data.Dataset`` of dicts of decoded tensors (batches of
        ``batch_size``, or single records), as :func:`recordkit.load_dataset` gives it.

        ``shuffle_files``, ``shuffle_buffer``, ``seed``, ``repeat``, ``drop_remainder``,
        ``input_context``, ``start``, ``on_corrupt`` and ``report`` are those of
        :func:`recordkit.load_dataset`.

        :param rank: with ``world_size``: read only this worker's share of the split
            (every ``world_size``-th shard; every ``world_size``-th record when there
            are fewer shards than workers); all the ranks together read every record once.
        :param world_size: how many workers share the split.
        :param layout: the shapes values come in (:class:`~recordkit.Layout`).
        :param read_config: how shards are read (:class:`~recordkit.ReadConfig`).
        :param geometry: pictures brought to one size, cropped, flipped, and the boxes,
            masks and keypoints tied to them moved with them
            (:class:`~recordkit.ImageGeometry`; instead of ``layout``'s image options).
        """
        layout = layout if layout is not None else Layout()
        config = read_config if read_config is not None else ReadConfig()
        options = PipelineOptions(  # the two groups' fields are the pipeline's, by name
            batch_size=batch_size,
            shuffle_files=shuffle_files,
            seed=seed,
            shuffle_buffer=shuffle_buffer,
            repeat=repeat,
            drop_remainder=drop_remainder,
            **vars(layout),
            **vars(config),
            geometry=geometry,
        )
        options.check()
        shuffled = shuffle_files or bool(shuffle_buffer)
        skip = tf_data_start(start, shuffled=shuffled, seed=seed, deterministic=config.deterministic)
        # A read of many local shards checks each shard's size as it opens it, not all here.
        check_on_corrupt(on_corrupt)
        source = self._readable()
        as_opened = checked_as_opened(source, source.shards, on_corrupt)
        opened = self._opened(on_corrupt, report, rank, world_size, input_context, as_opened=as_opened)
        return tf_pipeline(opened, options, on_corrupt, skip)

    def tf_epochs(
        self,
        batch_size: int | None = None,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        window: int = 1024,
        rank: int | None = None,
        world_size: int | None = None,
        input_context: Any = None,
        start: Start = None,
        drop_remainder: bool = False,
        layout: Layout | None = None,
        geometry: ImageGeometry | None = None,
    ) -> TfEpochs:
        """The split's canonical epochs as ``tf.data`` (``.dataset()``): this rank's share
        of an epoch's order, dealt in blocks of ``batch_size`` so that the ranks' ``i``-th
        batches together are the epoch's ``i``-th global batch, ``set_epoch``, and
        ``state_after(batches)``, the JSON state to resume from with any number of ranks,
        here or in the PyTorch, Grain and numpy readers (see the how-to "Training runs:
        resume, grow, mix"). The order, state and options are :meth:`epoch_stream`'s.

        :param batch_size: records per batch (None: single records).
        :param shuffle: shuffle the shards, and the records within windows of ``window``.
        :param seed: the shuffles' seed (None: 0; every rank must draw the same order).
        :param rank: this rank (default 0), with ``world_size`` (default 1).
        :param input_context: instead of the two above, a ``tf.distribute.InputContext``.
        :param start: resume from a state (``state_after``, or any recordkit epoch state).
        :param drop_remainder: leave out the epoch's short last batch.
        :param layout: the shapes values come in (:class:`~recordkit.Layout`), as :meth:`tf`.
        :param geometry: as :meth:`tf`'s.
        """
        if input_context is not None:
            if rank is not None or world_size is not None:
                raise ValueError("give input_context or rank and world_size, not both")
            rank, world_size = input_context.input_pipeline_id, input_context.num_input_pipelines
        stream = self.epoch_stream(
            shuffle=shuffle,
            seed=seed,
            window=window,
            rank=rank or 0,
            world_size=world_size or 1,
            start=start,
            batch_size=batch_size,
        )
        return TfEpochs(stream, epoch_options(batch_size, drop_remainder, layout, geometry))

    def records(
        self,
        *,
        rank: int | None = None,
        world_size: int | None = None,
        input_context: Any = None,
        num_threads: int | None = None,
        start: Start = None,
        on_corrupt: OnCorrupt = "raise",
        report: CorruptionReport | None = None,
        geometry: ImageGeometry | None = None,
    ) -> RecordIterator:
        """The split's records in order, as dicts of numpy and Python values, without
        TensorFlow (what :func:`recordkit.iter_records` gives).

        :param rank: with ``world_size``: read only this worker's share (as :meth:`tf`).
        :param world_size: how many workers share the split.
        :param input_context: instead of the two above, a ``tf.distribute.InputContext``
            (or anything with ``num_input_pipelines`` and ``input_pipeline_id``).
        :param num_threads: decode in a pool of this many threads (same order, values
            and errors).
        :param start: resume: a record count, or the iterator's ``state_dict()``.
        :param on_corrupt: ``"raise"`` or ``"skip"`` (see :meth:`tf`).
        :param report: collects what ``"skip"`` skipped.
        :param geometry: pictures brought to one size (and flipped), the fields tied to
            them moved with them (:class:`~recordkit.ImageGeometry`).
        """
        if num_threads is not None and num_threads < 1:
            raise ValueError(f"num_threads must be at least 1, not {num_threads}")
        # Each shard's size is checked as the reader comes to it (iter_records), not all at once.
        opened = self._opened(on_corrupt, report, rank, world_size, input_context, sizes=False)
        split = self._split_name
        crc = self._request.verify is not False
        return record_iterator(
            opened, split, verify=crc, start=start, num_threads=num_threads, geometry=geometry
        )

    def epoch_stream(
        self,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        window: int = 1024,
        rank: int = 0,
        world_size: int = 1,
        start: Start = None,
        prefetch: int = 64,
        batch_size: int | None = None,
    ) -> EpochStream:
        """The split's records as numpy, in the canonical order of an epoch (``set_epoch``),
        this rank's share of it, resumable from a ``state_dict()`` saved with any number
        of ranks and workers (the order and state of :meth:`torch_iterable`, without
        PyTorch; see the how-to "Training runs: resume, grow, mix")."""
        return EpochStream.over(
            self._random_access(),
            self._split_name,
            StreamOrder.of(shuffle, seed, window, rank, world_size),
            start=start,
            prefetch=prefetch,
            batch_size=batch_size,
        )

    def torch(
        self,
        *,
        transform: Transform | None = None,
        tensors: bool = True,
        geometry: ImageGeometry | None = None,
    ) -> MapDataset:
        """A map-style PyTorch dataset (``torch.utils.data.Dataset``: ``len`` and
        ``[i]``), what a ``DataLoader`` with ``shuffle=True`` or a ``DistributedSampler``
        expects; its ``collate_fn`` pads what varies in size. Needs the ``torch`` extra.

        :param transform: applied to each record (after ``to_tensors`` when ``tensors``).
        :param tensors: numpy arrays as ``torch.Tensor`` (shared, no copy).
        :param geometry: pictures brought to one size, cropped, flipped, and the fields
            tied to them moved with them (:class:`~recordkit.ImageGeometry`), before
            ``transform``.
        """
        module = _torch_readers("Dataset.torch()")
        dataset: MapDataset = module.MapDataset.over(
            self._random_access().with_geometry(geometry), transform=transform, tensors=tensors
        )
        return dataset

    def torch_iterable(
        self,
        *,
        shuffle: bool = False,
        seed: int | None = None,
        window: int = 1024,
        rank: int | None = None,
        world_size: int | None = None,
        start: Start = None,
        transform: Transform | None = None,
        tensors: bool = True,
        prefetch: int = 64,
        geometry: ImageGeometry | None = None,
        batch_size: int | None = None,
    ) -> IterableDataset:
        """A streaming PyTorch dataset (``torch.utils.data.IterableDataset``): a seeded
        order split between ranks and DataLoader workers, each record read once per
        epoch, ``set_epoch``, and exact resume with any number of ranks and workers
        (``loader_state``, ``start``; see the how-to "Training runs: resume, grow,
        mix"). Needs the ``torch`` extra.

        :param shuffle: shuffle the shards, and the records within windows of ``window``.
        :param seed: the shuffles' seed; every rank must draw the same order, so None
            is 0 (``DistributedSampler``'s default).
        :param rank: this process's rank (default: ``torch.distributed``'s, else 0).
        :param world_size: the number of ranks (default: ``torch.distributed``'s, else 1).
        :param start: resume from a ``state_dict()`` or ``loader_state()``.
        :param prefetch: records whose bytes are fetched together, ahead of decoding.
        :param geometry: as :meth:`torch`'s.
        :param batch_size: the DataLoader's batch size, so that global batches follow
            the canonical order whatever the number of workers (None: records dealt one
            at a time).
        """
        module = _torch_readers("Dataset.torch_iterable()")
        order = StreamOrder.of(shuffle, seed, window, rank, world_size)
        dataset: IterableDataset = module.IterableDataset.over(
            self._random_access().with_geometry(geometry),
            self._split_name,
            order,
            start=start,
            transform=transform,
            tensors=tensors,
            prefetch=prefetch,
            batch_size=batch_size,
        )
        return dataset

    def torch_batches(
        self,
        batch_size: int,
        *,
        drop_last: bool = False,
        concat: Sequence[str] = (),
        channels_first: Sequence[str] = (),
        shuffle: bool = False,
        seed: int | None = None,
        window: int = 1024,
        rank: int | None = None,
        world_size: int | None = None,
        start: Start = None,
        geometry: ImageGeometry | None = None,
    ) -> BatchStream:
        """The fastest PyTorch path: a streaming dataset that yields whole batches, for
        ``DataLoader(stream, batch_size=None, num_workers=...)`` or
        ``recordkit.torch.ThreadLoader(stream)``. The order, the split between ranks and
        workers and resume are :meth:`torch_iterable`'s. Needs the ``torch`` extra.

        :param batch_size: records per batch (each worker's last batch may be short).
        :param drop_last: leave out each worker's short last batch.
        :param concat: fields whose arrays are joined along their first axis, with
            ``"<field>/lengths"``, instead of padded (boxes, audio, token ids).
        :param channels_first: image fields laid out ``(batch, channels, height, width)``.
        :param geometry: pictures brought to one size (uint8 batches of one shape),
            cropped, flipped, and the fields tied to them moved with them
            (:class:`~recordkit.ImageGeometry`).
        """
        module = _torch_readers("Dataset.torch_batches()", "recordkit.read._batch_loader")
        order = StreamOrder.of(shuffle, seed, window, rank, world_size)
        stream: BatchStream = module.BatchStream.batched(
            self._random_access().with_geometry(geometry),
            self._split_name,
            order,
            batch_size=batch_size,
            drop_last=drop_last,
            concat=concat,
            channels_first=channels_first,
            start=start,
        )
        return stream

    def torch_batch_map(
        self,
        *,
        concat: Sequence[str] = (),
        channels_first: Sequence[str] = (),
        geometry: ImageGeometry | None = None,
    ) -> BatchMapDataset:
        """A map-style PyTorch dataset whose ``__getitems__`` gives a DataLoader's batch
        whole, laid out as :meth:`torch_batches`' (pass ``collate_fn=ds.collate_fn``); for
        samplers such as ``DistributedSampler``. Needs the ``torch`` extra. ``geometry``
        as :meth:`torch_batches`'."""
        module = _torch_readers("Dataset.torch_batch_map()", "recordkit.read._batch_loader")
        dataset: BatchMapDataset = module.BatchMapDataset.batched(
            self._random_access().with_geometry(geometry), concat=concat, channels_first=channels_first
        )
        return dataset

    def grain(self, *, geometry: ImageGeometry | None = None) -> DataSource:
        """A Grain ``RandomAccessDataSource`` over the split (records as numpy values),
        for Grain's samplers, sharding and checkpoints. Needs the ``grain`` extra.
        ``geometry``: pictures of one size, the fields tied to them moved with them
        (:class:`~recordkit.ImageGeometry`)."""
        _require("grain", "Dataset.grain()")
        source: DataSource = DataSource.over(self._random_access().with_geometry(geometry))
        return source

    # -- helpers -----------------------------------------------------------------------------

    def _readable(self) -> OpenedDataset:
        """The opened split; a dataset of several splits opened without one is an error
        that names them."""
        if self._split is None and self.manifest is not None:
            raise DatasetError(
                f"has splits {', '.join(self.splits)}: choose one to read, with ds.split('{self.splits[0]}') "
                f"or recordkit.open(path, '{self.splits[0]}')",
                file=_describe(self.path),
            )
        return self._source

    def _checked_source(self, *, sizes: bool) -> OpenedDataset:
        """The opened split, its shards checked against the manifest (each check once;
        the caller holds the lock)."""
        source = self._readable()
        wanted = {"sizes"} if sizes else set()
        if self._request.verify == "sha256":
            wanted.add("sha256")
        missing = wanted - self._checked
        if missing:
            check_shards(source, sizes="sizes" in missing, sha256="sha256" in missing)
            self._checked |= missing
        return source

    def _opened(
        self,
        on_corrupt: OnCorrupt,
        report: CorruptionReport | None,
        rank: int | None,
        world_size: int | None,
        input_context: Any,
        *,
        sizes: bool = True,
        as_opened: bool = False,
    ) -> Opened:
        """The source for a streaming read: checked (the shards' sizes first when
        ``sizes``, unless a tf.data read checks each shard ``as_opened``), with this
        worker's share and the report of skipped records (``on_corrupt="skip"``)."""
        check_on_corrupt(on_corrupt)
        share = worker_share(input_context, world_size, rank, names=("world_size", "rank"))
        with self._lock:
            source = self._checked_source(sizes=sizes and not as_opened and on_corrupt == "raise")
        if report is None and on_corrupt == "skip":
            report = CorruptionReport()  # still logs each skip
        return Opened(source, share, report, checked_as_opened=as_opened)

    def __getstate__(self) -> dict[str, Any]:
        request = self._request
        return {
            "path": request.path,
            "split": self._split,
            "fields": list(self.fields),
            "schema": request.schema,
            "verify": request.verify,
            "compression": request.compression,
            "storage_options": request.storage_options,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        reopened = open(**state)
        self.__dict__.update(reopened.__dict__)


def epoch_options(
    batch_size: int | None, drop_remainder: bool, layout: Layout | None, geometry: ImageGeometry | None
) -> PipelineOptions:
    """The ``tf.data`` decode options of a canonical-epoch read (:class:`TfEpochs`)."""
    return PipelineOptions(
        batch_size=batch_size,
        drop_remainder=drop_remainder,
        **vars(layout if layout is not None else Layout()),
        geometry=geometry,
    )


def _derive(
    source: OpenedDataset,
    split: str,
    fields: Sequence[str] | None,
    request: _Request,
    registry: CodecRegistry,
    where: str,
) -> OpenedDataset:
    """``split`` (and ``fields``) of the dataset ``source`` opened, from its manifest;
    errors name the dataset and the split."""
    try:
        return open_split(source, split, fields, request.schema, registry)
    except RecordkitError as exc:
        raise exc.with_context(file=where, split=split) from None


def _names(fields: str | Sequence[str] | None) -> list[str] | None:
    return [fields] if isinstance(fields, str) else (list(fields) if fields is not None else None)


def _describe(path: Paths) -> str:
    return str(path) if isinstance(path, (str, os.PathLike)) else f"{len(path)} paths"


def _torch_readers(purpose: str, module: str = "recordkit.read._torch") -> Any:
    """A PyTorch readers' module, which imports ``torch``: imported only when a torch
    consumer is called (the extra is optional and heavy), never by ``rk.open`` or the
    other consumers."""
    _require("torch", purpose)
    return importlib.import_module(module)


def _require(package: str, purpose: str) -> None:
    """The ``package`` extra imported, or a MissingExtraError that says how to get it."""
    try:
        importlib.import_module(package)
    except ImportError as exc:
        raise MissingExtraError(package, package, purpose=purpose) from exc
