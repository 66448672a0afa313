"""The Beam writer's first step, on the workers: records validated and encoded
(:class:`EncodeFn`), and the salted hash of each record's key that assigns its shard
(:func:`salted_hash`). See :mod:`recordkit.write._beam` for the whole pipeline."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics

from recordkit.dataset._breakdown import byte_breakdown
from recordkit.dataset._picture_sizes import SidesSeen, merge_sides
from recordkit.errors import RecordError, RecordkitError
from recordkit.format._tfrecord import frame_record
from recordkit.schema._encoder import RecordEncoder, record_items
from recordkit.schema._schema import BoundSchema
from recordkit.write._parallel import WorkerSetup
from recordkit.write._plan import RecordKey
from recordkit.write._rejects import error_entries

__all__ = ["METRICS", "RECORDS", "REJECTS", "SIDES", "EncodeFn", "Encoded", "MergeSides", "salted_hash"]

#: The namespace of the Beam writer's metrics.
METRICS = "recordkit"
#: The encode step's outputs: rejected records (tagged), and encoded ones (main).
REJECTS = "rejects"
RECORDS = "records"
#: The encode step's output of each record's picture sides (tagged), which the commit
#: lists as the split's ``picture_sizes``, as the local writer does.
SIDES = "sides"
#: A record after encoding: (salted hash of its key, its framed TFRecord bytes).
Encoded = tuple[int, bytes]


def salted_hash(salt: str, key: bytes) -> int:
    """A 128-bit hash of ``key`` salted with ``salt``: stable across processes, machines
    and Python versions (unlike ``hash()``), as TFDS's shard assignment needs."""
    digest = hashlib.blake2b(key, digest_size=16, person=hashlib.sha256(salt.encode()).digest()[:16])
    return int.from_bytes(digest.digest(), "big")


class EncodeFn(beam.DoFn):  # type: ignore[misc]  # Beam's DoFn is untyped for mypy
    """Validates and encodes records on the workers; the encoder is built once per worker."""

    def __init__(self, setup: WorkerSetup, split: str, key: RecordKey | None, on_error: str) -> None:
        self._setup = setup
        self._split = split
        self._key = key
        self._on_error = on_error
        self._encoder: RecordEncoder | None = None
        self._bound: BoundSchema | None = None

    def setup(self) -> None:
        self._encoder = self._setup.build_encoder()
        bound = self._encoder.bound
        assert isinstance(bound, BoundSchema)
        self._bound = bound
        self._records = Metrics.counter(METRICS, f"{self._split}/records")
        self._rejected = Metrics.counter(METRICS, f"{self._split}/rejected")
        self._field_bytes = {
            f.name: Metrics.counter(METRICS, f"{self._split}/bytes/{f.name}") for f in bound.fields
        }

    def process(self, record: Any) -> Iterator[Any]:
        assert self._encoder is not None
        assert self._bound is not None
        key = self._key_of(record)
        seen: SidesSeen = {}
        try:
            data = self._encoder.encode(record, key, seen)
        except RecordkitError as exc:
            if self._on_error == "raise":
                raise _as_raised(exc.with_context(split=self._split)) from None
            self._rejected.inc()
            yield pvalue.TaggedOutput(REJECTS, _reject_entry(self._split, key, exc))
            return
        for name, size in byte_breakdown(self._bound, data).items():
            counter = self._field_bytes.get(name)
            if counter is not None:
                counter.inc(size)
        self._records.inc()
        framed = frame_record(data)
        hashed = salted_hash(self._split, data if key is None else key.encode("utf-8"))
        yield hashed, framed
        if seen:
            yield pvalue.TaggedOutput(SIDES, seen)

    def _key_of(self, record: Any) -> str | None:
        if self._key is None:
            return None
        try:
            value = self._key(record) if callable(self._key) else record_items(record)[self._key]
        except Exception as exc:
            reason = f"cannot get the record's key: {type(exc).__name__}: {exc}"
            raise _as_raised(RecordError(reason, split=self._split)) from exc
        return value if isinstance(value, str) else str(value)


class MergeSides(beam.CombineFn):  # type: ignore[misc]  # Beam's CombineFn is untyped for mypy
    """The sides of a split's pictures, from each record's (:data:`SIDES`): per field the
    smallest and largest height and width (:func:`~recordkit.dataset._picture_sizes.merge_sides`)."""

    def create_accumulator(self) -> SidesSeen:
        return {}

    def add_input(self, accumulator: SidesSeen, seen: SidesSeen) -> SidesSeen:
        return merge_sides(accumulator, seen)

    def merge_accumulators(self, accumulators: Iterable[SidesSeen]) -> SidesSeen:
        merged: SidesSeen = {}
        for seen in accumulators:
            merge_sides(merged, seen)
        return merged

    def extract_output(self, accumulator: SidesSeen) -> SidesSeen:
        return accumulator


def _as_raised(error: RecordkitError) -> RecordkitError:
    """``error`` with its whole message (context included) in its args: Beam re-raises a
    step's error rebuilt from them, and the context would be lost."""
    error.args = (str(error),)
    return error


def _reject_entry(split: str, key: str | None, error: RecordkitError) -> dict[str, Any]:
    """A rejected record as the rejects file lists it (with its split, for the output)."""
    entry: dict[str, Any] = {"split": split}
    if key is not None:
        entry["key"] = key
    entry["errors"] = error_entries(error)
    entry["message"] = str(error)
    return entry
