"""Encoding in worker processes: the same bytes as in-process, errors named, codecs rebuilt."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _writer_support import SCHEMA, check_manifest_matches_files, make_records, read_ids, read_split

import recordkit as rk
from recordkit.errors import InvalidValueError, PluginError, RecordError
from recordkit.storage import location
from recordkit.write._parallel import BATCHES_PER_WORKER, MAX_BATCH_RECORDS, WorkerSetup

#: Worker processes start for every test here.
pytestmark = pytest.mark.slow

BAD = frozenset({5, 77, 150})


@pytest.fixture(autouse=True)
def _workers_import_the_real_recordkit(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest puts tests/ on sys.path (for tests/conftest.py). Spawned workers inherit
    sys.path, and with tests/ on it ``import recordkit`` finds tests/recordkit/ (a
    namespace package) before the installed package's finder; so take it off while the
    workers start. This is an artefact of the test layout, not of the writer."""
    tests_dir = os.path.abspath(Path(__file__).parents[2])
    monkeypatch.setattr(sys, "path", [p for p in sys.path if os.path.abspath(p or ".") != tests_dir])


def shard_bytes_of(root: Path) -> dict[str, bytes]:
    unlisted = ("dataset.json", ".recordkit.lock")
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.name not in unlisted}


@pytest.fixture(autouse=True)
def workers_start_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the workers: start them with the first batch rather than
    after START_AFTER_SECONDS of encoding here (see the test of that below)."""
    monkeypatch.setattr("recordkit.write._parallel.START_AFTER_SECONDS", 0.0)


def test_parallel_output_equals_serial_byte_for_byte(tmp_path: Path) -> None:
    options: dict[str, Any] = {
        "shard_bytes": 4000,
        "compression": "GZIP",
        "on_error": "skip",
        "progress": False,
    }
    serial = rk.write_dataset(make_records(400, bad=BAD), SCHEMA, tmp_path / "serial", **options)
    parallel = rk.write_dataset(
        make_records(400, bad=BAD), SCHEMA, tmp_path / "parallel", workers=2, **options
    )

    assert len(serial.split("train").shards) > 3
    assert parallel.splits == serial.splits
    assert shard_bytes_of(tmp_path / "parallel") == shard_bytes_of(tmp_path / "serial")  # rejects too
    assert read_ids(tmp_path / "parallel") == [i for i in range(400) if i not in BAD]
    check_manifest_matches_files(tmp_path / "parallel")


def test_parallel_error_names_record_and_field(tmp_path: Path) -> None:
    with pytest.raises(RecordError) as caught:
        rk.write_dataset(
            make_records(300, bad=frozenset({170})),
            SCHEMA,
            tmp_path,
            shard_records=50,
            workers=2,
            progress=False,
        )
    assert caught.value.record == 170
    assert caught.value.field == "payload"
    split = rk.Manifest.load(tmp_path).split("train")
    assert [s.records for s in split.shards] == [50, 50, 50]
    check_manifest_matches_files(tmp_path)


def test_parallel_splits_keep_their_order(tmp_path: Path) -> None:
    records = list(make_records(200))
    with rk.DatasetWriter(tmp_path, SCHEMA, shard_records=40, workers=2, progress=False) as writer:
        for record in records:
            writer.write(record, split="test" if record["id"] % 3 == 0 else "train")
    assert read_ids(tmp_path, "test") == list(range(0, 200, 3))
    assert read_split(tmp_path, "train") == [r for r in records if r["id"] % 3]  # values, not just ids
    check_manifest_matches_files(tmp_path)


# -- codecs that no entry point provides ----------------------------------------------------


class TaggedCodec(rk.Codec[rk.CodecOptions]):
    """A test-local codec: bytes that must start with b"TAG:"."""

    name = "tagged"
    version = "3"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.BYTES, ()),))

    def encode(self, value: Any) -> rk.WireValues:
        if not isinstance(value, bytes) or not value.startswith(b"TAG:"):
            raise InvalidValueError("not tagged bytes")
        return {"": value}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]


class TaggedPlugin:
    @staticmethod
    @rk.hookimpl
    def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
        registry.register(TaggedCodec)


TAGGED = rk.Schema(
    name="tagged", fields={"id": rk.FieldSpec(codec="scalar"), "blob": rk.FieldSpec(codec="tagged")}
)


def test_workers_rebuild_in_process_codecs(tmp_path: Path) -> None:
    registry = rk.load_plugins(allow=["scalar"], extra_plugins=[("tagged-plugin", TaggedPlugin)]).registry
    setup = WorkerSetup.from_bound(TAGGED.bind(registry), registry)
    assert setup.plugins == ("scalar",)  # entry points: loaded by name in the worker
    assert setup.direct_codecs == (f"{__name__}:TaggedCodec",)
    assert setup.build_encoder().bound.fingerprint() == TAGGED.fingerprint(registry)

    records = [{"id": i, "blob": b"TAG:%d" % i if i != 40 else b"untagged"} for i in range(100)]
    manifest = rk.write_dataset(
        records,
        TAGGED,
        tmp_path,
        registry=registry,
        workers=2,
        on_error="skip",
        shard_records=30,
        progress=False,
    )
    assert manifest.codecs["tagged"].version == "3"
    assert manifest.codecs["tagged"].plugin == "tagged-plugin"
    assert manifest.split("train").num_records == 99
    reject = json.loads((tmp_path / "rejects-train.jsonl").read_text())
    assert (reject["index"], reject["errors"][0]["field"]) == (40, "blob")
    # Reading back needs the same registry (the codec is not installed as a plugin).
    decoded = []
    for shard in manifest.split("train").shards:
        from recordkit.format._tfrecord import (  # private: a shard's raw frames, without TensorFlow
            iter_tfrecords,
        )
        from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
            decode_record_numpy,
        )

        bound = manifest.schema.bind(registry)
        decoded += [
            decode_record_numpy(bound.fields, data)
            for _, data in iter_tfrecords(location(tmp_path / shard.file))
        ]
    assert [r["blob"] for r in decoded] == [r["blob"] for r in records if r["id"] != 40]


def test_a_worker_that_gets_another_codec_is_refused() -> None:
    registry = rk.load_plugins(allow=["scalar"], extra_plugins=[("tagged-plugin", TaggedPlugin)]).registry
    setup = WorkerSetup.from_bound(TAGGED.bind(registry), registry)
    wrong = WorkerSetup(
        setup.schema_json, setup.fingerprint, setup.plugins, setup.direct_codecs,
        (("scalar", "somewhere:Else"), *setup.codecs[1:]),
    )  # fmt: skip
    with pytest.raises(PluginError, match="somewhere:Else"):
        wrong.build_encoder()


# -- who encodes: the parent until the workers are ready, then the workers ------------------


class PidCodec(rk.Codec[rk.CodecOptions]):
    """A test-local codec that stores the id of the process that encoded the record."""

    name = "encoder_pid"
    version = "1"

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.INT64, ()),))

    def encode(self, value: Any) -> rk.WireValues:
        return {"": os.getpid()}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return wire[""]


class PidPlugin:
    @staticmethod
    @rk.hookimpl
    def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
        registry.register(PidCodec)


def test_batches_are_encoded_here_until_the_workers_are_ready() -> None:
    from recordkit import RecordEncoder
    from recordkit.format._example import (  # private: the stored wire values, without TensorFlow
        decode_example,
    )
    from recordkit.write._parallel import OrderedPool

    registry = rk.load_plugins(allow=["scalar"], extra_plugins=[("pid-plugin", PidPlugin)]).registry
    schema = rk.Schema(name="pids", fields={"pid": rk.FieldSpec(codec="encoder_pid")})
    bound = schema.bind(registry)
    pool: OrderedPool[int] = OrderedPool(
        WorkerSetup.from_bound(bound, registry), 2, local_encoder=RecordEncoder(bound)
    )
    done: list[tuple[int, list[Any]]] = []
    try:
        # Submitted while the workers are still starting (a fresh interpreter each).
        done += pool.submit(0, [(0, {"pid": 0})])
        assert pool.wait_ready(timeout=120), "the workers never started"
        done += pool.submit(1, [(1, {"pid": 0})])
        done += list(pool.drain())
    finally:
        pool.close()
    pids = [decode_example(results[0][12:-4])["pid"][1][0] for _, results, _ in done]
    assert [t for t, _, _ in done] == [0, 1]  # in submission order
    assert pids[0] == os.getpid()
    assert pids[1] != os.getpid()


# -- order and memory on real records -------------------------------------------------------


def photo_records(n: int) -> Iterator[dict[str, Any]]:
    """Real photos to re-encode: noise images of varying sizes (so batches take uneven
    times and may finish out of order), made one at a time as they are written."""
    for i in range(n):
        rng = np.random.default_rng(i)
        height, width = (int(v) for v in rng.integers(24, 160, 2))
        yield {
            "image": rng.integers(0, 256, (height, width, 3), dtype=np.uint8),
            "name": f"photo-{i:03d}",
            "pid": 0,  # replaced by the id of the process that encodes the record
        }


PHOTOS = rk.Schema(
    name="photos",
    fields={
        "image": rk.FieldSpec(codec="image", options={"format": "jpeg", "quality": 90}),
        "name": rk.FieldSpec(codec="scalar", options={"dtype": "str"}),
        "pid": rk.FieldSpec(codec="encoder_pid"),
    },
)


def test_workers_encode_real_images_in_input_order(tmp_path: Path) -> None:
    registry = rk.load_plugins(allow=["scalar", "image"], extra_plugins=[("pid-plugin", PidPlugin)]).registry
    n = 240
    with rk.DatasetWriter(
        tmp_path / "parallel", PHOTOS, registry=registry, workers=2, shard_records=50, progress=False
    ) as writer:
        records = photo_records(n)
        for record in itertools.islice(records, 8):
            writer.write(record)
        # Wait for the workers to be up, so the rest is encoded by them, not here.
        assert writer._pool is not None
        assert writer._pool.wait_ready(timeout=120), "the workers never started"
        for record in records:
            writer.write(record)
    serial = rk.write_dataset(
        photo_records(n), PHOTOS, tmp_path / "serial", registry=registry, shard_records=50
    )

    parallel = read_split(tmp_path / "parallel", registry=registry)
    assert [r["name"] for r in parallel] == [f"photo-{i:03d}" for i in range(n)]
    pids = [int(r["pid"]) for r in parallel]
    assert pids[0] == os.getpid()  # the first batch, encoded here while the workers started
    assert os.getpid() not in pids[8:]  # the rest by the workers
    expected = read_split(tmp_path / "serial", registry=registry)
    for got, want in zip(parallel, expected, strict=True):
        assert got["name"] == want["name"]
        assert np.array_equal(got["image"], want["image"])  # the same JPEG bytes, decoded
    assert [s.records for s in writer.manifest.split("train").shards] == [50, 50, 50, 50, 40]
    assert writer.manifest.splits.keys() == serial.splits.keys()
    check_manifest_matches_files(tmp_path / "parallel")


def test_records_in_flight_stay_bounded_whatever_the_input_size(tmp_path: Path) -> None:
    """Memory is bounded by the records in flight (handed to the writer, not yet in a
    shard): at most a batch being filled and ``workers * BATCHES_PER_WORKER`` batches
    at the workers, however long the input."""
    workers, n = 2, 4000
    bound = (workers * BATCHES_PER_WORKER + 1) * MAX_BATCH_RECORDS
    in_flight = []
    with rk.DatasetWriter(tmp_path, SCHEMA, workers=workers, progress=False) as writer:
        for i, record in enumerate(make_records(n)):
            writer.write(record)
            in_flight.append(i + 1 - writer._progress.records)  # given minus written
    assert max(in_flight) <= bound < n
    assert max(in_flight) > 0  # records did wait for the workers
    assert read_ids(tmp_path) == list(range(n))


def test_workers_that_cannot_start_leave_the_write_to_this_process_with_a_warning(tmp_path: Path) -> None:
    # Code piped to the interpreter: 'spawn' workers cannot re-import the main module.
    script = f"""
import warnings
import recordkit as rk
import recordkit.write._parallel
recordkit.write._parallel.START_AFTER_SECONDS = 0.0  # start the workers with the first batch
schema = rk.Schema(name="s", fields={{"x": rk.FieldSpec(codec="scalar", options={{"dtype": "int64"}})}})
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    manifest = rk.write_dataset(({{"x": i}} for i in range(50)), schema, {str(tmp_path)!r},
                                workers=2, progress=False)
print(sum(shard.records for shard in manifest.splits["train"].shards))
for warning in caught:
    print(warning.category.__name__, warning.filename, warning.message)
"""
    run = {"capture_output": True, "text": True, "cwd": tmp_path, "timeout": 120, "check": True}
    done = subprocess.run([sys.executable, "-"], input=script, **run)
    lines = done.stdout.splitlines()
    assert lines[0] == "50"
    assert len(lines) == 2, done.stdout
    warning = "RuntimeWarning <stdin> recordkit: the writer's worker processes could not start"
    assert lines[1].startswith(warning)
    assert "or pass workers=1" in lines[1]
    assert sorted(int(r["x"]) for r in rk.iter_records(tmp_path)) == list(range(50))


def test_workers_start_only_once_the_write_has_shown_it_is_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = rk.load_plugins(allow=["scalar", "image"], extra_plugins=[("pid-plugin", PidPlugin)]).registry
    monkeypatch.setattr("recordkit.write._parallel.START_AFTER_SECONDS", 3600.0)
    with rk.DatasetWriter(tmp_path / "short", PHOTOS, registry=registry, workers=2, progress=False) as writer:
        for record in photo_records(40):
            writer.write(record)
        assert writer._pool is not None
        assert not writer._pool.started  # too short to repay starting processes
    assert {int(r["pid"]) for r in read_split(tmp_path / "short", registry=registry)} == {os.getpid()}

    monkeypatch.setattr("recordkit.write._parallel.START_AFTER_SECONDS", 0.02)
    with rk.DatasetWriter(tmp_path / "long", PHOTOS, registry=registry, workers=2, progress=False) as writer:
        records = photo_records(5000)  # made lazily: only what is written is made
        for record in records:
            writer.write(record)
            if writer._pool is not None and writer._pool.started:
                break  # started after 0.02 s of encoding here
        assert writer._pool is not None
        assert writer._pool.started
        assert writer._pool.wait_ready(timeout=120), "the workers never started"  # the rest goes to them
        for record in itertools.islice(records, 600):
            writer.write(record)
    pids = [int(r["pid"]) for r in read_split(tmp_path / "long", registry=registry)]
    assert pids[0] == os.getpid()
    assert os.getpid() not in pids[-50:]  # the rest by the workers
