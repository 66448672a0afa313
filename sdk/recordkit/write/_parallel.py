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
TensorFlow (or holds threads) is unsafe. Starting one costs about half a second of CPU, so
they are started only once the write has shown it is long enough to repay that: until
:data:`START_AFTER_SECONDS` of encoding have been done, batches are encoded in the calling
process, and a short write never starts a process at all. Records travel in batches sized from the
measured encoding time (about :data:`TARGET_BATCH_SECONDS` of work each, at most
:data:`MAX_BATCH_RECORDS` records), so a slow record (a large PNG to compress) does not
hold a whole batch hostage and a fast one does not pay a round trip each. Memory stays
bounded: at most ``batches_per_worker`` batches per worker are in flight, whatever the
size of the input.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import multiprocessing
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Generic, TypeVar

from recordkit.codec._plugins import load_plugins
from recordkit.codec._registry import CodecRegistry
from recordkit.errors import DatasetError, PluginError, RecordkitError
from recordkit.schema._encoder import RecordEncoder, SidesSeen
from recordkit.schema._schema import BoundSchema, Schema

__all__ = ["FIRST_BATCH_RECORDS", "START_AFTER_SECONDS", "OrderedPool", "WorkerSetup", "encode_batch"]

#: Records in the first batch, before any encoding time has been measured.
FIRST_BATCH_RECORDS = 4
#: Encoding work per batch: long enough to amortise a round trip to a worker (about a
#: millisecond), short enough to spread slow records evenly over the workers.
TARGET_BATCH_SECONDS = 0.05
#: Records per batch at most, which bounds the memory of fast, small records in flight.
MAX_BATCH_RECORDS = 256
#: Batches in flight per worker: one being encoded and one waiting keeps a worker busy.
BATCHES_PER_WORKER = 2
#: Encoding time spent in the calling process before the worker processes are started:
#: about what starting two of them costs, so a write too short to gain from them does
#: not pay for them (and a long one loses nothing).
START_AFTER_SECONDS = 0.5

#: A record travels as (label for its errors: its index or key, the record).
Item = tuple[int | str, Any]
#: A record comes back as its framed TFRecord bytes, or the error that rejected it.
Result = bytes | RecordkitError
#: A batch's results, the seconds its encoding took (for sizing the next batches) and the
#: sides of its pictures.
Timed = tuple[list[Result], float, SidesSeen]


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
    #: ``(field, reason)``: the encoder's reasons for fields it does not store (``elsewhere``).
    elsewhere: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_bound(
        cls, bound: BoundSchema, registry: CodecRegistry, elsewhere: Mapping[str, str] | None = None
    ) -> WorkerSetup:
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
            elsewhere=tuple(sorted((elsewhere or {}).items())),
        )

    def build_encoder(self) -> RecordEncoder:
        """Load the plugins, rebuild the schema and check it matches the parent's."""
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
        return RecordEncoder(bound, dict(self.elsewhere))


def _class_ref(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _import_ref(ref: str) -> Any:
    module_name, _, qualname = ref.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def encode_batch(
    encoder: RecordEncoder, items: Sequence[Item], seen: SidesSeen | None = None
) -> list[Result]:
    """Encode and frame each record; a record that fails gives its error instead. With
    ``seen``, the sides of the records' pictures are added to it."""
    results: list[Result] = []
    append = results.append
    encode = encoder.encode_framed
    for label, record in items:
        try:
            append(encode(record, label, seen))
        except RecordkitError as exc:
            append(exc)
    return results


# -- in the worker process ---------------------------------------------------------------

_worker_setup: WorkerSetup | None = None
_worker_encoder: RecordEncoder | None = None


def _init_worker(setup: WorkerSetup) -> None:
    global _worker_setup
    _worker_setup = setup


def _encoder_in_worker() -> RecordEncoder:
    # The encoder is built by a task, not in the initializer, so that a failure (a plugin
    # missing in the worker's environment) reaches the parent as itself rather than as a
    # broken pool.
    global _worker_encoder
    if _worker_encoder is None:
        assert _worker_setup is not None, "worker started without its setup"
        _worker_encoder = _worker_setup.build_encoder()
    return _worker_encoder


def _warm_up_worker() -> bool:
    """Build the worker's encoder ahead of the first batch; True when it is ready.
    A failure is left for the first batch to report."""
    try:
        _encoder_in_worker()
    except Exception:
        return False
    return True


def _timed_encode(encoder: RecordEncoder, items: Sequence[Item]) -> Timed:
    start = time.perf_counter()
    seen: SidesSeen = {}
    results = encode_batch(encoder, items, seen)
    return results, time.perf_counter() - start, seen


def _encode_in_worker(items: list[Item]) -> Timed:
    return _timed_encode(_encoder_in_worker(), items)


# -- in the parent -----------------------------------------------------------------------

T = TypeVar("T")


class OrderedPool(Generic[T]):
    """Worker processes that encode batches; results come back in submission order.

    :meth:`submit` returns the results that had to be collected to keep at most
    ``workers * batches_per_worker`` batches in flight; :meth:`drain` returns the rest.
    Each batch carries a ``tag`` (whatever the caller needs to place its results), and
    :attr:`batch_records` says how many records the next batch should have.

    Starting a worker (a fresh interpreter that imports recordkit and the plugins) takes
    about half a second. With a ``local_encoder``, the workers are started only after
    :data:`START_AFTER_SECONDS` of encoding in the calling process, and batches submitted
    before every worker is ready are encoded there too instead of waiting, so the
    start-up costs a short write nothing and a long one little; and when the workers cannot start
    at all (a ``spawn`` worker re-imports the main module, which fails for code typed
    into an interpreter or piped to one), a warning says why and the calling process
    encodes everything.
    """

    def __init__(
        self,
        setup: WorkerSetup,
        workers: int,
        *,
        batches_per_worker: int = BATCHES_PER_WORKER,
        local_encoder: RecordEncoder | None = None,
    ) -> None:
        if workers < 2:
            raise ValueError(f"an OrderedPool needs at least 2 workers, not {workers}")
        self._setup = setup
        self._workers = workers
        self._executor: ProcessPoolExecutor | None = None
        self._warming: list[Future[bool]] = []
        self._in_flight: collections.deque[tuple[T, int, Future[Timed]]] = collections.deque()
        self._max_in_flight = workers * batches_per_worker
        self._local_encoder = local_encoder
        #: Seconds of encoding done in this process so far (before the workers start).
        self._local_seconds = 0.0
        #: True once the workers are known not to have started (the pool broke at start-up).
        self._local_only = False
        self._seconds_per_record: float | None = None
        if local_encoder is None or START_AFTER_SECONDS <= 0:
            self._start()

    @property
    def started(self) -> bool:
        """Whether the worker processes have been started."""
        return self._executor is not None

    def _start(self) -> None:
        self._executor = ProcessPoolExecutor(
            max_workers=self._workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self._setup,),
        )
        self._warming = [self._executor.submit(_warm_up_worker) for _ in range(self._workers)]

    @property
    def batch_records(self) -> int:
        """Records for the next batch: about :data:`TARGET_BATCH_SECONDS` of encoding."""
        if self._seconds_per_record is None:
            return FIRST_BATCH_RECORDS
        wanted = TARGET_BATCH_SECONDS / max(self._seconds_per_record, 1e-9)
        return max(1, min(MAX_BATCH_RECORDS, int(wanted)))

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until every started worker is up or has failed to start (at most
        ``timeout`` seconds); whether batches now go to the workers. False at once when
        the workers have not been started."""
        if self._executor is None:
            return False
        wait(self._warming, timeout=timeout)
        return self._workers_ready()

    def _workers_ready(self) -> bool:
        if self._executor is None:
            return False
        if self._warming and all(future.done() for future in self._warming):
            if any(future.exception() is not None for future in self._warming):
                self._start_failed()
            self._warming = []
        return not self._warming and not self._local_only

    def _start_failed(self) -> None:
        """The pool broke before any worker ran a task: encode here from now on (or, with
        no local encoder, raise an error that says what to do)."""
        if self._local_encoder is None:
            raise DatasetError(f"the writer's worker processes could not start; {_START_ADVICE}")
        self._local_only = True
        warnings.warn(
            f"recordkit: the writer's worker processes could not start, so this process encodes "
            f"every record; {_START_ADVICE}",
            RuntimeWarning,
            stacklevel=_first_frame_outside_recordkit(),
        )

    def submit(self, tag: T, items: list[Item]) -> list[tuple[T, list[Result], SidesSeen]]:
        if self._local_encoder is not None and not self._workers_ready():
            future: Future[Timed] = Future()
            future.set_result(_timed_encode(self._local_encoder, items))
            seconds = future.result()[1]
            self._note_time(len(items), seconds)
            self._local_seconds += seconds
            if self._executor is None and self._local_seconds >= START_AFTER_SECONDS:
                self._start()
        else:
            assert self._executor is not None  # started at once without a local encoder
            try:
                future = self._executor.submit(_encode_in_worker, items)
            except BrokenProcessPool as exc:
                raise _worker_died(exc) from exc
        self._in_flight.append((tag, len(items), future))
        done = []
        while len(self._in_flight) > self._max_in_flight:
            done.append(self._collect())
        return done

    def drain(self) -> Iterator[tuple[T, list[Result], SidesSeen]]:
        while self._in_flight:
            yield self._collect()

    def _collect(self) -> tuple[T, list[Result], SidesSeen]:
        tag, count, future = self._in_flight.popleft()
        try:
            results, seconds, seen = future.result()
        except BrokenProcessPool as exc:
            raise _worker_died(exc) from exc
        self._note_time(count, seconds)
        return tag, results, seen

    def _note_time(self, count: int, seconds: float) -> None:
        """Fold a batch's encoding time into the running estimate per record."""
        per_record = seconds / max(count, 1)
        previous = self._seconds_per_record
        self._seconds_per_record = per_record if previous is None else 0.7 * previous + 0.3 * per_record

    def close(self, *, cancel: bool = False) -> None:
        """Stop the workers; with ``cancel``, drop the batches still queued."""
        if cancel:
            for _, _, future in self._in_flight:
                future.cancel()
            self._in_flight.clear()
        if self._executor is None:
            return
        self._executor.shutdown(wait=True, cancel_futures=cancel)
        if not cancel:
            self._workers_ready()  # every worker has started or failed by now: warn if they failed


def _first_frame_outside_recordkit() -> int:
    """The ``stacklevel`` that points a warning at the user's call, however deep inside
    recordkit it is raised."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("recordkit"):
        frame, level = frame.f_back, level + 1
    return level


_START_ADVICE = (
    "worker processes are started with 'spawn' and re-import the main module: run the code from a "
    'file, with the writing under `if __name__ == "__main__":`, or pass workers=1'
)


def _worker_died(exc: BaseException) -> DatasetError:
    return DatasetError(f"a writer worker process died ({exc}); complete shards are kept, resume to continue")
