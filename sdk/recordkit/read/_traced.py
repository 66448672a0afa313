"""Functions of recordkit's ``tf.data`` pipelines, traced as written.

``tf.data`` converts every function it traces with AutoGraph (Python ``if`` and ``for``
on tensors rewritten into graph ops) unless told not to. recordkit's pipeline functions
and codecs' batched decodes branch in the graph explicitly (``tf.cond``) and loop over
Python values only, so the conversion changes nothing in them but costs a few
milliseconds of CPU at every build of a read: a large share of starting a small one
(the read of a field group's embeddings, say).
"""

from __future__ import annotations

import collections
import functools
import os
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = [
    "AUTOTUNE",
    "UNOPTIMIZED_ATTRIBUTE",
    "default_parallel_calls",
    "interleaved_datasets",
    "mapped",
    "parallel_map",
    "rebatched",
    "tfrecord_file",
    "traced_as_written",
]

_Function = TypeVar("_Function", bound=Callable[..., Any])


def traced_as_written(function: _Function) -> _Function:
    """``function``, for a ``tf.data`` transformation to trace without AutoGraph."""
    import tensorflow as tf

    converted: _Function = tf.autograph.experimental.do_not_convert(function)
    return converted


#: ``tf.data.AUTOTUNE``'s value, for ``num_parallel_calls`` (without importing TensorFlow).
AUTOTUNE = -1


def default_parallel_calls() -> int:
    """The calls of each of recordkit's parallel maps that run at once unless the read
    says otherwise: one more than the CPUs this process may run on, so that a record
    is ready to start whenever a call ends.

    Not ``tf.data.AUTOTUNE``: on this project's benchmark machine (2 CPUs) the
    autotuner's own modelling cost 3 to 8% more CPU per record, and it left some short
    passes at a parallelism of one (half the records/s) where a fixed count did so less
    often; ``docs/performance-tfdata.md`` gives the runs. ``num_parallel_calls=-1``
    (:data:`AUTOTUNE`) gives the autotuner the choice back."""
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return len(cpus) + 1


def parallel_map(
    dataset: Any,
    function: Callable[..., Any],
    *,
    deterministic: bool | None,
    calls: int | None = None,
    reuse: Hashable | None = None,
    token: Any = None,
) -> Any:
    """``dataset.map(function, num_parallel_calls=calls, deterministic=deterministic)``
    (``calls`` None: :func:`default_parallel_calls`), ``function`` traced as written, and
    instantiated at each iterator without Grappler.

    ``tf.data`` instantiates every function of a pipeline again for each iterator, and
    for a function it may run on several devices it first optimizes the function's graph
    with Grappler, at a cost that grows with its ops (about 0.1 ms of CPU an op: 20 to 60
    ms an iterator for a read of pictures, audio, text and boxes, more than the
    hand-written pipeline's whole start). A function marked ``experimental_ints_on_device``
    runs on the pipeline's own device (the CPU) and is instantiated without that pass,
    as a ``tf.function`` body is; the ops and their results are the same. No public
    TensorFlow API sets a ``map`` function's attributes, so the mark goes through
    ``tf.data``'s own function wrapper (:func:`_map_without_grappler`), and only on the
    TensorFlow releases it was tested with (:data:`MARKED_MAP_RELEASES`): any other
    TensorFlow, one whose internals differ, and a function with an ``int32`` output
    (:class:`_Int32OutputError`) get the plain ``map``.

    With ``reuse``, a key of everything ``function`` depends on (the caller promises it
    keeps no other state: the same key, the same graph), the function traced for an
    earlier map of the same key (and input) is used again (:data:`REUSED_TRACES` are
    kept, the least recently used dropped first). Its one piece of per-read state may
    be ``token``: an eager tensor the function captures (a read's token, through which
    it reaches what it must not hold); a reused trace is given this map's ``token`` in
    place of the one it was traced with. Tracing, and TensorFlow registering a new
    function, is most of what building a small read costs."""

    traced = traced_as_written(function)
    parallel = default_parallel_calls() if calls is None else calls
    kept = None if reuse is None else ("map", reuse)
    return _through_internals(
        lambda: _map_without_grappler()(dataset, traced, deterministic, parallel, kept, token),
        lambda: dataset.map(traced, num_parallel_calls=parallel, deterministic=deterministic),
        _Int32OutputError,
    )


def mapped(dataset: Any, function: Callable[..., Any], *, reuse: Hashable | None = None) -> Any:
    """``dataset.map(function)`` (one call at a time, in the thread that asks for the
    element), ``function`` traced as written and marked, as :func:`parallel_map` marks
    its function, to be instantiated at each iterator without Grappler (on
    :data:`MARKED_MAP_RELEASES`; any other TensorFlow, or a function with an ``int32``
    output, gets the plain ``map``). With ``reuse``, as :func:`parallel_map`'s (no token:
    the function must depend on the key alone)."""
    traced = traced_as_written(function)
    kept = None if reuse is None else ("one at a time", reuse)
    return _through_internals(
        lambda: _map_one_at_a_time()(dataset, traced, kept), lambda: dataset.map(traced), _Int32OutputError
    )


def tfrecord_file(path: Any, compression: str = "") -> Any:
    """``tf.data.TFRecordDataset(path, compression)`` of the one file ``path`` (a scalar
    string tensor), without the ``flat_map`` over a dataset of its one name that
    ``TFRecordDataset`` puts before its reader: a function traced at every build, and
    started at every iterator (or at every shard an interleave opens). The reader op is
    the same (``TFRecordDataset``, its default buffer); a TensorFlow outside
    :data:`MARKED_MAP_RELEASES` gets the plain ``TFRecordDataset``."""
    import tensorflow as tf

    def reader() -> Any:
        from tensorflow.python.data.ops import readers

        return readers._TFRecordDataset(path, compression)

    return _through_internals(reader, lambda: tf.data.TFRecordDataset(path, compression_type=compression))


@functools.cache
def _map_one_at_a_time() -> Callable[[Any, Callable[..., Any], Hashable | None], Any]:
    """The ``Dataset`` class of :func:`mapped`: ``tf.data``'s ``MapDataset`` op with the
    arguments and element spec ``Dataset.map`` gives, its function wrapped with
    :data:`UNOPTIMIZED_ATTRIBUTE`."""
    import tensorflow as tf
    from tensorflow.python.data.ops import dataset_ops, map_op

    class MapWithoutGrappler(map_op._MapDataset):  # type: ignore[misc]
        def __init__(self, dataset: Any, function: Callable[..., Any], reuse: Hashable | None) -> None:
            self._input_dataset = dataset
            self._use_inter_op_parallelism = True
            self._preserve_cardinality = True
            self._map_func, captured = _map_function(self, function, dataset, reuse, None)
            self._force_synchronous = False
            self._name = None
            variant = tf.raw_ops.MapDataset(
                input_dataset=dataset._variant_tensor,
                other_arguments=captured,
                f=self._map_func.function,
                use_inter_op_parallelism=True,
                preserve_cardinality=True,
                force_synchronous=False,
                **self._common_args,
            )
            dataset_ops.UnaryDataset.__init__(self, dataset, variant)

    return MapWithoutGrappler


def _through_internals(build: Callable[[], Any], plain: Callable[[], Any], *refusals: type[Exception]) -> Any:
    """``build()``, which goes through ``tf.data``'s internals, on the TensorFlow releases
    they were tested with (:data:`MARKED_MAP_RELEASES`); ``plain()`` on any other, and
    when those internals differ (or ``build`` raises one of ``refusals``)."""
    import tensorflow as tf

    other_internals: tuple[type[Exception], ...] = (ImportError, AttributeError, TypeError, *refusals)
    if tf.__version__.startswith(MARKED_MAP_RELEASES):
        try:
            return build()
        except other_internals:
            pass
    return plain()


def _marked_function(transformation: Any, function: Callable[..., Any], dataset: Any) -> Any:
    """``tf.data``'s wrapper of ``function`` for ``transformation`` (a ``Dataset``
    being built on ``dataset``), marked with :data:`UNOPTIMIZED_ATTRIBUTE`."""
    from tensorflow.python.data.ops import structured_function

    return structured_function.StructuredFunctionWrapper(
        function,
        transformation._transformation_name(),
        dataset=dataset,
        defun_kwargs={UNOPTIMIZED_ATTRIBUTE: True},
    )


def _marked_map_function(transformation: Any, function: Callable[..., Any], dataset: Any) -> Any:
    """:func:`_marked_function` for a map; :class:`_Int32OutputError` when the function
    has an ``int32`` output (the caller then builds the plain ``map``)."""
    import tensorflow as tf

    wrapped = _marked_function(transformation, function, dataset)
    if any(output.dtype == tf.int32 for output in wrapped.function.outputs):
        raise _Int32OutputError(wrapped.function.name)
    return wrapped


def _map_function(
    transformation: Any, function: Callable[..., Any], dataset: Any, reuse: Hashable | None, token: Any
) -> tuple[Any, list[Any]]:
    """:func:`_marked_map_function` (kept for ``reuse`` when given, see :func:`parallel_map`)
    and the inputs it captures, ``token`` in place of the token it was traced with."""
    if reuse is None:
        wrapped = _marked_map_function(transformation, function, dataset)
        return wrapped, list(wrapped.function.captured_inputs)
    wrapped, traced_token = _kept_trace(
        (reuse, dataset.element_spec),
        lambda: (_marked_map_function(transformation, function, dataset), token),
    )
    captured = list(wrapped.function.captured_inputs)
    if token is not None:
        captured = [token if value is traced_token else value for value in captured]
    return wrapped, captured


def _kept_trace(key: Hashable, trace: Callable[[], Any]) -> Any:
    """The traced function kept for ``key`` (:data:`REUSED_TRACES` of them, the least
    recently used dropped first), else ``trace()``, kept from now on.

    Only for a pipeline built eagerly: one built in a graph (``tf.compat.v1``, or inside
    a traced function) would share a function whose captured inputs are another graph's
    tensors, so it is traced anew there (``trace()``, not kept)."""
    import tensorflow as tf

    if not tf.executing_eagerly():
        return trace()
    with _REUSED_LOCK:
        kept = _REUSED.pop(key, None)
    traced = kept or trace()  # traced unlocked
    with _REUSED_LOCK:
        _REUSED[key] = traced
        while len(_REUSED) > REUSED_TRACES:
            _REUSED.popitem(last=False)
    return traced


def _deterministic_attribute(deterministic: bool | None) -> str:
    """A ``tf.data`` op's ``deterministic`` attribute for the ``deterministic`` option."""
    return "default" if deterministic is None else str(bool(deterministic)).lower()


#: The TensorFlow releases whose ``tf.data`` internals :func:`_map_without_grappler` was
#: written against and tested with (``tests/recordkit/read/test_pipeline_shapes.py``
#: fails when the mark is lost on the installed one): a release outside them reads
#: through the plain ``map``, slower to start, never wrong.
MARKED_MAP_RELEASES = ("2.21.",)


class _Int32OutputError(Exception):
    """A map function has an ``int32`` output: TensorFlow 2.21 cannot start an iterator of
    a function run on one device that computes one beside other outputs ("Expected only
    one fetch node"), so :func:`parallel_map` gives every such function the plain
    ``map``."""


#: The function attribute that keeps a ``tf.data`` function on one device, and so out of
#: Grappler (TensorFlow's ``FunctionLibraryDefinition::kIntsOnDeviceAttr``).
UNOPTIMIZED_ATTRIBUTE = "experimental_ints_on_device"


@functools.cache
def _map_without_grappler() -> Callable[
    [Any, Callable[..., Any], bool | None, int, Hashable | None, Any], Any
]:
    """The ``Dataset`` class of :func:`parallel_map`: ``tf.data``'s parallel map (the
    same ``ParallelMapDatasetV2`` op, arguments and element spec that ``Dataset.map``
    gives), its function wrapped with :data:`UNOPTIMIZED_ATTRIBUTE`."""
    import tensorflow as tf
    from tensorflow.python.data.ops import dataset_ops, map_op

    class MapWithoutGrappler(map_op._ParallelMapDataset):  # type: ignore[misc]
        def __init__(
            self,
            dataset: Any,
            function: Callable[..., Any],
            deterministic: bool | None,
            calls: int,
            reuse: Hashable | None,
            token: Any,
        ) -> None:
            self._input_dataset = dataset
            self._use_inter_op_parallelism = True
            self._map_func, captured = _map_function(self, function, dataset, reuse, token)
            self._deterministic = _deterministic_attribute(deterministic)
            self._preserve_cardinality = True
            self._num_parallel_calls = tf.constant(calls, tf.int64)
            self._use_unbounded_threadpool = False
            self._name = None
            variant = tf.raw_ops.ParallelMapDatasetV2(
                input_dataset=dataset._variant_tensor,
                other_arguments=captured,
                num_parallel_calls=self._num_parallel_calls,
                f=self._map_func.function,
                deterministic=self._deterministic,
                use_inter_op_parallelism=True,
                preserve_cardinality=True,
                use_unbounded_threadpool=False,
                **self._common_args,
            )
            dataset_ops.UnaryDataset.__init__(self, dataset, variant)

    return MapWithoutGrappler


def interleaved_datasets(dataset: Any, *, cycle_length: int) -> Any:
    """``dataset.interleave(lambda nested: nested, cycle_length, block_length=1)`` of a
    dataset whose elements are datasets: one element of each of ``cycle_length`` of them
    in turn, in one thread (the elements are made, in parallel, where ``dataset``'s are).
    The identity function is traced once for each element spec and kept (as
    :func:`parallel_map` keeps its traces), marked to be instantiated at each
    iterator without Grappler, on :data:`MARKED_MAP_RELEASES`; any other TensorFlow gets
    the plain ``interleave``. TensorFlow runs no function for an element: an identity
    function's outputs are its inputs."""
    traced = traced_as_written(_itself)
    return _through_internals(
        lambda: _interleave_one_thread()(dataset, traced, cycle_length),
        lambda: dataset.interleave(traced, cycle_length=cycle_length, block_length=1),
    )


def _itself(nested: Any) -> Any:
    return nested


@functools.cache
def _interleave_one_thread() -> Callable[[Any, Callable[..., Any], int], Any]:
    """The ``Dataset`` class of :func:`interleaved_datasets`: ``tf.data``'s
    ``InterleaveDataset`` op with the arguments and element spec ``Dataset.interleave``
    gives (``block_length`` 1), its function kept and wrapped with
    :data:`UNOPTIMIZED_ATTRIBUTE`."""
    import tensorflow as tf
    from tensorflow.python.data.ops import dataset_ops, interleave_op

    class InterleaveOneThread(interleave_op._InterleaveDataset):  # type: ignore[misc]
        def __init__(self, dataset: Any, function: Callable[..., Any], cycle_length: int) -> None:
            self._input_dataset = dataset
            trace = functools.partial(_marked_function, self, function, dataset)
            self._map_func = _kept_trace(("nested", dataset.element_spec), trace)
            self._structure = self._map_func.output_structure._element_spec
            self._cycle_length = tf.constant(cycle_length, tf.int64)
            self._block_length = tf.constant(1, tf.int64)
            self._name = None
            variant = tf.raw_ops.InterleaveDataset(
                input_dataset=dataset._variant_tensor,
                other_arguments=self._map_func.function.captured_inputs,
                cycle_length=self._cycle_length,
                block_length=self._block_length,
                f=self._map_func.function,
                **self._common_args,
            )
            dataset_ops.UnaryDataset.__init__(self, dataset, variant)

    return InterleaveOneThread


def rebatched(dataset: Any, batch_size: int, *, drop_remainder: bool = False) -> Any:
    """``dataset.rebatch(batch_size, drop_remainder)`` of a dataset of dense tensors,
    without the map ``rebatch`` puts before it to turn sparse and ragged values dense:
    for dense values that map changes nothing, but its function is traced at every
    build and called at every element. Values of other kinds, and a TensorFlow outside
    :data:`MARKED_MAP_RELEASES`, get the plain ``rebatch``."""
    import tensorflow as tf

    def plain() -> Any:
        return dataset.rebatch(batch_size, drop_remainder=drop_remainder)

    if not all(type(spec) is tf.TensorSpec for spec in tf.nest.flatten(dataset.element_spec)):
        return plain()
    return _through_internals(lambda: _rebatch_without_map()(dataset, batch_size, drop_remainder), plain)


#: Traced functions :func:`parallel_map` and :func:`mapped` keep for reuse.
REUSED_TRACES = 16
_REUSED: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()
_REUSED_LOCK = threading.Lock()


@functools.cache
def _rebatch_without_map() -> Callable[[Any, int, bool], Any]:
    """The ``Dataset`` class of :func:`rebatched`: ``tf.data``'s ``RebatchDatasetV2`` op
    with the arguments and element spec ``Dataset.rebatch`` gives, on the dataset itself."""
    import tensorflow as tf
    from tensorflow.python.data.ops import dataset_ops, rebatch_op

    class RebatchWithoutMap(rebatch_op._RebatchDataset):  # type: ignore[misc]
        def __init__(self, dataset: Any, batch_size: int, drop_remainder: bool) -> None:
            self._input_dataset = dataset
            self._batch_sizes = tf.constant(batch_size, tf.int64)
            self._drop_remainder = tf.constant(drop_remainder, tf.bool)
            self._name = None
            batch = self._compute_static_batch_dim()
            self._element_spec = tf.nest.map_structure(
                lambda spec: spec._unbatch()._batch(batch), dataset.element_spec
            )
            variant = tf.raw_ops.RebatchDatasetV2(
                input_dataset=dataset._variant_tensor,
                batch_sizes=self._batch_sizes,
                drop_remainder=self._drop_remainder,
                **self._flat_structure,
            )
            dataset_ops.UnaryDataset.__init__(self, dataset, variant)

    return RebatchWithoutMap
