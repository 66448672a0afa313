"""The canonical epochs as ``tf.data``: one rank's share of an epoch, resumable on any cluster.

:class:`TfEpochs` is the ``tf.data`` form of :class:`~recordkit.EpochStream` (what
:meth:`recordkit.Dataset.tf_epochs` and :meth:`recordkit.Mixture.tf_epochs` give): the
same canonical order of an epoch (seed, epoch, dataset), dealt to the ranks in blocks of
``batch_size``, and the same JSON state, so a state saved by the PyTorch, Grain or numpy
readers resumes here and the other way round, with any number of ranks.

The order is not the shards' own (a shuffled epoch visits records in windows, a rank
reads every ``world_size``-th block), so the records are fetched by their index
sidecars, not streamed by ``TFRecordDataset``: a Python generator fetches the serialized
records of several batches a call (an eighth of the read, :data:`_FEWEST_PER_CALL` to
:data:`_RECORDS_PER_CALL` records, or :data:`_BYTES_PER_CALL` by the mean record size;
read in runs, or a record a read where they are large, lengths and CRCs checked, a
mixture's from their sources), and they are parsed and decoded in the graph by the same
stages as :meth:`recordkit.Dataset.tf`
(:func:`~recordkit.read._load_dataset.decoded`): where every field read decodes to one
shape a field (text, labels, embeddings), a call's records at once, cut into batches
after (one parse for thousands of small records, where a batch's parse costs more than
fetching it); otherwise batch by batch. (Large records streamed from the shards by
``TFRecordDataset`` in the epoch's windows, gathered in the order's order, cost more CPU
a record than the generator: TensorFlow's copies of them cost as much as Python's; see
docs/performance-epochs.md, the training runs' measurement log.) An epoch read in order
is the shards' own order: a split's share of large records is streamed from its shards
by ``TFRecordDataset`` instead, run by run, into the same batches, with the generator's
checks and errors (:mod:`recordkit.read._tf_in_order`).

A generator's position is not something ``tf.train.Checkpoint`` can save with the
iterator; the position that resumes is :meth:`TfEpochs.state_after`, a small JSON dict
(saved in the checkpoint as a string variable: see the how-to "Training runs: resume,
grow, mix").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from recordkit.errors import RecordkitError
from recordkit.read._epoch_stream import EpochStream
from recordkit.read._generator_exit import FailureEnds
from recordkit.read._layout import DecodeLayout
from recordkit.read._load_dataset import decoded
from recordkit.read._numpy_geometry import DRAWS
from recordkit.read._options import PipelineOptions
from recordkit.read._position import record_count
from recordkit.read._record_parse import parses_per_record
from recordkit.read._tf_in_order import InOrderRecords, record_runs, streams_in_order
from recordkit.read._traced import rebatched
from recordkit.read._whole_shards import dense_fields
from recordkit.read._wire_checks import RecordLocator, SourcesLocator

__all__ = ["TfEpochs"]

#: The most records each call of the pipeline's Python generator fetches (whole batches
#: of them): each call crosses into Python and back and costs a fixed amount, and where
#: every field decodes to one shape a field the call's records are parsed and decoded
#: together, one ``tf.io.parse_example`` for all of them. A mixture's call costs more
#: (its records fetched source by source and put back in place), so it gains the most
#: from large calls: on 200,000 records of a caption and a label, 16,384 a call read the
#: mixture 11 to 18% faster than 4,096 (median of 5 passes, with 12% less CPU a record);
#: 32,768 gained nothing more. Large records are held to :data:`_BYTES_PER_CALL`.
_RECORDS_PER_CALL = 16384
#: A read is fetched in this many calls at least (of no fewer than
#: :data:`_FEWEST_PER_CALL` records): its last call's records are decoded while nothing
#: else is left to decode, a core idle, and a few large calls make that tail long: rank 0
#: of 2 resuming half of those 200,000 records (50,016) read them no faster in calls of
#: 16,384 than of 4,096, and 12% faster in 8 calls (medians of 7 passes, busy machine).
_CALLS_PER_READ = 8
#: The fewest records a call fetches (but for a read's last call, or large records).
_FEWEST_PER_CALL = 4096
#: The serialized bytes a call fetches at most, by the split's mean record size (but
#: always one batch): a call's records are held twice (in Python, then in the graph)
#: while the prefetch holds the next ones.
_BYTES_PER_CALL = 4 << 20


class TfEpochs:
    """One rank's share of a split's (or mixture's) canonical epochs as a
    ``tf.data.Dataset`` (:meth:`dataset`), with :meth:`set_epoch` and the state after
    some batches (:meth:`state_after`) to resume with any number of ranks. Made by
    :meth:`recordkit.Dataset.tf_epochs` and :meth:`recordkit.Mixture.tf_epochs`."""

    def __init__(self, stream: EpochStream, options: PipelineOptions) -> None:
        options.check()
        #: The order, this rank's share and the progress through the epoch.
        self.stream = stream
        self.options = options
        self._layout = DecodeLayout.build(stream.records.dataset, options)
        #: The recordkit error that stopped the generator, kept to raise it clean in
        #: :meth:`__iter__` (TensorFlow wraps it with the generator's traceback).
        self._failure: RecordkitError | None = None
        #: Whether an in-order epoch's records are streamed from the shards (None: where
        #: :func:`~recordkit.read._tf_in_order.streams_in_order` says; False: the
        #: generator, as shuffled epochs are read; the tests compare the two).
        self._streams: bool | None = None

    @property
    def epoch(self) -> int:
        """The epoch :meth:`dataset` reads (a resumed state's, or :meth:`set_epoch`'s)."""
        return self.stream.epoch

    def set_epoch(self, epoch: int) -> None:
        """Read epoch ``epoch``'s order from the next :meth:`dataset` on (a resumed
        position applies only to the epoch it was saved in)."""
        self.stream.set_epoch(epoch)

    def _batches(self) -> list[np.ndarray]:
        """The ``(shard, record)`` pairs (``[n, 2]`` arrays) of each element's records, this
        rank, this epoch (from where a resumed state left it): ``batch_size`` of them (the
        last one short, or left out with ``drop_remainder``), or, for single records,
        groups to fetch."""
        located = self.stream.worker_pairs(0, 1)
        size = self.options.batch_size or self.options.block_length
        groups = [located[begin : begin + size] for begin in range(0, len(located), size)]
        if self.options.batch_size and self.options.drop_remainder and groups and len(groups[-1]) < size:
            groups.pop()  # only the epoch's last block is short
        return groups

    def __len__(self) -> int:
        """The elements (batches, or records without ``batch_size``) :meth:`dataset`
        yields this epoch on this rank."""
        return self._elements(self._batches())

    def _elements(self, groups: list[np.ndarray]) -> int:
        """The elements :meth:`dataset` yields for ``groups`` (from :meth:`_batches`)."""
        return len(groups) if self.options.batch_size else sum(len(group) for group in groups)

    def dataset(self) -> Any:
        """This rank's share of the epoch, from where a resumed state left it, as a
        ``tf.data.Dataset`` of dicts of decoded tensors (batches, or single records),
        laid out as :meth:`recordkit.Dataset.tf` lays them out. Each iteration reads
        the epoch of the moment it was made; after :meth:`set_epoch`, make it again."""
        return self._built(streamed=self._streams)

    def _built(self, *, streamed: bool | None) -> Any:
        """:meth:`dataset`, its records streamed from the shards by ``TFRecordDataset``
        (:mod:`recordkit.read._tf_in_order`) where ``streamed`` (None: where that read
        applies), else fetched by the generator."""
        import tensorflow as tf

        groups = self._batches()
        stream = self.stream
        runs = record_runs(np.concatenate(groups)) if groups else record_runs(np.zeros((0, 2), np.int64))
        if streamed is None:
            streamed = streams_in_order(stream, runs)
        if streamed and len(runs):
            return self._streamed(groups, runs)
        # Several batches per call of the generator: each call crosses into Python and
        # back; the graph cuts them into batches again (rebatch slices, in order), before
        # parsing them or, where every field has one shape, after decoding them.
        together = self._together(len(groups[0]), sum(map(len, groups))) if groups else 1

        # A random crop or flip: each record's draws keyed by its place in the epoch, made
        # here with the records (the same draws as the numpy and PyTorch epoch readers').
        crop_seed = self._layout.crop_seed if self.options.random_crop else None

        def batches_of_records() -> Iterator[Any]:
            for begin in range(0, len(groups), together):
                located = np.concatenate(groups[begin : begin + together])
                try:
                    fetched = np.array(stream.serialized_located(located), dtype=object)
                except RecordkitError as error:
                    self._failure = error
                    raise
                if crop_seed is None:
                    yield fetched
                else:
                    yield fetched, stream.epoch_draws(crop_seed, located).astype(np.float32)

        signature: Any = tf.TensorSpec(shape=(None,), dtype=tf.string)
        if crop_seed is not None:
            signature = (signature, tf.TensorSpec(shape=(None, DRAWS), dtype=tf.float32))

        def serialized() -> FailureEnds:
            return FailureEnds(batches_of_records())

        source = tf.data.Dataset.from_generator(serialized, output_signature=signature).prefetch(
            tf.data.AUTOTUNE
        )  # the next batches fetched while these are decoded
        one_by_one = parses_per_record(self._layout, self.options)
        # Every call but the last holds whole batches, and the last one the epoch's rest:
        # decoded a call at a time and cut into batches after, they are the same batches.
        chunked = (
            not one_by_one
            and self.options.batch_size is not None
            and together > 1
            and crop_seed is None
            and dense_fields(self._layout)
        )
        if one_by_one:
            batches = source.unbatch()
        elif self.options.batch_size is not None and together > 1 and not chunked:
            batches = rebatched(source, self.options.batch_size)
        else:
            batches = source
        draws_given = crop_seed is not None
        dataset = decoded(
            batches,
            self._layout,
            self.options,
            one_by_one,
            draws_given=draws_given,
            chunked=chunked,
            locate=self._locator(),
        )
        return dataset.apply(tf.data.experimental.assert_cardinality(self._elements(groups)))

    def _streamed(self, groups: list[np.ndarray], runs: np.ndarray) -> Any:
        """:meth:`dataset` of ``groups`` (from :meth:`_batches`), their records read in
        ``runs`` from the shards by ``TFRecordDataset`` (:mod:`recordkit.read._tf_in_order`),
        batched as the generator's calls are cut, parsed and decoded by the same stages."""
        import tensorflow as tf

        source = InOrderRecords(self.stream, runs, self._fail).dataset()
        crop_seed = self._layout.crop_seed if self.options.random_crop else None
        if crop_seed is not None:  # each record's draws keyed by its place in the epoch
            located = np.concatenate(groups)
            draws = self.stream.epoch_draws(crop_seed, located).astype(np.float32)
            source = tf.data.Dataset.zip((source, tf.data.Dataset.from_tensor_slices(draws)))
        one_by_one = parses_per_record(self._layout, self.options)
        if not one_by_one:  # the groups are whole batches but for the last: no remainder to drop
            source = source.batch(self.options.batch_size or self.options.block_length)
        dataset = decoded(
            source,
            self._layout,
            self.options,
            one_by_one,
            draws_given=crop_seed is not None,
            locate=self._locator(),
        )
        return dataset.apply(tf.data.experimental.assert_cardinality(self._elements(groups)))

    def _fail(self, error: RecordkitError) -> None:
        """Keep ``error``, which stops the read, for :meth:`__iter__` to raise clean."""
        self._failure = error

    def _locator(self) -> RecordLocator | None:
        """Where a record holding a wrong number of values is looked for when it stops the
        read: a mixture's sources' shards, each named under its folder (None: the split's)."""
        sources = self.stream.sources
        if sources is None:
            return None
        return SourcesLocator(
            [
                (
                    None if source.dataset.root is None else str(source.dataset.root),
                    RecordLocator(source.dataset.shards, source.dataset.compression),
                )
                for source in sources
            ]
        )

    def _together(self, size: int, records: int) -> int:
        """The batches (of ``size`` records) each call of the generator fetches in a read
        of ``records``: as many as :data:`_RECORDS_PER_CALL`, :data:`_CALLS_PER_READ` and
        :data:`_BYTES_PER_CALL` allow, at least one."""
        most = min(_RECORDS_PER_CALL, max(_FEWEST_PER_CALL, -(-records // _CALLS_PER_READ)))
        shards = self.stream.records.dataset.shards
        first = shards[0] if shards else None
        if first is not None and first.records:
            sizes = [file.bytes for file in first.files]
            if all(size is not None for size in sizes):
                record_bytes = sum(size or 0 for size in sizes) / first.records
                most = min(most, int(_BYTES_PER_CALL // max(record_bytes, 1.0)))
        return max(1, most // size)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The elements of :meth:`dataset`, eagerly; a damaged record stops the read with
        recordkit's own error (:class:`~recordkit.errors.CorruptRecordError` naming the
        shard, offset and record), not TensorFlow's ``UnknownError`` wrapping it with
        the generator's traceback (what ``model.fit(epochs.dataset())`` shows)."""
        import tensorflow as tf

        self._failure = None
        try:
            yield from self.dataset()
        except tf.errors.OpError:
            failure, self._failure = self._failure, None
            if failure is None:
                raise
            raise failure from None

    def state_after(self, elements: int) -> dict[str, Any]:
        """The state after every rank's :meth:`dataset` yielded ``elements`` elements
        (global batches, when ranks step together) this epoch: a small JSON-compatible
        dict to pass back as ``start=`` with any number of ranks, to this reader or to
        the PyTorch, Grain and numpy ones."""
        count = record_count(elements, "elements", "a count of the dataset's elements")
        if count > len(self):
            what = "batches" if self.options.batch_size else "records"
            raise ValueError(
                f"rank {self.stream.rank}'s dataset yields {len(self)} {what} of epoch {self.epoch} "
                f"from where it started, so it cannot have yielded {count}"
            )
        block = self.options.batch_size or 1
        return self.stream.loader_state(count, block, 0, drop_last=self.options.drop_remainder)

    def __repr__(self) -> str:
        stream = self.stream
        return (
            f"TfEpochs({stream.split!r}, epoch={stream.epoch}, rank={stream.rank} of {stream.world_size}, "
            f"batch_size={self.options.batch_size})"
        )
