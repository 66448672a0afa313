"""Encoding records in worker processes, with results in input order.

Image and audio re-encoding is CPU bound, so the writer can spread encoding over
processes. What crosses the process boundary, through multiprocessing's standard IPC
(which pickles): the records themselves, and per worker once a :class:`WorkerSetup`
made only of plain data (the schema as JSON, the names of the plugins that provide
its codecs, the schema's fingerprint). Codec objects are never sent: each worker loads
those plugins itself (an allowlist, so it runs no plugin the parent did not use),
rebuilds the schema and its :class:`~recordkit.RecordEncoder`, and checks that the
fingerprint matches the parent's. Workers return framed TFRecord bytes (or the
record's error); the parent only writes.

Processes are started with the ``spawn`` method: forking a process that has imported
TensorFlow (or holds threads) is unsafe. Memory stays bounded: at most
``batches_per_worker`` batches of ``batch_records`` records per worker are in flight,
whatever the size of the input.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Generic, TypeVar

from recordkit._encode import RecordEncoder
from recordkit._registry import CodecRegistry
from recordkit._schema import BoundSchema, Schema
from recordkit._tfrecord import frame_record
from recordkit.errors import DatasetError, PluginError, RecordkitError

__all__ = ["BATCH_RECORDS", "OrderedPool", "WorkerSetup", "encode_batch"]

#: Records sent to a worker at a time: enough to amortise the IPC round trip.
BATCH_RECORDS = 32
#: Batches in flight per worker: enough to keep every worker busy while the parent writes.
BATCHES_PER_WORKER = 4

#: A record travels as (label for its errors: its index or key, the record).
Item = tuple[int | str, Any]
#: A record comes back as its framed TFRecord bytes, or the error that rejected it.
Result = bytes | RecordkitError


@dataclasses.dataclass(frozen=True)
class WorkerSetup:
    """Plain data from which a worker rebuilds the parent's encoder."""

    schema_json: str
    fingerprint: str
    #: Entry-point names of the plugins that provide the schema's codecs.
    plugins: tuple[str, ...]
    #: ``module:qualname`` of codecs registered outside entry points (in-process
    #: plugins or direct ``registry.register`` calls), imported by the worker.
    direct_codecs: tuple[str, ...]
    #: ``(codec name, module:qualname)`` the parent used, checked by the worker.
    codecs: tuple[tuple[str, str], ...]

    @classmethod
    def from_bound(cls, bound: BoundSchema, registry: CodecRegistry) -> WorkerSetup:
        plugins: set[str] = set()
        direct: set[str] = set()
        codecs: set[tuple[str, str]] = set()
        for field in bound.fields:
            info = registry.info(field.spec.codec)
            ref = _class_ref(info.codec)
            codecs.add((info.name, ref))
            if info.distribution is not None:
                plugins.add(info.plugin)
            else:
                direct.add(ref)
        return cls(
            schema_json=bound.schema.model_dump_json(),
            fingerprint=bound.fingerprint(),
            plugins=tuple(sorted(plugins)),
            direct_codecs=tuple(sorted(direct)),
            codecs=tuple(sorted(codecs)),
        )

    def build_encoder(self) -> RecordEncoder:
        """Load the plugins, rebuild the schema and check it matches the parent's."""
        from recordkit._plugins import load_plugins

        registry = load_plugins(allow=self.plugins).registry
        for ref in self.direct_codecs:
            codec = _import_ref(ref)
            if codec.name not in registry or registry.get(codec.name) is not codec:
                registry.register(codec, replace=codec.name in registry)
        for name, ref in self.codecs:
            found = _class_ref(registry.get(name))
            if found != ref:
                raise PluginError(
                    f"a worker process got codec {name!r} from {found}, the writer from {ref}", codec=name
                )
        bound = Schema.model_validate_json(self.schema_json).bind(registry)
        if bound.fingerprint() != self.fingerprint:
            raise PluginError(
                "a worker process rebuilt the schema with a different wire layout "
                f"({bound.fingerprint()} instead of {self.fingerprint})"
            )
        return RecordEncoder(bound)


def _class_ref(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _import_ref(ref: str) -> Any:
    module_name, _, qualname = ref.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def encode_batch(encoder: RecordEncoder, items: Sequence[Item]) -> list[Result]:
    """Encode and frame each record; a record that fails gives its error instead."""
    results: list[Result] = []
    append = results.append
    encode = encoder.encode
    for label, record in items:
        try:
            append(frame_record(encode(record, label)))
        except RecordkitError as exc:
            append(exc)
    return results


# -- in the worker process ---------------------------------------------------------------

_worker_setup: WorkerSetup | None = None
_worker_encoder: RecordEncoder | None = None


def _init_worker(setup: WorkerSetup) -> None:
    global _worker_setup
    _worker_setup = setup


def _encode_in_worker(items: list[Item]) -> list[Result]:
    # The encoder is built on the first batch, not in the initializer, so that a failure
    # (a plugin missing in the worker's environment) reaches the parent as itself
    # rather than as a broken pool.
    global _worker_encoder
    if _worker_encoder is None:
        assert _worker_setup is not None, "worker started without its setup"
        _worker_encoder = _worker_setup.build_encoder()
    return encode_batch(_worker_encoder, items)


# -- in the parent -----------------------------------------------------------------------

T = TypeVar("T")


class OrderedPool(Generic[T]):
    """Worker processes that encode batches; results come back in submission order.

    :meth:`submit` returns the results that had to be collected to keep at most
    ``workers * batches_per_worker`` batches in flight; :meth:`drain` returns the rest.
    Each batch carries a ``tag`` (whatever the caller needs to place its results).
    """

    def __init__(
        self, setup: WorkerSetup, workers: int, *, batches_per_worker: int = BATCHES_PER_WORKER
    ) -> None:
        if workers < 2:
            raise ValueError(f"an OrderedPool needs at least 2 workers, not {workers}")
        self._executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(setup,),
        )
        self._in_flight: collections.deque[tuple[T, Future[list[Result]]]] = collections.deque()
        self._max_in_flight = workers * batches_per_worker

    def submit(self, tag: T, items: list[Item]) -> list[tuple[T, list[Result]]]:
        try:
            future = self._executor.submit(_encode_in_worker, items)
        except BrokenProcessPool as exc:
            raise _worker_died(exc) from exc
        self._in_flight.append((tag, future))
        done = []
        while len(self._in_flight) > self._max_in_flight:
            done.append(self._collect())
        return done

    def drain(self) -> Iterator[tuple[T, list[Result]]]:
        while self._in_flight:
            yield self._collect()

    def _collect(self) -> tuple[T, list[Result]]:
        tag, future = self._in_flight.popleft()
        try:
            return tag, future.result()
        except BrokenProcessPool as exc:
            raise _worker_died(exc) from exc

    def close(self, *, cancel: bool = False) -> None:
        """Stop the workers; with ``cancel``, drop the batches still queued."""
        if cancel:
            for _, future in self._in_flight:
                future.cancel()
            self._in_flight.clear()
        self._executor.shutdown(wait=True, cancel_futures=cancel)


def _worker_died(exc: BaseException) -> DatasetError:
    return DatasetError(f"a writer worker process died ({exc}); complete shards are kept, resume to continue")
