"""recordkit.iter_records: a dataset's records as numpy values, without TensorFlow."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _reader_support import (
    SCHEMA,
    assert_record,
    expected,
    make_records,
    record_offsets,
    run_without_tensorflow,
    write,
)

import recordkit as rk
from recordkit.errors import CorruptRecordError, DecodeError, IncompatibleSchemaError, UnknownCodecError
from recordkit.format._tfrecord import Compression  # private: the compression a reader passes
from recordkit.read import _iter_records, _parsed_shard
from recordkit.read._numpy_decode import decode_columns_numpy, wanted_keys
from recordkit.testing import assert_values_equal

N = 9


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return make_records(N, seed=1)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("iter") / "data"
    write(path, records, shard_records=5)
    return path


def shards(path: Path) -> list[Path]:
    manifest = json.loads((path / "dataset.json").read_text())
    return [path / s["file"] for s in manifest["splits"]["train"]["shards"]]


def broken_copy(dataset: Path, tmp_path: Path) -> tuple[Path, Path]:
    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    return copy, shards(copy)[0]


def test_every_record_reads_back_equal(dataset: Path, records: list[dict[str, Any]]) -> None:
    got = list(rk.iter_records(dataset))
    assert len(got) == N
    for record, row in zip(records, got, strict=True):
        assert row["note"] is None or isinstance(row["note"], str)
        assert_record(expected(record), row)


def test_only_the_requested_fields_are_decoded(dataset: Path, records: list[dict[str, Any]]) -> None:
    got = list(rk.iter_records(dataset, fields=["note", "label"]))
    assert [set(r) for r in got] == [{"note", "label"}] * N
    assert [r["note"] for r in got] == [r["note"] for r in records]


def test_threads_decode_the_same_records_in_the_same_order(
    dataset: Path, records: list[dict[str, Any]]
) -> None:
    plain = list(rk.iter_records(dataset))
    threaded = list(rk.iter_records(dataset, num_threads=3))
    assert len(threaded) == N
    for record, row, alone in zip(records, threaded, plain, strict=True):
        assert_record(expected(record), row)
        assert list(row) == list(alone)
        for name in row:
            assert_values_equal(alone[name], row[name], path=name)
    with pytest.raises(ValueError, match="num_threads"):
        rk.iter_records(dataset, num_threads=0)


def test_threads_decode_chunks_of_records_in_order(
    dataset: Path, records: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records go to the threads in chunks (here of 2, so that the 9 records make several,
    the last one short, and the window of chunks ahead fills): the order is kept."""
    monkeypatch.setattr(_iter_records, "_CHUNK_RECORDS", 2)
    threaded = list(rk.iter_records(dataset, fields=["caption", "label"], num_threads=2))
    assert [r["caption"] for r in threaded] == [r["caption"] for r in records]
    monkeypatch.setattr(_iter_records, "_CHUNK_BYTES", 1)  # a chunk per record
    assert list(rk.iter_records(dataset, fields=["caption", "label"], num_threads=2)) == threaded


def test_threads_yield_the_records_before_a_corrupt_one_then_raise(dataset: Path, tmp_path: Path) -> None:
    """A record that fails its CRC stops a threaded read where it stops a one-thread read:
    the records before it (already read into a chunk) are decoded and yielded first."""
    copy, shard = broken_copy(dataset, tmp_path)
    offsets = record_offsets(shard)
    data = bytearray(shard.read_bytes())
    data[offsets[3] + 20] ^= 0x01  # inside record 3's data
    shard.write_bytes(bytes(data))
    for threads in (1, 2):
        got: list[dict[str, Any]] = []
        with pytest.raises(CorruptRecordError, match="data CRC mismatch") as err:
            got.extend(rk.iter_records(copy, fields=["label"], num_threads=threads))
        assert len(got) == 3
        assert (err.value.shard, err.value.context.offset) == (shard.name, offsets[3])


def test_threads_stop_cleanly_when_the_reader_stops_early(dataset: Path) -> None:
    records = rk.iter_records(dataset, num_threads=2)
    first = next(records)
    records.close()  # the pool's pending work is dropped
    assert set(first) == set(next(iter(rk.iter_records(dataset))))


@pytest.mark.slow
def test_reading_needs_no_tensorflow(dataset: Path, records: list[dict[str, Any]], tmp_path: Path) -> None:
    """In a process where tensorflow cannot be imported: every field decodes, and a
    flipped bit fails its CRC (recordkit's own framing reader, crc32c from google-crc32c)."""
    copy, shard = broken_copy(dataset, tmp_path)
    offset = record_offsets(shard)[1]
    data = bytearray(shard.read_bytes())
    data[offset + 40] ^= 0x10
    shard.write_bytes(bytes(data))
    out = run_without_tensorflow(
        f"""
        rows = list(rk.iter_records({str(dataset)!r}))
        print(len(rows), rows[0]["image"].shape[2], rows[-1]["caption"])
        try:
            list(rk.iter_records({str(copy)!r}, fields=["label"]))
        except rk.errors.CorruptRecordError as exc:
            print(exc.shard, exc.context.offset, "data CRC mismatch" in str(exc))
        print("tensorflow" in sys.modules, "google_crc32c" in sys.modules)
        """
    )
    assert out.splitlines() == [
        f"{N} 3 {records[-1]['caption']}",
        f"{shard.name} {offset} True",
        "False True",
    ]


def test_a_flipped_bit_names_the_shard_and_offset(dataset: Path, tmp_path: Path) -> None:
    copy, shard = broken_copy(dataset, tmp_path)
    offsets = record_offsets(shard)
    data = bytearray(shard.read_bytes())
    data[offsets[2] + 20] ^= 0x01  # inside record 2's data
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="data CRC mismatch") as err:
        list(rk.iter_records(copy))
    assert err.value.shard == shard.name
    assert err.value.context.offset == offsets[2]
    # skip: only that record is lost
    report = rk.CorruptionReport()
    got = list(rk.iter_records(copy, fields=["caption"], on_corrupt="skip", report=report))
    assert [r["caption"] for r in got] == [f"record {i} — ünïcode" for i in range(N) if i != 2]
    assert report.records_skipped == 1
    assert [(s.shard, s.offset) for s in report.skipped] == [(shard.name, offsets[2])]
    # without the data CRC check, the flipped bit reaches the decoder or passes unnoticed
    assert len(list(rk.iter_records(copy, fields=["label"], verify=False))) == N


def test_a_damaged_header_is_skipped_by_finding_the_next_intact_record(dataset: Path, tmp_path: Path) -> None:
    copy, shard = broken_copy(dataset, tmp_path)
    offsets = record_offsets(shard)
    data = bytearray(shard.read_bytes())
    data[offsets[1] + 3] ^= 0x40  # record 1's length
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="length CRC") as err:
        list(rk.iter_records(copy))
    assert err.value.context.offset == offsets[1]
    report = rk.CorruptionReport()
    got = list(rk.iter_records(copy, fields=["label"], on_corrupt="skip", report=report))
    assert len(got) == N - 1
    (skip,) = report.skipped
    assert (skip.shard, skip.offset, skip.records) == (shard.name, offsets[1], 1)
    assert f"resumed at offset {offsets[2]}" in skip.reason


def test_a_truncated_shard(dataset: Path, tmp_path: Path) -> None:
    copy, shard = broken_copy(dataset, tmp_path)
    shard.write_bytes(shard.read_bytes()[:-5])
    with pytest.raises(CorruptRecordError, match="the manifest says") as err:
        list(rk.iter_records(copy))
    assert err.value.shard == shard.name
    report = rk.CorruptionReport()
    assert len(list(rk.iter_records(copy, fields=["label"], on_corrupt="skip", report=report))) == N - 1
    assert report.records_skipped == 1
    assert "truncated" in report.skipped[0].reason


def test_a_record_that_does_not_decode(dataset: Path, tmp_path: Path) -> None:
    copy, _ = broken_copy(dataset, tmp_path)
    manifest = rk.Manifest.load(copy)
    # read the PNG images as text: their bytes are not UTF-8, which the text codec refuses
    fields = dict(manifest.schema.fields)
    fields["image"] = rk.FieldSpec(codec="text")
    wrong = manifest.schema.model_copy(update={"fields": fields})
    with pytest.raises(DecodeError) as err:
        list(rk.iter_records(shards(copy), fields=["image"], schema=wrong))
    assert err.value.field == "image"
    assert err.value.shard == shards(copy)[0].name
    assert err.value.record == 0
    report = rk.CorruptionReport()
    assert (
        list(rk.iter_records(shards(copy), fields=["image"], schema=wrong, on_corrupt="skip", report=report))
        == []
    )
    assert report.records_skipped == N
    with pytest.raises(DecodeError) as threaded:  # the same error, from a thread
        list(rk.iter_records(shards(copy), fields=["image"], schema=wrong, num_threads=2))
    where = (threaded.value.field, threaded.value.shard, threaded.value.record)
    assert where == ("image", err.value.shard, 0)
    report = rk.CorruptionReport()
    skipped = rk.iter_records(
        shards(copy), fields=["image"], schema=wrong, on_corrupt="skip", report=report, num_threads=2
    )
    assert list(skipped) == []
    assert report.records_skipped == N


def test_compressed_shards(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    for compression in ("GZIP", "ZLIB"):
        path = tmp_path / compression
        write(path, records[:4], compression=compression)
        got = list(rk.iter_records(path))
        for record, row in zip(records[:4], got, strict=True):
            assert_record(expected(record), row)
        # a truncated compressed shard: what decompresses still reads, the loss is reported
        shard = shards(path)[0]
        shard.write_bytes(shard.read_bytes()[:-40])
        report = rk.CorruptionReport()
        partial = list(rk.iter_records(path, fields=["label"], on_corrupt="skip", report=report))
        assert len(partial) < 4
        assert report.shards == [shard.name]


def test_files_of_a_dataset_read_with_its_schema(dataset: Path) -> None:
    files = shards(dataset)
    rows = list(rk.iter_records(files, fields=["label"], schema=SCHEMA))
    assert len(rows) == N


def test_the_checks_on_read_apply_without_tensorflow_too(dataset: Path) -> None:
    """The reader's schema against the stored one, and a codec that is not installed."""
    fields = dict(SCHEMA.fields)
    fields["label"] = rk.FieldSpec(codec="label", options={"names": ["x", "y"]})
    changed = SCHEMA.model_copy(update={"fields": fields})
    with pytest.raises(IncompatibleSchemaError, match="'label'"):
        next(rk.iter_records(dataset, schema=changed))
    assert len(list(rk.iter_records(dataset, fields=["caption"], schema=changed))) == N
    registry = rk.load_plugins(allow=["text"]).registry
    with pytest.raises(UnknownCodecError, match="pip install recordkit") as err:
        next(rk.iter_records(dataset, fields=["caption", "objects"], registry=registry))
    assert (err.value.field, err.value.context.codec) == ("objects", "bbox")
    assert err.value.context.distribution == "recordkit"


# -- a worker's share ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def many_shards(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    path = tmp_path_factory.mktemp("iter-many") / "data"
    write(path, records, shard_records=2)  # 5 shards: 2, 2, 2, 2 and 1 records
    return path


def captions(path: Path, **share: Any) -> list[str]:
    return [r["caption"] for r in rk.iter_records(path, fields=["caption"], **share)]


def caption(i: int) -> str:
    return f"record {i} — ünïcode"


@pytest.mark.parametrize(
    ("fixture", "workers", "by_shard"),
    [
        ("many_shards", 2, True),  # 5 shards, 2 workers: shards 0, 2, 4 and 1, 3
        ("many_shards", 5, True),  # one shard each
        ("dataset", 2, True),  # 2 shards, 2 workers
        ("dataset", 3, False),  # 2 shards, 3 workers: every 3rd record
        ("many_shards", 7, False),  # 5 shards, 7 workers: every 7th record (some read none)
    ],
)
def test_workers_read_disjoint_shares_that_cover_every_record_once(
    request: pytest.FixtureRequest, fixture: str, workers: int, by_shard: bool
) -> None:
    path = request.getfixturevalue(fixture)
    files = shards(path)
    sizes = [len(list(rk.iter_records([f], schema=SCHEMA, fields=["label"]))) for f in files]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    parts = [captions(path, num_workers=workers, worker_index=i) for i in range(workers)]
    everything = [c for part in parts for c in part]
    assert sorted(everything) == sorted(caption(i) for i in range(N)), "every record exactly once"
    for index, part in enumerate(parts):
        if by_shard:  # whole shards: every `workers`-th, from this worker's index
            mine = [starts[s] + j for s in range(index, len(files), workers) for j in range(sizes[s])]
        else:  # every `workers`-th record of the split
            mine = list(range(index, N, workers))
        assert part == [caption(i) for i in mine], (workers, index)


def test_an_input_context_gives_the_same_share(many_shards: Path) -> None:
    """Anything with num_input_pipelines and input_pipeline_id will do (no TensorFlow)."""

    class Context:
        def __init__(self, count: int, index: int) -> None:
            self.num_input_pipelines, self.input_pipeline_id = count, index

    for workers in (3, 7):
        for index in range(workers):
            assert captions(many_shards, input_context=Context(workers, index)) == captions(
                many_shards, num_workers=workers, worker_index=index
            )
    # one worker reads everything
    assert captions(many_shards, num_workers=1, worker_index=0) == [caption(i) for i in range(N)]


@pytest.mark.parametrize(
    ("share", "error", "message"),
    [
        ({"num_workers": 4}, ValueError, "num_workers needs worker_index"),
        ({"worker_index": 1}, ValueError, "worker_index needs num_workers"),
        ({"num_workers": 0, "worker_index": 0}, ValueError, "num_workers must be at least 1, not 0"),
        ({"num_workers": 3, "worker_index": 3}, ValueError, r"worker_index must be in 0\.\.2 .*not 3"),
        ({"num_workers": 3, "worker_index": -1}, ValueError, r"worker_index must be in 0\.\.2"),
        ({"num_workers": 2.0, "worker_index": 0}, TypeError, "num_workers must be an int, not 2.0"),
        ({"num_workers": 2, "worker_index": True}, TypeError, "worker_index must be an int, not True"),
        ({"input_context": object()}, TypeError, "object lacks num_input_pipelines and input_pipeline_id"),
        (
            {"input_context": object(), "num_workers": 2, "worker_index": 0},
            ValueError,
            "give input_context or num_workers and worker_index, not both",
        ),
    ],
)
def test_bad_worker_options_are_clear_errors_at_the_call(
    dataset: Path, share: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        rk.iter_records(dataset, **share)  # raised at the call, before iterating


@pytest.mark.slow
def test_a_worker_share_without_tensorflow(many_shards: Path, dataset: Path) -> None:
    """In a process where tensorflow cannot be imported, the workers' shares (by shard and
    by record, with numbers and with a context object) cover every record once."""
    out = run_without_tensorflow(
        f"""
        import types
        for path, workers in (({str(many_shards)!r}, 2), ({str(dataset)!r}, 4)):
            def share(**options):
                return [r["caption"] for r in rk.iter_records(path, fields=["caption"], **options)]
            parts = [share(num_workers=workers, worker_index=i) for i in range(workers)]
            context = types.SimpleNamespace(num_input_pipelines=workers, input_pipeline_id=1)
            same = share(input_context=context)
            flat = [c for part in parts for c in part]
            print(len(flat), len(set(flat)), [len(p) for p in parts], same == parts[1])
        print("tensorflow" in sys.modules)
        """
    )
    assert out.splitlines() == [
        f"{N} {N} [5, 4] True",  # shards 0, 2, 4 (2 + 2 + 1) and 1, 3
        f"{N} {N} [3, 2, 2, 2] True",  # 2 shards, 4 workers: records 0, 4, 8 / 1, 5 / ...
        "False",
    ]


# -- chunks decoded together, given whole (no wrapper a record) -----------------------------

FIXED = rk.Schema(
    name="fixed",
    fields={
        "caption": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 10}),
    },
)
#: More than a parsed chunk (2,048 records) a shard: a shard's records come in two chunks.
PER_SHARD = 2500


@pytest.fixture(scope="module")
def fixed_size(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Records of one size (their shards are parsed and decoded a chunk at a time)."""
    path = tmp_path_factory.mktemp("fixed") / "data"
    rows = ({"caption": f"r{i:05d}", "label": i % 10} for i in range(3 * PER_SHARD))
    rk.write_dataset(rows, FIXED, path, shard_records=PER_SHARD, progress=False)
    return path


def caption_list(records: Any) -> list[str]:
    return [record["caption"] for record in records]


def test_chunks_decoded_together_give_every_record_as_a_plain_dict(fixed_size: Path) -> None:
    got = list(rk.open(fixed_size).records())
    assert caption_list(got) == [f"r{i:05d}" for i in range(3 * PER_SHARD)]
    assert all(type(record) is dict for record in got)
    assert [int(record["label"]) for record in got[:12]] == [i % 10 for i in range(12)]
    opened = rk.open(fixed_size)._random_access().dataset
    stored = opened.stored_fields.fields
    decode = functools.partial(decode_columns_numpy, stored)
    items = list(
        _parsed_shard.parsed_shard_records(
            opened.shards[0], Compression.NONE, wanted_keys(stored), iter, decode, batches=True
        )
    )
    assert [(len(starts), type(batch)) for starts, batch in items] == [
        (2048, _parsed_shard.DecodedBatch),
        (PER_SHARD - 2048, _parsed_shard.DecodedBatch),
    ]  # a chunk at a time, not a record


@pytest.mark.parametrize("stop", [0, 1, 2047, 2048, 2049, PER_SHARD, PER_SHARD + 2100, 3 * PER_SHARD - 1])
def test_a_read_of_whole_chunks_knows_its_position_and_resumes_there(fixed_size: Path, stop: int) -> None:
    handle = rk.open(fixed_size)
    iterator = handle.records()
    head = caption_list(itertools.islice(iterator, stop))
    assert iterator.position == stop
    state = iterator.state_dict()
    iterator.close()  # in the middle of a chunk: the rest of it is dropped
    assert iterator.position == stop
    assert next(iterator, None) is None
    rest = handle.records(start=state)
    assert head + caption_list(rest) == [f"r{i:05d}" for i in range(3 * PER_SHARD)]
    assert rest.position == 3 * PER_SHARD


def test_a_chunk_holding_more_records_than_the_manifest_lists_stops_at_the_first_unlisted(
    fixed_size: Path, tmp_path: Path
) -> None:
    root = Path(shutil.copytree(fixed_size, tmp_path / "copy"))
    paths = shards(root)
    first = record_offsets(paths[0])
    extra = paths[1].stat().st_size
    with paths[1].open("ab") as shard:  # a sound record appended, and the manifest agreeing
        shard.write(paths[0].read_bytes()[: first[1]])
    manifest = json.loads((root / "dataset.json").read_text())
    listed = manifest["splits"]["train"]["shards"][1]
    payload = paths[1].read_bytes()
    listed["bytes"], listed["sha256"] = len(payload), hashlib.sha256(payload).hexdigest()
    (root / "dataset.json").write_text(json.dumps(manifest))
    iterator = rk.open(root).records()
    read: list[str] = []
    with pytest.raises(CorruptRecordError, match=f"holds more records than the {PER_SHARD}") as info:
        read.extend(record["caption"] for record in iterator)
    assert info.value.context.offset == extra
    assert read == [f"r{i:05d}" for i in range(2 * PER_SHARD)]
    assert iterator.position == 2 * PER_SHARD


def test_small_records_of_varied_sizes_are_decoded_together(tmp_path: Path) -> None:
    """Captions of 0 to 36 characters, and one of 500 (a length no other record has): the
    records are walked together against one layout whatever their lengths
    (sdk/recordkit/format/_walk_parse.py) and decoded together, every value as written."""
    rows = [{"caption": "x" * (i % 37), "label": i % 10} for i in range(3000)]
    rows[1234]["caption"] = "y" * 500
    path = tmp_path / "varied"
    rk.write_dataset(rows, FIXED, path, shard_records=3000, progress=False)
    got = list(rk.open(path).records())
    assert caption_list(got) == [row["caption"] for row in rows]
    assert [int(record["label"]) for record in got] == [row["label"] for row in rows]
    opened = rk.open(path)._random_access().dataset
    stored = opened.stored_fields.fields
    decode = functools.partial(decode_columns_numpy, stored)
    shard = opened.shards[0]
    items = list(
        _parsed_shard.parsed_shard_records(shard, Compression.NONE, wanted_keys(stored), iter, decode)
    )
    assert len(items) == 3000  # mapped and parsed: the fallback, ``iter()``, would raise
    kinds = {type(item).__name__ for _, item in items}
    assert kinds == {"DecodedRecord"}  # the lone 500-character record too: walked with the others
