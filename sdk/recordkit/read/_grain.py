"""A Grain data source over a recordkit split (the ``grain`` extra), for JAX pipelines.

Grain reads through a ``RandomAccessDataSource``: ``len()`` and ``source[i]``, from any
process. :class:`DataSource` is that, over :class:`recordkit.RandomAccess` (one ``pread``
per record, one ranged GET from a remote dataset, CRCs checked, numpy decode, no
TensorFlow): Grain's samplers then give the global shuffle, the sharding between hosts,
and iterators whose state checkpoints and restores exactly. It pickles as its
arguments, so Grain's worker processes reopen it (and make their own storage client).
Making one also makes the numpy decode's protobuf class, here rather than in the first
of the reading threads (Grain reads with 16 at once by default).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsIndex

from recordkit.codec._registry import CodecRegistry
from recordkit.read._batch_assemble import AssembleBatch, batch_layout
from recordkit.read._numpy_decode import preload_decoding
from recordkit.read._paths import Paths
from recordkit.read._random_access import RandomAccess
from recordkit.schema._schema import SchemaLike
from recordkit.storage import StorageOptions

__all__ = ["DataSource"]


class DataSource:
    """Record ``i`` of a split as a dict of numpy and Python values (the arguments are
    those of :class:`recordkit.RandomAccess`); implements Grain's
    ``RandomAccessDataSource`` protocol. A shortcut for ``recordkit.open(path, split).grain()``."""

    def __init__(
        self,
        path: Paths,
        split: str = "train",
        fields: str | Sequence[str] | None = None,
        *,
        schema: SchemaLike | None = None,
        registry: CodecRegistry | None = None,
        verify: bool = True,
        storage_options: StorageOptions | None = None,
    ) -> None:
        self.records = RandomAccess(
            path,
            split,
            fields,
            schema=schema,
            registry=registry,
            verify=verify,
            storage_options=storage_options,
        )
        preload_decoding()

    @classmethod
    def over(cls, records: RandomAccess) -> DataSource:
        """A DataSource over records already opened (what :meth:`recordkit.Dataset.grain` gives)."""
        self = cls.__new__(cls)
        self.records = records
        preload_decoding()
        return self

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, record_key: SupportsIndex) -> dict[str, Any]:
        return self.records[record_key.__index__()]

    def __getitems__(self, record_keys: Sequence[int]) -> list[dict[str, Any]]:
        """The records of ``record_keys``, read together: sorted by shard and offset, one
        read per contiguous run (from a remote dataset, the runs' ranged GETs concurrently)."""
        return self.records.read_batch(list(record_keys))

    def batch_fn(self, *, concat: Sequence[str] = (), channels_first: Sequence[str] = ()) -> AssembleBatch:
        """A ``batch_fn`` for Grain's ``batch``: records to one batch of numpy arrays laid
        out as ``recordkit.torch``'s batch-first readers lay them out (images padded to
        the batch's largest with ``"<field>/shape"``, the ``concat`` fields joined with
        ``"<field>/lengths"``), where Grain's own ``np.stack`` fails on sizes that differ."""
        return AssembleBatch(batch_layout(self.records, concat, channels_first))

    def _getitems(self, record_keys: Sequence[int]) -> list[dict[str, Any]]:
        """Grain's batched read (``SupportsBatchedReadRandomAccessDataSource``), used by
        its batch pushdown: :meth:`__getitems__`."""
        return self.__getitems__(record_keys)

    def __repr__(self) -> str:
        # Grain names the source in checkpoints and logs: stable across processes.
        args = self.records._args
        return f"recordkit.grain.DataSource({str(args['path'])!r}, split={args['split']!r})"
