"""Records read in a shuffled order (sdk/recordkit/read/_random_access.py ``stream``): a
fetch over several shards looked up in one step (``IndexedShards.span_arrays`` over the
indexes joined end to end), records of one field set whose captions differ in length
parsed and decoded as one group (``parsed_data``), and the records handed back as asked,
each exactly as read alone; a damaged or missing record is refused naming it."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import recordkit as rk
from recordkit.errors import CorruptRecordError
from recordkit.format import _batch_parse  # private: to see which fetches are parsed as one group
from recordkit.format._example import decode_example
from recordkit.read import _shard_index  # private: to make the joined indexes grow often

SCHEMA = rk.Schema(
    name="captions",
    fields={
        "caption": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 10}),
        "score": rk.FieldSpec(codec="scalar", options={"dtype": "float32"}),
    },
)
RECORDS = 120
SHARD = 25


def rows(count: int) -> list[dict[str, Any]]:
    """Captions of three lengths (records of three lengths, every one of one field set)."""
    return [
        {"caption": f"record {i}" + "!" * (i % 3), "label": i % 10, "score": float(np.float32(i / 8))}
        for i in range(100, 100 + count)
    ]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shuffled") / "data"
    rk.write_dataset(rows(RECORDS), SCHEMA, path, shard_records=SHARD, progress=False)
    return path


def shuffled_pairs(access: rk.RandomAccess, seed: int) -> np.ndarray:
    """Every record as ``(shard, record)`` rows in a shuffled order, with some asked twice."""
    order = np.random.default_rng(seed).permutation(len(access))
    order = np.concatenate([order, order[:7]])
    return np.array([access.shards.locate(int(i)) for i in order], dtype=np.int64)


def same_record(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(got) == list(want)
    for name, value in want.items():
        assert type(got[name]) is type(value), name
        if isinstance(value, np.ndarray):
            assert got[name].dtype == value.dtype, name
            assert got[name].shape == value.shape, name
            assert np.array_equal(got[name], value), name
        else:
            assert got[name] == value, name


@pytest.mark.parametrize("prefetch", [64, 5])
def test_records_come_in_the_order_asked_across_shards_as_each_reads_alone(
    dataset: Path, prefetch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    access = rk.RandomAccess(dataset)
    pairs = shuffled_pairs(access, seed=prefetch)
    one_group = []
    found = _batch_parse._one_field_set
    monkeypatch.setattr(
        _batch_parse, "_one_field_set", lambda *args: one_group.append(found(*args)) or one_group[-1]
    )
    for _ in range(2):  # the first read keeps each length's template, the second uses them all
        got = list(access.stream(pairs, prefetch=prefetch))
        assert len(got) == len(pairs)
        for (shard, number), record in zip(pairs.tolist(), got, strict=True):
            same_record(record, access.record(shard, number))
    assert any(part is not None for part in one_group)  # fetches of several lengths parsed as one


def test_a_fetch_of_several_caption_lengths_is_parsed_as_one_group_as_protobuf_parses_it() -> None:
    records = [_example(r) for r in rows(40)]
    lengths = {len(r) for r in records}
    assert len(lengths) == 3
    templates: _batch_parse.Templates = {}
    keys = {"caption", "label", "score"}
    first = _batch_parse.parsed_data(records, keys, templates)
    assert len(first.parts) == 1  # walked as one layout; each length's template made and kept
    assert sorted(templates) == sorted(lengths)
    chunk = _batch_parse.parsed_data(records[::-1], keys, templates)
    assert len(chunk.parts) == 1
    assert chunk.columns is not None
    for record, parsed in zip(records[::-1], chunk.examples(), strict=True):
        want = decode_example(record)
        assert parsed is not None
        assert set(parsed) == keys
        assert parsed["caption"] == want["caption"]
        for key in ("label", "score"):
            assert parsed[key][0] is want[key][0]
            assert parsed[key][1].dtype == want[key][1].dtype
            assert np.array_equal(parsed[key][1], want[key][1])


def test_captions_whose_lengths_take_varints_of_two_sizes_are_parsed_as_one_group() -> None:
    """Captions of 127 and 128 bytes: their lengths' varints take one and two bytes, so the
    two templates have different numbers of structure bytes (matched a template at a
    time, not in one gather); still one group, as protobuf parses it."""
    records = [_example({"caption": "c" * (126 + i % 3), "label": i % 10, "score": 0.5}) for i in range(24)]
    templates: _batch_parse.Templates = {}
    keys = {"caption", "label"}
    _batch_parse.parsed_data(records, keys, templates)
    assert len({len(t.structure) for t in templates.values()}) == 2
    chunk = _batch_parse.parsed_data(records[::-1], keys, templates)
    assert len(chunk.parts) == 1
    for record, parsed in zip(records[::-1], chunk.examples(), strict=True):
        want = decode_example(record)
        assert parsed is not None
        assert parsed["caption"] == want["caption"]
        assert np.array_equal(parsed["label"][1], want["label"][1])


def test_a_record_of_another_layout_in_a_group_is_left_to_protobuf_and_the_others_walked() -> None:
    """A record of a known length whose structure is not its template's (another key of
    the same size): the group is not parsed as one field set; the others are walked
    together against their layout, and that record is left to protobuf."""
    records = [_example({"caption": "x" * (1 + i % 2), "label": i % 10}) for i in range(32)]
    templates: _batch_parse.Templates = {}
    _batch_parse.parsed_data(records, {"caption", "label"}, templates)
    odd = _example({"caption": "xx", "lbael": 4})
    assert len(odd) == len(records[1])
    mixed = [*records[:5], odd, *records[5:]]
    chunk = _batch_parse.parsed_data(mixed, {"caption", "label"}, templates)
    assert len(chunk.parts) == 1
    examples = chunk.examples()
    assert examples[5] is None
    for record, parsed in zip(mixed[:5] + mixed[6:], examples[:5] + examples[6:], strict=True):
        want = decode_example(record)
        assert parsed is not None
        assert parsed["caption"] == want["caption"]
        assert np.array_equal(parsed["label"][1], want["label"][1])


def test_records_of_other_number_widths_are_walked_as_one_and_of_other_fields_apart() -> None:
    """Labels of one and two varint bytes: one layout, walked as one part; records of
    another field set: a layout of their own, walked apart."""
    plain = [_example({"caption": "x" * (1 + i % 2), "label": 3}) for i in range(32)]
    wide = [_example({"caption": "y" * (3 + i % 2), "label": 300}) for i in range(32)]  # a 2-byte varint
    other = [_example({"caption": "z" * (5 + i % 2), "label": 3, "extra": 1}) for i in range(32)]
    for records, parts in ((plain + wide, 1), (plain + other, 2)):
        templates: _batch_parse.Templates = {}
        _batch_parse.parsed_data(records, {"caption", "label"}, templates)
        chunk = _batch_parse.parsed_data(records, {"caption", "label"}, templates)
        assert len(chunk.parts) == parts
        for record, parsed in zip(records, chunk.examples(), strict=True):
            want = decode_example(record)
            assert parsed is not None
            assert parsed["caption"] == want["caption"]
            assert np.array_equal(parsed["label"][1], want["label"][1])


def test_indexes_joined_as_they_grow_keep_their_offsets(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_shard_index, "_JOINED_FIRST", 1)  # a new, larger array at nearly every shard
    access = rk.RandomAccess(dataset)
    fresh = rk.RandomAccess(dataset)
    for begin in range(0, RECORDS, 30):  # batches over two or three shards, each joining one or two
        pairs = np.array([access.shards.locate(i) for i in range(begin, min(begin + 30, RECORDS))][::-1])
        for (shard, number), record in zip(pairs.tolist(), access.stream(pairs), strict=True):
            same_record(record, fresh.record(shard, number))
    for shard in range(RECORDS // SHARD):
        assert np.array_equal(access.shards.index(shard).offsets, fresh.shards.index(shard).offsets)
        assert access.shards.index(shard).offsets.base is access.shards._joined.offsets  # held once


def test_a_damaged_record_in_a_fetch_over_several_shards_is_named(tmp_path: Path) -> None:
    path = tmp_path / "data"
    rk.write_dataset(rows(RECORDS), SCHEMA, path, shard_records=SHARD, progress=False)
    shard = path / "train-00002.tfrecord"
    data = bytearray(shard.read_bytes())
    data[-3] ^= 0xFF  # the data CRC of the shard's last record: record 74
    shard.write_bytes(bytes(data))
    access = rk.RandomAccess(path)
    pairs = np.array([(0, 3), (4, 1), (2, 24), (1, 7)], dtype=np.int64)
    stream = access.stream(pairs)
    same_record(next(stream), access.record(0, 3))
    same_record(next(stream), access.record(4, 1))  # the records before it, then the error
    with pytest.raises(CorruptRecordError, match=r"shard train-00002\.tfrecord.*record 74"):
        next(stream)


def test_fetches_read_together_are_parsed_together_and_a_damaged_one_is_named_after_those_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small records are read :data:`READ_FETCHES` fetches at a time and given a fetch at a
    time (each fetch as one list); once the first fetch decoded shows they hold little
    decoded, the next reads' records are parsed and decoded a read at a time. A damaged
    record in a later fetch of a read, parsed either way, comes after every record before
    it, naming itself."""
    from recordkit.read import _random_access  # private: the fetches read at once

    path = tmp_path / "data"
    rk.write_dataset(rows(RECORDS * 2), SCHEMA, path, shard_records=SHARD, progress=False)
    access = rk.RandomAccess(path)
    pairs = shuffled_pairs(access, seed=9)
    size, read = access.fetch_size(2), access.read_size(2)
    assert read == size * _random_access.READ_FETCHES < len(pairs) - read
    parsed: list[int] = []
    parse = _random_access.parsed_files

    def counted(files: Any, *args: Any) -> Any:
        parsed.append(len(files[0]))
        return parse(files, *args)

    monkeypatch.setattr(_random_access, "parsed_files", counted)
    chunks = list(access.stream_chunks(pairs, prefetch=2))
    reads = [min(read, len(pairs) - b) for b in range(0, len(pairs), read)]
    assert parsed == [size] * _random_access.READ_FETCHES + reads[1:]  # the first read a fetch at a time
    assert [len(chunk) for chunk in chunks] == [min(size, len(pairs) - b) for b in range(0, len(pairs), size)]
    for (shard, number), record in zip(pairs.tolist(), (r for c in chunks for r in c), strict=True):
        same_record(record, access.record(shard, number))
    shard = path / "train-00002.tfrecord"
    data = bytearray(shard.read_bytes())
    data[-3] ^= 0xFF  # the data CRC of the shard's last record: record 74
    shard.write_bytes(bytes(data))
    damaged = access.shards.locate(74)
    others = pairs[(pairs[:, 0] != damaged[0]) | (pairs[:, 1] != damaged[1])]
    for at in (size + 3, read + size + 3):  # in the second fetch of the first read, of the second
        asked = np.concatenate([others[:at], np.array([damaged]), others[at:]])
        stream = rk.RandomAccess(path).stream(asked, prefetch=2)
        for shard_number, number in asked[:at].tolist():
            same_record(next(stream), access.record(shard_number, number))
        with pytest.raises(CorruptRecordError, match=r"shard train-00002\.tfrecord.*record 74"):
            next(stream)


def test_records_that_hold_much_decoded_are_parsed_a_fetch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small stored records whose values are large decoded (pictures of one colour): a read
    # of several fetches is still parsed and decoded a fetch at a time, so that no more
    # than a fetch of them is held decoded at once.
    from recordkit.read import _random_access  # private: the fetches parsed

    schema = rk.Schema(name="plain", fields={"image": rk.FieldSpec(codec="image", options={"format": "png"})})
    pictures = [{"image": np.full((96, 96, 3), i, np.uint8)} for i in range(200)]
    rk.write_dataset(pictures, schema, tmp_path / "data", shard_records=50, progress=False)
    access = rk.RandomAccess(tmp_path / "data")
    size, read = access.fetch_size(2), access.read_size(2)
    assert read > size
    parsed: list[int] = []
    parse = _random_access.parsed_files
    monkeypatch.setattr(
        _random_access,
        "parsed_files",
        lambda files, *args: parsed.append(len(files[0])) or parse(files, *args),
    )
    pairs = shuffled_pairs(access, seed=2)
    got = [r for c in access.stream_chunks(pairs, prefetch=2) for r in c]
    assert max(parsed) == size < len(pairs)
    for (shard, number), record in zip(pairs.tolist(), got, strict=True):
        same_record(record, access.record(shard, number))


@given(groups=st.lists(st.integers(1, 9), max_size=40), size=st.integers(1, 12))
def test_reads_end_where_groups_of_records_do_while_they_hold_half_a_read(
    groups: list[int], size: int
) -> None:
    # Each group's records (an epoch's window of its order) are read by one read when a
    # read can end where the group begins and still hold at least half of ``size``.
    from recordkit.read._random_access import read_bounds

    labels = np.repeat(np.arange(len(groups)), groups)
    bounds = read_bounds(labels, size)
    assert bounds[0] == 0
    assert bounds[-1] == len(labels)
    lengths = np.diff(bounds)
    assert (lengths <= size).all()
    assert (lengths[:-1] >= max(size // 2, 1)).all()
    for end, length in zip(bounds[1:-1], lengths[:-1].tolist(), strict=True):
        ends_a_group = labels[end] != labels[end - 1]
        assert ends_a_group or length == size


def test_reads_that_end_with_groups_give_every_record_and_name_a_damaged_one(tmp_path: Path) -> None:
    path = tmp_path / "data"
    rk.write_dataset(rows(RECORDS), SCHEMA, path, shard_records=SHARD, progress=False)
    access = rk.RandomAccess(path)
    pairs = shuffled_pairs(access, seed=4)
    groups = np.arange(len(pairs)) // 11
    chunks = list(access.stream_chunks(pairs, prefetch=2, groups=groups))
    got = [r for c in chunks for r in c]
    assert len(got) == len(pairs)
    for (shard, number), record in zip(pairs.tolist(), got, strict=True):
        same_record(record, access.record(shard, number))
    shard = path / "train-00002.tfrecord"
    data = bytearray(shard.read_bytes())
    data[-3] ^= 0xFF  # the data CRC of the shard's last record: record 74
    shard.write_bytes(bytes(data))
    reread = rk.RandomAccess(path)
    stream = itertools.chain.from_iterable(reread.stream_chunks(pairs, prefetch=2, groups=groups))
    at = next(i for i, (s, n) in enumerate(pairs.tolist()) if (s, n) == access.shards.locate(74))
    for shard_number, number in pairs[:at].tolist():
        same_record(next(stream), access.record(shard_number, number))
    with pytest.raises(CorruptRecordError, match=r"shard train-00002\.tfrecord.*record 74"):
        next(stream)


def test_records_decoded_after_their_read_is_parsed_keep_their_draws_across_a_read(tmp_path: Path) -> None:
    # Pictures brought to a geometry (each record decoded after its fetch is parsed, with
    # its row of draws): a read of several fetches still gives each record with its own
    # row, in the order asked, as the record read alone with that row.
    from recordkit.read._numpy_geometry import DRAWS

    schema = rk.Schema(
        name="pictures",
        fields={
            "image": rk.FieldSpec(codec="image", options={"format": "png", "channels": 3}),
            "label": rk.FieldSpec(codec="label", options={"num_classes": 10}),
        },
    )
    rng = np.random.default_rng(3)
    pictures = [{"image": rng.integers(0, 255, (6, 8, 3), dtype=np.uint8), "label": i % 9} for i in range(80)]
    rk.write_dataset(pictures, schema, tmp_path / "data", shard_records=20, progress=False)
    geometry = rk.ImageGeometry(size=(4, 4), fit="random_crop_or_pad", flip=0.5, seed=1)
    access = rk.RandomAccess(tmp_path / "data", geometry=geometry)
    assert access.read_size(2) > access.fetch_size(2)  # small records: several fetches a read
    pairs = shuffled_pairs(access, seed=6)
    draws = rng.random((len(pairs), DRAWS))
    got = [r for c in access.stream_chunks(pairs, prefetch=2, draws=draws) for r in c]
    assert len(got) == len(pairs)
    for i, record in enumerate(got):
        same_record(record, access.records(pairs[i : i + 1], draws=draws[i : i + 1])[0])
    flipped = [access.records(pairs[:1], draws=np.full((1, DRAWS), x))[0]["image"] for x in (0.1, 0.9)]
    assert not np.array_equal(*flipped)  # the draws decide the record: a row out of place shows


def test_a_record_out_of_range_in_a_fetch_over_several_shards_is_named(dataset: Path) -> None:
    access = rk.RandomAccess(dataset)
    list(access.stream(np.array([(0, 1), (3, 2)], dtype=np.int64)))  # shards 0 and 3 joined
    for pairs in ([(0, 1), (3, 2), (3, SHARD)], [(1, 1), (3, -1), (0, 0)]):
        with pytest.raises(IndexError, match=r"record -?\d+ is out of range for shard train-00003"):
            list(access.stream(np.array(pairs, dtype=np.int64)))


def test_a_slice_of_a_split_reads_its_records_across_shards(dataset: Path) -> None:
    whole = rk.RandomAccess(dataset)
    sliced = rk.open(dataset, "train[13:97]")._random_access()
    order = np.random.default_rng(4).permutation(len(sliced))
    got = sliced[order.tolist()]
    for i, record in zip(order.tolist(), got, strict=True):
        same_record(record, whole[13 + i])
    spans = sliced.shards.span_arrays([sliced.shards.locate(int(i)) for i in order])
    alone = [sliced.shards.span(*sliced.shards.locate(int(i))) for i in order]
    assert spans[1].tolist() == [offset for offset, _ in alone]
    assert spans[2].tolist() == [size for _, size in alone]


def _example(row: dict[str, Any]) -> bytes:
    """``row`` as a serialized Example: text as one bytes value, numbers as int64."""
    import tensorflow as tf

    feature = {
        key: tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))
        if isinstance(value, str)
        else tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
        if isinstance(value, float)
        else tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
        for key, value in row.items()
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(deterministic=True)
