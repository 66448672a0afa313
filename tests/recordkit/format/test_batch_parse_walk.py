"""Records of any lengths walked together against one layout (sdk/recordkit/format/_walk_parse.py,
used by sdk/recordkit/format/_batch_parse.py): for random Examples (several keys, bytes
lists of 0 to 3 values whose lengths cross the varint widths at 127/128 and 16383/16384,
int64 lists of several widths and negatives, floats, empty Features), each with a chance
of another key order, a key left out, an unknown field, a non-minimal varint or a flipped
byte, every record the batch parse gives reads as protobuf reads it
(:func:`~recordkit.format._example.decode_example`), every record protobuf refuses is left
to it, and every record of the plain layout is parsed with the others."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from _reader_support import same_example
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recordkit as rk
from recordkit.format import _batch_parse
from recordkit.format._batch_parse import ParsedChunk, framed_records, parsed_data, parsed_records
from recordkit.format._example import decode_example, encode_entry, encode_feature, example_pieces
from recordkit.format._tfrecord import frame_record

KEYS = ["caption", "label", "k" * 130, "ключ", "score"]  # a key of a two-byte length; one not ASCII
MUTATIONS = ("reordered", "dropped", "unknown_field", "unknown_in_feature", "non_minimal", "flipped")


@dataclasses.dataclass(frozen=True)
class Column:
    key: str
    kind: str  # bytes, float, int64 or empty (an empty Feature)
    count: int


def encoded(columns: list[tuple[Column, Any]]) -> bytes:
    """An Example of ``(column, values)`` in that order, as the writer (and protobuf) writes it."""
    entries = []
    for column, values in columns:
        if column.kind == "empty":
            feature = b""
        else:
            kind = {"bytes": rk.WireKind.BYTES, "float": rk.WireKind.FLOAT, "int64": rk.WireKind.INT64}[
                column.kind
            ]
            feature = encode_feature(kind, values)
        entries.append(encode_entry(column.key.encode(), feature))
    return b"".join(example_pieces(entries)[0])


def mutated(record: bytes, columns: list[tuple[Column, Any]], mutation: str | None, at: int) -> bytes:
    """``record`` (the Example of ``columns``) changed by ``mutation`` (``at``: where)."""
    if mutation == "reordered" and len(columns) > 1:
        return encoded(columns[::-1])
    if mutation == "dropped" and columns:
        return encoded(columns[:-1])
    if mutation == "unknown_field":  # field 2 of Example, a varint: protobuf keeps it unknown
        return record + b"\x10\x01"
    if mutation == "unknown_in_feature" and columns:  # field 4 of the last Feature, a varint
        column, values = columns[-1]
        head = encoded(columns[:-1])
        kind = {"bytes": rk.WireKind.BYTES, "float": rk.WireKind.FLOAT, "int64": rk.WireKind.INT64}.get(
            column.kind
        )
        feature = (b"" if kind is None else encode_feature(kind, values)) + b"\x20\x01"
        entry = encode_entry(column.key.encode(), feature)
        inner = head[_header_size(head) :] + entry
        return b"".join(example_pieces([inner])[0])
    if (
        mutation == "non_minimal" and len(record) > 2 and record[1] < 0x80
    ):  # the Example's length in two bytes
        return b"\x0a" + bytes([record[1] | 0x80, 0]) + record[2:]
    if mutation == "flipped" and record:
        flipped = bytearray(record)
        flipped[at % len(record)] ^= 1 << (at % 8)
        return bytes(flipped)
    return record


def _header_size(example: bytes) -> int:
    size = 1
    while example[size] & 0x80:
        size += 1
    return size + 1


@st.composite
def layouts(draw: st.DrawFn) -> list[Column]:
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=4, unique=True))
    out = []
    for key in keys:
        kind = draw(st.sampled_from(["bytes", "bytes", "float", "int64", "int64", "empty"]))
        out.append(Column(key, kind, draw(st.integers(0, 3)) if kind != "empty" else 0))
    return out


BYTE_LENGTHS = st.one_of(
    st.integers(0, 9), st.sampled_from([126, 127, 128, 129, 300]), st.just(16383), st.just(16384)
)
NUMBERS = st.one_of(
    st.integers(0, 127),
    st.integers(128, 16383),
    st.integers(0, 2**62),
    st.integers(-(2**63), -1),  # ten-byte varints: left to protobuf
)


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[bytes], list[bool]]:
    """Records of one layout, some mutated; and which of them are plain (to be parsed)."""
    layout = draw(layouts())
    count = draw(st.integers(32, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    records: list[bytes] = []
    plain: list[bool] = []
    mutate = draw(st.booleans())
    for _ in range(count):
        columns: list[tuple[Column, Any]] = []
        negative = False
        for column in layout:
            if column.kind == "bytes":
                values: Any = [
                    bytes(rng.integers(0, 256, draw(BYTE_LENGTHS), dtype=np.uint8))
                    for _ in range(column.count)
                ]
            elif column.kind == "float":
                values = rng.normal(size=column.count).astype(np.float32)
            elif column.kind == "int64":
                values = [draw(NUMBERS) for _ in range(column.count)]
                negative = negative or any(v < 0 for v in values)
            else:
                values = None
            columns.append((column, values))
        record = encoded(columns)
        mutation = draw(st.sampled_from(MUTATIONS)) if mutate and draw(st.integers(0, 3)) == 0 else None
        changed = mutated(record, columns, mutation, draw(st.integers(0, 2**16)))
        records.append(changed)
        plain.append(changed == record and not negative)
    return records, plain


def as_protobuf_reads(chunk: ParsedChunk, records: list[bytes], keys: set[str]) -> list[bool]:
    """Checks every record ``chunk`` parsed against protobuf's parse (a record protobuf
    refuses must be left to it); gives which records were parsed."""
    given = []
    for parsed, record in zip(chunk.examples(), records, strict=True):
        try:
            want = decode_example(record)
        except ValueError:
            assert parsed is None
            given.append(False)
            continue
        given.append(parsed is not None)
        if parsed is not None:
            same_example(parsed, {key: value for key, value in want.items() if key in keys})
    return given


SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@SETTINGS
@given(batch=batches(), wanted=st.sets(st.sampled_from([*KEYS, "absent"])))
def test_a_fetched_batch_parses_every_record_as_protobuf_does(
    batch: tuple[list[bytes], list[bool]], wanted: set[str]
) -> None:
    records, plain = batch
    templates: _batch_parse.Templates = {}
    for order in (records, records[::-1]):  # the second meets the templates the first kept
        given = as_protobuf_reads(parsed_data(order, wanted, templates), order, wanted)
        if all(plain):  # one layout throughout: every record parsed with the others
            assert all(given)


@SETTINGS
@given(batch=batches(), wanted=st.sets(st.sampled_from([*KEYS, "absent"])))
def test_a_file_chunk_parses_every_record_as_protobuf_does(
    batch: tuple[list[bytes], list[bool]], wanted: set[str]
) -> None:
    records, plain = batch
    buffer = b"".join(frame_record(r) for r in records)
    offsets = framed_records(buffer)
    assert offsets is not None
    given = as_protobuf_reads(parsed_records(buffer, offsets, wanted), records, wanted)
    lengths = {len(r) for r in records}
    if all(plain) and len(lengths) > _batch_parse._TEMPLATED_LENGTHS:  # walked, all of them
        assert all(given)


def caption(i: int, words: int) -> bytes:
    return encoded(
        [
            (Column("caption", "bytes", 1), [" ".join(["word"] * words).encode() + bytes([97 + i % 26])]),
            (Column("label", "int64", 1), [i * 37 % 1000]),  # one or two varint bytes
        ]
    )


def test_records_of_many_lengths_and_label_widths_are_parsed_as_one_part() -> None:
    records = [caption(i, 3 + i % 28) for i in range(64)]
    assert len({len(r) for r in records}) > 8
    chunk = parsed_data(records, {"caption", "label"}, {})
    assert len(chunk.parts) == 1
    assert chunk.columns is not None
    assert all(as_protobuf_reads(chunk, records, {"caption", "label"}))


def test_records_of_two_layouts_are_walked_against_each() -> None:
    """A field left out of some records: another layout, walked against its own."""
    full = [caption(i, 3 + i % 5) for i in range(50)]
    short = [encoded([(Column("caption", "bytes", 1), [b"w" * (i % 7)])]) for i in range(40)]  # no label
    records = [record for pair in zip(full, short, strict=False) for record in pair] + full[40:]
    chunk = parsed_data(records, {"caption", "label"}, {})
    assert len(chunk.parts) == 2
    assert all(as_protobuf_reads(chunk, records, {"caption", "label"}))
    buffer = b"".join(frame_record(r) for r in records)
    offsets = framed_records(buffer)
    assert offsets is not None
    assert all(as_protobuf_reads(parsed_records(buffer, offsets, {"caption"}), records, {"caption"}))


def test_a_length_that_overruns_its_message_or_the_buffer_is_left_to_protobuf() -> None:
    records = [caption(i, 3 + i % 5) for i in range(40)]
    wild = bytearray(records[3])
    wild[1] |= 0x80  # the Example's length now runs on into the next byte: far past the end
    records[3] = bytes(wild)
    last = bytearray(records[-1])
    last[-2] = 0x7F  # the label's run declares more bytes than the record has
    records[-1] = bytes(last)
    chunk = parsed_data(records, {"caption", "label"}, {})
    given = as_protobuf_reads(chunk, records, {"caption", "label"})
    assert given == [i not in (3, 39) for i in range(40)]
