"""The ``text`` codec: exact UTF-8 round trips, normalisation, length limits, bad input."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from _codec_io import (
    assert_stored_near_payload,
    bind,
    encode_error,
    field_error,
    parse_eager,
    read_numpy,
    read_tf,
    run_doc_examples,
    write,
)
from hypothesis import given
from hypothesis import strategies as st

import recordkit as rk
from recordkit.format._tfrecord import frame_record, iter_tfrecords  # private: rewrites a shard's records
from recordkit.read._numpy_decode import (  # private: decodes as the numpy reader does, no dataset
    decode_record_numpy,
)
from recordkit.storage import location
from recordkit.testing import BadInput, CodecCase, check_codec
from recordkit_codecs.text import TextCodec

TEXTS = [
    "",
    "plain ascii",
    "héllo wörld",
    "日本語のテキスト",
    "emoji 🙂👍🏽",
    "nul\x00inside",
    "e\u0301 combining",
]


def test_round_trip_through_tf_data_and_numpy(tmp_path: Path) -> None:
    bound = bind(caption={"codec": "text"})
    path = write(bound, [{"caption": t} for t in TEXTS], tmp_path / "text.tfrecord")

    (batch,) = read_tf(bound, path, batch=len(TEXTS))
    assert batch["caption"].dtype.name == "string"
    assert batch["caption"].shape == (len(TEXTS),)
    assert [b.decode("utf-8") for b in batch["caption"].numpy()] == TEXTS
    assert [row["caption"] for row in read_numpy(bound, path)] == TEXTS


def test_utf8_bytes_are_accepted_and_decode_to_str(tmp_path: Path) -> None:
    bound = bind(caption={"codec": "text"})
    path = write(
        bound, [{"caption": "café".encode()}, {"caption": bytearray(b"ok")}], tmp_path / "b.tfrecord"
    )
    assert [row["caption"] for row in read_numpy(bound, path)] == ["café", "ok"]


@pytest.mark.parametrize(
    ("form", "given_text", "stored"),
    [
        ("NFC", "e\u0301", "\u00e9"),
        ("NFD", "\u00e9", "e\u0301"),
        ("NFKC", "\ufb01le \u2460", "file 1"),
        ("NFKD", "\u00bd", "1\u20442"),
        (None, "e\u0301", "e\u0301"),
    ],
)
def test_normalisation_is_applied_before_storing(
    tmp_path: Path, form: str | None, given_text: str, stored: str
) -> None:
    bound = bind(t={"codec": "text", "options": {"normalize": form}})
    path = write(bound, [{"t": given_text}], tmp_path / "n.tfrecord")
    assert read_numpy(bound, path)[0]["t"] == stored
    (batch,) = read_tf(bound, path, batch=1)
    assert batch["t"].numpy()[0].decode("utf-8") == stored


def test_max_length_counts_characters_not_bytes(tmp_path: Path) -> None:
    bound = bind(t={"codec": "text", "options": {"max_length": 3}})
    path = write(bound, [{"t": "日本語"}, {"t": "🙂🙂🙂"}], tmp_path / "m.tfrecord")
    assert [row["t"] for row in read_numpy(bound, path)] == ["日本語", "🙂🙂🙂"]


def test_max_length_overflow_is_an_error_naming_field_and_record() -> None:
    bound = bind(caption={"codec": "text", "options": {"max_length": 5}})
    error = encode_error(bound, {"caption": "far too long"}, index=7)
    assert isinstance(error, rk.errors.InvalidValueError)
    assert error.field == "caption"
    assert error.record == 7
    assert "record 7, field 'caption'" in str(error)
    assert "12 characters, more than max_length 5" in str(error)


def test_truncation_cuts_to_max_length_after_normalising(tmp_path: Path) -> None:
    options = {"max_length": 5, "overflow": "truncate", "normalize": "NFC"}
    bound = bind(t={"codec": "text", "options": options})
    path = write(bound, [{"t": "he\u0301llo wörld"}, {"t": "hi"}], tmp_path / "t.tfrecord")
    assert [row["t"] for row in read_numpy(bound, path)] == ["héllo", "hi"]
    (batch,) = read_tf(bound, path, batch=2)
    assert [b.decode() for b in batch["t"].numpy()] == ["héllo", "hi"]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"ab\xffcd", r"not valid UTF-8 at byte offset 2"),
        (b"\xc3", r"not valid UTF-8 at byte offset 0"),
        ("lone \ud800 surrogate", r"not encodable as UTF-8 at character 5"),
        (42, r"expected a str or UTF-8 bytes, got int"),
        (["a", "b"], r"expected a str or UTF-8 bytes, got list"),
    ],
)
def test_bad_input_names_field_record_and_reason(value: object, reason: str) -> None:
    bound = bind(caption={"codec": "text"})
    error = field_error(bound, "caption", value, index=3)
    assert re.search(reason, str(error)), str(error)


@pytest.mark.parametrize(
    "options",
    [{"max_length": -1}, {"normalize": "NFX"}, {"overflow": "wrap"}, {"maxlen": 3}],
)
def test_invalid_options_are_schema_errors_naming_the_field(options: dict[str, object]) -> None:
    with pytest.raises(rk.errors.CodecOptionsError) as info:
        bind(caption={"codec": "text", "options": options})
    assert info.value.field == "caption"


def test_optional_default_and_sequence_fields(tmp_path: Path) -> None:
    bound = bind(
        maybe={"codec": "text", "optional": True},
        lang={"codec": "text", "default": "en"},
        tags={"codec": "text", "sequence": True},
    )
    records = [
        {"maybe": "here", "lang": "fr", "tags": ["a", "bé", ""]},
        {"tags": []},
        {"maybe": "", "tags": ["🙂"]},
    ]
    path = write(bound, records, tmp_path / "o.tfrecord")

    (batch,) = read_tf(bound, path, batch=3)
    assert batch["maybe/present"].numpy().tolist() == [True, False, True]
    assert [b.decode() for b in batch["maybe"].numpy()] == ["here", "", ""]
    assert [b.decode() for b in batch["lang"].numpy()] == ["fr", "en", "en"]
    assert [[s.decode() for s in row] for row in batch["tags"].to_list()] == [["a", "bé", ""], [], ["🙂"]]

    rows = read_numpy(bound, path)
    assert [r["maybe"] for r in rows] == ["here", None, ""]
    assert [r["lang"] for r in rows] == ["fr", "en", "en"]
    assert [r["tags"] for r in rows] == [["a", "bé", ""], [], ["🙂"]]


def test_a_long_text_costs_its_utf8_bytes_by_the_byte_breakdown() -> None:
    text = "Ein Satz mit Umlauten: äöü, und 日本語, und 🙂. " * 4000
    bound = bind(body={"codec": "text"})
    payload = len(text.encode("utf-8"))
    share = assert_stored_near_payload(bound, "body", text, payload)
    assert share - payload < 30  # the key, tags and three-byte lengths


@given(st.lists(st.text(), min_size=1, max_size=6))
def test_random_unicode_text_round_trips_exactly(texts: list[str]) -> None:
    bound = bind(t={"codec": "text"})
    encoder = rk.RecordEncoder(bound)
    serialized = [encoder.encode({"t": t}, i) for i, t in enumerate(texts)]
    decoded = parse_eager(bound, serialized)["t"].numpy()
    assert [b.decode("utf-8") for b in decoded] == texts
    assert [decode_record_numpy(bound.fields, s)["t"] for s in serialized] == texts


@given(st.text(), st.sampled_from(["NFC", "NFD", "NFKC", "NFKD"]))
def test_normalised_text_round_trips_as_its_normal_form(text: str, form: str) -> None:
    codec = TextCodec({"normalize": form})
    wire = codec.encode(text)
    assert codec.decode_numpy(wire) == unicodedata.normalize(form, text)  # type: ignore[arg-type]


def test_conformance(tmp_path: Path) -> None:
    report = check_codec(
        TextCodec({"max_length": 5}),
        cases=[CodecCase("short"), CodecCase(""), CodecCase("日本"), CodecCase("é".encode(), expected="é")],
        bad_inputs=[
            BadInput("toolong", match=r"7 characters, more than max_length 5"),
            BadInput(b"\xff", match=r"byte offset 0"),
        ],
        tmp_path=tmp_path,
    )
    assert report.checks


def test_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_doc_examples("text.md", tmp_path, monkeypatch) >= 1


# -- the numpy reader's column decode --------------------------------------------------------


def _text_dataset(tmp_path: Path, texts: list[str]) -> Path:
    schema = rk.Schema(name="texts", fields={"caption": rk.FieldSpec(codec="text")})
    path = tmp_path / "texts"
    rk.write_dataset([{"caption": text} for text in texts], path, schema, progress=False)
    return path


def test_the_numpy_reader_decodes_a_chunks_texts_from_their_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Texts of many lengths, parsed together, are decoded in one call a chunk
    (``decode_numpy_column``), to the ``str`` each record's own decode gives."""
    texts = [TEXTS[i % len(TEXTS)] * (1 + i % 5) for i in range(60)]
    path = _text_dataset(tmp_path, texts)
    decoded: list[int] = []
    column_decode = TextCodec.decode_numpy_column

    def counted(self: TextCodec, wire: Any, count: int) -> Any:
        values = column_decode(self, wire, count)
        decoded.append(len(values))
        return values

    monkeypatch.setattr(TextCodec, "decode_numpy_column", counted)
    assert [record["caption"] for record in rk.open(path).records()] == texts
    assert sum(decoded) == len(texts)


def test_stored_text_that_is_not_utf8_among_others_is_that_records_error(tmp_path: Path) -> None:
    """A record whose stored text is not UTF-8 (its framing sound: written so) refuses the
    chunk's column decode; the records before it are given, then its own error, naming
    its field, its number and the byte."""
    texts = [f"caption number {i:03d}" for i in range(40)]
    path = _text_dataset(tmp_path, texts)
    (shard,) = path.glob("*.tfrecord")
    records = [data for _, data in iter_tfrecords(location(shard))]
    records[17] = records[17].replace(b"caption number 017", b"caption number \xff17")
    shard.write_bytes(b"".join(frame_record(data) for data in records))
    read: list[str] = []
    with pytest.raises(rk.errors.DecodeError, match=r"not valid UTF-8 at byte 15") as err:
        read.extend(record["caption"] for record in rk.open(path).records())
    assert (err.value.field, err.value.record) == ("caption", 17)
    assert read == texts[:17]
