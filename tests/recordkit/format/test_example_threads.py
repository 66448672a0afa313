"""The TF-free Example decoder from many threads at once (sdk/recordkit/format/_example.py):
its protobuf class is made once, by one thread, while the others that decode meanwhile
wait for it (Grain's prefetch threads all decode their first record together)."""

from __future__ import annotations

import multiprocessing
import threading
import time
from typing import Any

import numpy as np
import pytest

from recordkit import WireKind
from recordkit.format import _example
from recordkit.format._example import decode_example, encode_example, encode_feature

THREADS = 16


def _record(i: int) -> bytes:
    return encode_example(
        [
            (b"name", encode_feature(WireKind.BYTES, [f"n{i}".encode(), b"x" * i])),
            (b"label", encode_feature(WireKind.INT64, [i, -i])),
            (b"vector", encode_feature(WireKind.FLOAT, np.arange(i, dtype=np.float32))),
        ]
    )


def test_threads_decoding_their_first_records_together_share_one_example_class_made_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_example, "_loaded", [])  # as in a process that has decoded nothing yet
    made: list[Any] = []
    build = _example._example_class

    def slow_build() -> Any:
        # Slow enough that every thread asks for the class while the first builds it
        # (each built its own descriptor pool and class before the class was made under a lock).
        time.sleep(0.05)
        made.append(build())
        return made[-1]

    monkeypatch.setattr(_example, "_example_class", slow_build)
    start = threading.Barrier(THREADS)
    classes: list[Any] = [None] * THREADS
    decoded: list[Any] = [None] * THREADS

    def decode(t: int) -> None:
        start.wait()
        decoded[t] = decode_example(_record(t + 20))
        classes[t] = _example._parser()[0]

    threads = [threading.Thread(target=decode, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(made) == 1
    assert all(cls is made[0] for cls in classes)
    for t, values in enumerate(decoded):
        i = t + 20
        assert values["name"] == (WireKind.BYTES, [f"n{i}".encode(), b"x" * i])
        assert values["label"][1].tolist() == [i, -i]
        assert values["vector"][1].tolist() == list(range(i))


def _decode_in_child(data: bytes) -> list[int]:
    return decode_example(data)["label"][1].tolist()  # type: ignore[no-any-return]


def test_a_process_forked_while_a_thread_makes_the_class_makes_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_example, "_loaded", [])
    # The lock held, as by a thread of the parent making the class when the fork comes:
    # the child, whose copy of that thread never runs, must not wait for it (it hung).
    with _example._loading, multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_decode_in_child, (_record(3),)).get(timeout=120) == [3, -3]
