"""The table sources on files as spreadsheets and scripts write them: long captions, a
byte-order mark, spaces in headers, large cells, a line that is not UTF-8, and how file
columns are found and column names become field names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sample_sources as fx

import recordkit as rk
from recordkit import sources
from recordkit.errors import InputError
from recordkit.sources._rows import MAX_CELL_CHARS, field_name_of


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "t"
    (folder / "img").mkdir(parents=True)
    for i in range(3):
        (folder / "img" / f"{i}.png").write_bytes(fx.photo(8, 8, i, "PNG"))
    return folder


def _written(source: sources.Source, out: Path) -> list[dict]:
    rk.write_dataset(source, source.schema(), out, progress=False)
    return list(rk.iter_records(out))


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_a_caption_longer_than_a_file_name_is_text(tmp_path: Path, kind: str) -> None:
    folder = _folder(tmp_path)
    captions = ["a" * 300, "b/" * 2000, "c" * 5000 + ".png"]
    table = folder / f"t.{kind}"
    if kind == "jsonl":
        table.write_text(
            "".join(
                json.dumps({"image": f"img/{i}.png", "caption": c}) + "\n" for i, c in enumerate(captions)
            )
        )
    else:
        table.write_text("image,caption\n" + "".join(f"img/{i}.png,{c}\n" for i, c in enumerate(captions)))
    source = getattr(sources, kind)(table)
    assert {n: f.codec for n, f in source.schema().fields.items()} == {"image": "image", "caption": "text"}
    assert [r["caption"] for r in _written(source, tmp_path / "out")] == captions


def test_a_spreadsheet_csv_with_a_bom_and_spaces_in_its_header_reads(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    table = folder / "t.csv"
    text = "Image Path,my caption,2nd score,Légende\r\nimg/0.png,a cat,1,x\r\nimg/1.png,a dog,2,y\r\n"
    table.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    source = sources.csv(table)
    assert list(source.schema().fields) == ["Image_Path", "my_caption", "_2nd_score", "Legende"]
    assert source.file_columns() == ["Image_Path"]
    records = _written(source, tmp_path / "out")
    assert [r["my_caption"] for r in records] == ["a cat", "a dog"]
    assert records[0]["Image_Path"].shape == (8, 8, 3)


def test_the_column_name_rule() -> None:
    assert field_name_of("caption", 1) == "caption"
    assert field_name_of("  Caption ", 1) == "Caption"
    assert field_name_of("my caption", 1) == "my_caption"
    assert field_name_of("a / b (c)", 1) == "a_b_c"
    assert field_name_of("2nd", 1) == "_2nd"
    assert field_name_of("-x", 1) == "_-x"
    assert field_name_of("café", 1) == "cafe"
    assert field_name_of("标题", 4) == "column_4"
    assert field_name_of("", 2) == "column_2"


def test_columns_that_become_one_field_are_named_both(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    table = folder / "t.csv"
    table.write_text("my caption,my_caption\na,b\n")
    with pytest.raises(
        InputError, match="'my caption' and 'my_caption' both become the field 'my_caption'"
    ) as caught:
        sources.csv(table)
    assert caught.value.context.line == 1
    # Picking the columns by their own names resolves it.
    picked = sources.csv(table, columns={"first": "my caption", "second": "my_caption"})
    assert list(picked) == [{"first": "a", "second": "b"}]
    jsonl = folder / "t.jsonl"
    jsonl.write_text('{"a b": 1, "a_b": 2}\n{"a b": 3}\n')
    source = sources.jsonl(jsonl, on_error="skip")
    assert list(source) == [{"a_b": 3}]
    assert source.skipped[0].line == 1
    assert "both become the field 'a_b'" in source.skipped[0].reason


def test_a_200_kb_cell_reads_and_the_limit_is_named(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    table = folder / "t.csv"
    big = "w" * 200_000
    table.write_text(f"caption,n\n{big},1\nsmall,2\n")
    assert [r["caption"] for r in sources.csv(table)] == [big, "small"]
    table.write_text(f'caption,n\n"{"w" * (MAX_CELL_CHARS + 1)}",1\nsmall,2\n')
    with pytest.raises(InputError, match="field larger than field limit") as caught:
        list(sources.csv(table))
    assert caught.value.context.line == 2


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_a_line_that_is_not_utf8_is_skipped_alone(tmp_path: Path, kind: str) -> None:
    folder = _folder(tmp_path)
    table = folder / f"t.{kind}"
    if kind == "jsonl":
        table.write_bytes(b'{"caption": "a"}\n{"caption": "caf\xe9"}\n{"caption": "c"}\n')
    else:
        table.write_bytes(b"caption\na\ncaf\xe9\nc\n")
    line = 2 if kind == "jsonl" else 3
    with pytest.raises(InputError, match=rf"line {line}: is not UTF-8 text") as caught:
        list(getattr(sources, kind)(table))
    assert (caught.value.context.file, caught.value.context.line) == (str(table), line)
    source = getattr(sources, kind)(table, on_error="skip")
    assert [r["caption"] for r in source] == ["a", "c"]
    assert [s.line for s in source.skipped] == [line]


def test_file_columns_are_found_by_name_and_a_missing_file_is_named(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    table = folder / "t.csv"
    table.write_text("photo,other\nimg/0.png,img/1.png\nimg/gone.png,img/gone.png\nimg/2.png,img/2.png\n")
    source = sources.csv(table, on_error="skip")
    # "photo" says it holds files: one existing file is enough; "other" would need all.
    assert source.file_columns() == ["photo"]
    assert source.schema().fields["other"].codec == "text"
    assert len(list(source)) == 2
    assert source.skipped[0].field == "photo"
    assert "no such file 'img/gone.png'" in source.skipped[0].reason


def test_text_that_happens_to_name_a_file_stays_text_unless_files_says_so(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "notes").write_text("not a picture")
    table = folder / "t.jsonl"
    table.write_text('{"word": "notes"}\n{"word": "notes"}\n')
    assert sources.jsonl(table).file_columns() == []
    with pytest.raises(InputError, match="no codec for by their suffix"):
        sources.jsonl(table, files=["word"]).schema()


def test_file_names_are_relative_to_root_when_given(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "meta").mkdir()
    table = folder / "meta" / "t.csv"
    table.write_text("image\nimg/0.png\nimg/1.png\n")
    records = list(sources.csv(table, root=folder))
    assert [r["image"] for r in records] == [folder / "img/0.png", folder / "img/1.png"]
    table.write_text("image\n../img/0.png\n")
    with pytest.raises(InputError, match="climbs out"):
        list(sources.csv(table, files=["image"]))
