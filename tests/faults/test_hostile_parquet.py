"""Damaged Parquet files given to the parquet source: named, the rows before the damage
kept, and the next file read under on_error="skip"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from recordkit import sources
from recordkit.errors import InputError


def _two_files(folder: Path) -> Path:
    """``a.parquet`` (1000 rows, two row groups) and ``b.parquet`` (10 rows)."""
    folder.mkdir()
    text = [f"caption {i} " * 5 for i in range(1000)]
    pq.write_table(pa.table({"n": list(range(1000)), "s": text}), folder / "a.parquet", row_group_size=500)
    pq.write_table(pa.table({"n": list(range(1000, 1010)), "s": text[:10]}), folder / "b.parquet")
    return folder


def _zero(path: Path, offset: int, count: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset : offset + count] = bytes(count)
    path.write_bytes(bytes(data))


def test_a_damaged_row_group_is_named_and_the_rows_before_it_are_kept(
    tmp_path: Path, fault_cases: Any
) -> None:
    folder = _two_files(tmp_path / "parts")
    column = pq.ParquetFile(folder / "a.parquet").metadata.row_group(1).column(1)
    _zero(folder / "a.parquet", column.data_page_offset + 40, 200)
    fault_cases.tried("parquet")

    source = sources.parquet(folder, batch_rows=100)
    read: list[int] = []
    with pytest.raises(InputError, match="the rows from row 500 on do not read") as caught:
        read.extend(record["n"] for record in source)
    assert caught.value.context.file == str(folder / "a.parquet")
    assert read == list(range(500))

    skipping = sources.parquet(folder, batch_rows=100, on_error="skip")
    assert [r["n"] for r in skipping] == [*range(500), *range(1000, 1010)]
    assert [s.entry for s in skipping.skipped] == ["row 500"]


@pytest.mark.parametrize("cut", [0, 4, 100, -8, -4])
def test_a_truncated_or_unterminated_file_is_refused_by_name(
    tmp_path: Path, cut: int, fault_cases: Any
) -> None:
    folder = _two_files(tmp_path / "parts")
    data = (folder / "a.parquet").read_bytes()
    (folder / "a.parquet").write_bytes(data[:cut])  # 0: empty; negative: the footer cut
    fault_cases.tried("parquet")

    with pytest.raises(InputError, match="not a Parquet file pyarrow reads") as caught:
        sources.parquet(folder)
    assert caught.value.context.file == str(folder / "a.parquet")
