"""Records of one file whose lengths differ (captions of a few lengths, a few of their
own length, and records of one length but another layout) read through the public API:
the numpy reader's chunked parse (sdk/recordkit/format/_batch_parse.py) walks a file's
records of several lengths together against one layout (sdk/recordkit/format/_walk_parse.py),
or parses each length shared by enough records against its own template, leaves the rest
to the per-record parse, and gives values identical to the record-by-record read, in
``ds.records()`` and in batches fetched by index (``ds[indices]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_parsed_shard import assert_same

import recordkit as rk
from recordkit.format._example import decode_example  # private: protobuf's parse, the reference
from recordkit.read import _parsed_shard  # private: to count the records parsed against a template

N = 123
SHARD_RECORDS = 41
SCHEMA = rk.Schema(
    name="captions",
    fields={
        "caption": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 1000}),
        "embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [3]}),
    },
)


def caption_record(i: int, rng: np.random.Generator) -> dict[str, Any]:
    """Captions of 17 and 23 letters, one after the other after a first of 20 (so that a
    file's size divides by its first record's, and ``records()`` maps it and parses it in
    chunks); records 7 and 8 of each file of lengths of their own (5 and 35); record 9 a
    label of two varint bytes and a caption one letter shorter: the length of its
    neighbours, another layout."""
    place = i % SHARD_RECORDS
    length = {0: 20, 7: 5, 8: 35, 9: 16}.get(place, 17 if place % 2 else 23)
    label = int(rng.integers(0, 100)) + (200 if place == 9 else 0)
    return {
        "caption": "".join(chr(97 + int(c)) for c in rng.integers(0, 26, length)),
        "label": label,
        "embedding": rng.normal(size=3).astype(np.float32),
    }


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(21)
    path = tmp_path_factory.mktemp("mixed-lengths") / "captions"
    records = [caption_record(i, rng) for i in range(N)]
    rk.write_dataset(records, SCHEMA, path, shard_records=SHARD_RECORDS, progress=False)
    return path


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[int, int]]:
    """For each chunk ``_parsed_shard.<name>`` parsed: its records, and how many of them
    matched a template of their length (the others are parsed alone)."""
    parse = getattr(_parsed_shard, name)
    counts: list[tuple[int, int]] = []

    def counted(*args: Any) -> Any:
        chunk = parse(*args)
        counts.append((chunk.count, sum(int(part.match.sum()) for part in chunk.parts)))
        return chunk

    monkeypatch.setattr(_parsed_shard, name, counted)
    return counts


@pytest.mark.parametrize("fields", [None, ["caption"], ["label", "embedding"]])
def test_a_file_of_records_of_several_lengths_reads_the_values_of_the_record_by_record_read(
    dataset: Path, fields: list[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = rk.open(dataset, fields=fields)
    counts = counting(monkeypatch, "parsed_records")
    together = list(ds.records())
    monkeypatch.undo()
    # A report reads record by record (the path that skips damage).
    one_by_one = list(ds.records(on_corrupt="skip", report=rk.CorruptionReport()))
    assert len(together) == N
    assert_same(one_by_one, together, "records")
    # Every file was parsed in chunks, every record of it together: a file of six lengths is
    # walked against one layout whatever each record's length (the captions of 20, 5 and 35
    # letters too), and a label of two varint bytes is that layout with a wider number.
    assert counts == [(SHARD_RECORDS, SHARD_RECORDS)] * 3


def test_batches_fetched_by_index_across_lengths_equal_the_records_read_one_at_a_time(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = rk.open(dataset)
    alone = [ds[i] for i in range(N)]
    counts = counting(monkeypatch, "parsed_data")
    order = np.random.default_rng(5).permutation(N)
    for batch in np.array_split(order, 3):  # the second and third batches meet kept templates
        assert_same([alone[i] for i in batch.tolist()], ds[batch.tolist()], "batch")
    assert sum(n for n, _ in counts) == N
    assert (
        sum(matched for _, matched in counts) == N
    )  # every record walked with its batch, whatever its length


WORDS = [
    "a",
    "the",
    "of",
    "dog",
    "cat",
    "photo",
    "person",
    "riding",
    "bicycle",
    "street",
    "with",
    "red",
    "hat",
]
VARIED = rk.Schema(
    name="varied",
    fields={
        "caption": rk.FieldSpec(codec="text"),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 1000}),
    },
)


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Captions of 3 to 30 words (dozens of lengths, some over 127 bytes: two-byte length
    varints) and labels of one and two varint bytes, 300 records a shard."""
    rng = np.random.default_rng(3)
    records = [
        {
            "caption": f"n{i} "
            + " ".join(WORDS[int(w)] for w in rng.integers(0, len(WORDS), int(rng.integers(3, 31)))),
            "label": int(rng.integers(0, 1000)),
        }
        for i in range(900)
    ]
    path = tmp_path_factory.mktemp("varied") / "captions"
    rk.write_dataset(records, VARIED, path, shard_records=300, progress=False)
    return path


def test_captions_of_varied_lengths_read_by_every_reader_as_protobuf_parses_them(
    varied: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``records()``, ``RandomAccess.stream`` in a shuffled order and ``torch_iterable``
    give, for every record, the values of its Example as protobuf parses it; the chunks
    and batches were parsed together, every record of them (none left to protobuf)."""
    ds = rk.open(varied)
    access = ds._random_access()
    pairs = np.array([access.shards.locate(i) for i in range(len(access))], dtype=np.int64)
    want = []
    for data in access.serialized(pairs):
        example = decode_example(data)
        want.append({"caption": example["caption"][1][0].decode(), "label": int(example["label"][1][0])})
    by_caption = {record["caption"]: record for record in want}
    assert len(by_caption) == len(want)
    assert len({len(r["caption"]) for r in want}) > 40

    def same(got: dict[str, Any], expected: dict[str, Any]) -> None:
        assert got["caption"] == expected["caption"]
        assert int(got["label"]) == expected["label"]

    chunks = counting(monkeypatch, "parsed_records")
    for got, expected in zip(ds.records(), want, strict=True):
        same(got, expected)
    assert chunks
    assert all(count == matched for count, matched in chunks)
    monkeypatch.undo()
    batches = counting(monkeypatch, "parsed_data")
    order = np.random.default_rng(8).permutation(len(want))
    for got, place in zip(access.stream(pairs[order]), order.tolist(), strict=True):
        same(got, want[place])
    torch_read = list(ds.torch_iterable(shuffle=True, seed=2, tensors=False))
    assert len(torch_read) == len(want)
    for got in torch_read:
        same(got, by_caption[got["caption"]])
    assert batches
    assert all(
        count == matched for count, matched in batches if count >= 32
    )  # smaller: protobuf may be cheaper
