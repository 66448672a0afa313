"""The parallel maps of recordkit's tf.data reads run a fixed number of calls at once by
default (one more than the CPUs the process may run on), the number a read asks for, or
``tf.data.AUTOTUNE``; every choice reads the same batches, and a count that cannot be
right is refused before anything is read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

import recordkit as rk
from recordkit.read._traced import default_parallel_calls

SCHEMA = rk.Schema(
    name="parallel-calls",
    fields={
        "image": rk.FieldSpec(codec="image", options={"format": "png", "channels": 3}),
        "caption": rk.FieldSpec(codec="text"),
        "id": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
    },
)

#: Reads of both pipeline shapes: pictures padded (parsed record by record) and a read
#: without pictures (parsed in batches).
READS = [(["image", "id"], {"batch_size": 3, "pad": True}), (["caption", "id"], {"batch_size": 4})]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(7)
    records = [
        {
            "image": rng.integers(0, 256, (3 + i % 4, 5 + i % 3, 3), dtype=np.uint8),
            "caption": f"record {i} " + "word " * (i % 5),
            "id": i,
        }
        for i in range(10)
    ]
    path = tmp_path_factory.mktemp("calls") / "data"
    rk.write_dataset(records, SCHEMA, path, shard_records=4, progress=False)
    return path


def parallel_calls_of(read: Any) -> list[int]:
    """The ``num_parallel_calls`` of each parallel map in ``read``'s dataset graph."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef.FromString(read._as_serialized_graph().numpy())
    constants = {node.name: node for node in graph.node if node.op == "Const"}
    calls = []
    for node in graph.node:
        if node.op == "ParallelMapDatasetV2":
            constant = constants[node.input[-1].split(":")[0]]
            calls.append(int(tf.make_ndarray(constant.attr["value"].tensor)))
    return calls


def values(read: Any) -> list[dict[str, Any]]:
    return [{key: np.asarray(value) for key, value in batch.items()} for batch in read]


def test_the_default_is_one_call_more_than_the_cpus_the_process_may_run_on() -> None:
    assert default_parallel_calls() == len(os.sched_getaffinity(0)) + 1


@pytest.mark.parametrize(("fields", "options"), READS)
@pytest.mark.parametrize(("asked", "expected"), [(None, "default"), (3, 3), (1, 1), (tf.data.AUTOTUNE, -1)])
def test_every_parallel_map_of_a_read_runs_the_calls_asked_for_and_reads_the_same_batches(
    dataset: Path, fields: list[str], options: dict[str, Any], asked: int | None, expected: int | str
) -> None:
    read = rk.load_dataset(dataset, fields=fields, num_parallel_calls=asked, **options)
    calls = parallel_calls_of(read)
    assert calls
    assert set(calls) == {default_parallel_calls() if expected == "default" else expected}
    reference = rk.load_dataset(dataset, fields=fields, num_parallel_calls=tf.data.AUTOTUNE, **options)
    for one, other in zip(values(read), values(reference), strict=True):
        assert one.keys() == other.keys()
        for key in one:
            np.testing.assert_array_equal(one[key], other[key])


def test_a_read_config_carries_the_calls_into_the_dataset_handles_read(dataset: Path) -> None:
    ds = rk.open(dataset, fields=["image", "id"])
    read = ds.tf(3, layout=rk.Layout(pad=True), read_config=rk.ReadConfig(num_parallel_calls=2))
    assert set(parallel_calls_of(read)) == {2}


@pytest.mark.parametrize("calls", [0, -2, True, 1.5])
def test_a_number_of_calls_that_cannot_be_right_is_refused_naming_the_option(
    dataset: Path, calls: Any
) -> None:
    with pytest.raises(ValueError, match="num_parallel_calls must be a positive number of calls"):
        rk.ReadConfig(num_parallel_calls=calls)
    with pytest.raises(ValueError, match="num_parallel_calls must be a positive number of calls"):
        rk.load_dataset(dataset, fields=["id"], batch_size=2, num_parallel_calls=calls)


def _functions(read: Any, op: str) -> list[Any]:
    """The functions of the ``op`` nodes of ``read``'s dataset graph (and its functions')."""
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef.FromString(read._as_serialized_graph().numpy())
    library = {function.signature.name: function for function in graph.library.function}
    nodes = [*graph.node, *(node for function in graph.library.function for node in function.node_def)]
    return [library[node.attr["f"].func.name] for node in nodes if node.op == op]


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "another release"])
def test_a_map_one_call_at_a_time_gives_the_plain_maps_elements_marked_on_the_tested_releases(
    marked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recordkit.read import _traced

    if not marked:
        monkeypatch.setattr(_traced, "MARKED_MAP_RELEASES", ("1.0.",))
    read = _traced.mapped(tf.data.Dataset.range(5), lambda x: {"twice": x * 2})
    assert [int(element["twice"]) for element in read] == [0, 2, 4, 6, 8]
    (function,) = _functions(read, "MapDataset")
    assert function.attr[_traced.UNOPTIMIZED_ATTRIBUTE].b is marked


def test_a_map_reuses_the_function_traced_for_its_key_and_keeps_a_bounded_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from recordkit.read import _traced

    monkeypatch.setattr(_traced, "_REUSED", type(_traced._REUSED)())
    monkeypatch.setattr(_traced, "REUSED_TRACES", 2)
    traced: list[int] = []

    def read(reuse: Any, shift: int) -> Any:
        def shard(index: Any) -> Any:
            traced.append(shift)
            return index + shift

        mapped = _traced.parallel_map(tf.data.Dataset.range(3), shard, deterministic=True, reuse=reuse)
        return [int(element) for element in mapped], _functions(mapped, "ParallelMapDatasetV2")

    first, (function,) = read("a", 0)
    again, (same,) = read("a", 0)
    assert first == again == [0, 1, 2]
    assert same.signature.name == function.signature.name
    assert traced == [0]
    read("b", 10), read("c", 20)  # "a" is the least recently used of three: dropped
    shifted, (other,) = read("a", 100)
    assert shifted == [100, 101, 102]
    assert other.signature.name != function.signature.name
    unkeyed, _ = read(None, 1000)
    assert unkeyed == [1000, 1001, 1002]
    assert traced == [0, 10, 20, 100, 1000]


@pytest.mark.parametrize("marked", [True, False])
def test_datasets_interleaved_in_one_thread_come_a_block_each_in_turn_through_one_kept_identity(
    monkeypatch: pytest.MonkeyPatch, marked: bool
) -> None:
    from recordkit.read import _traced

    if not marked:
        monkeypatch.setattr(_traced, "MARKED_MAP_RELEASES", ("1.0.",))

    def read() -> Any:
        nested = tf.data.Dataset.range(3).map(lambda index: tf.data.Dataset.range(index * 10, index * 10 + 3))
        return _traced.interleaved_datasets(nested, cycle_length=2)

    first, second = read(), read()
    assert [int(element) for element in first] == [0, 10, 1, 11, 2, 12, 20, 21, 22]
    (function,) = _functions(first, "InterleaveDataset")
    (again,) = _functions(second, "InterleaveDataset")
    assert function.attr[_traced.UNOPTIMIZED_ATTRIBUTE].b is marked
    assert [node.op for node in function.node_def if node.op != "Identity"] == []
    assert (again.signature.name == function.signature.name) is marked
