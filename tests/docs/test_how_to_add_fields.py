"""docs/how-to/add-fields.md: its examples run and print what the page shows, and the
errors its table quotes are the ones raised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import recordkit as rk
from recordkit.errors import DatasetError, IncompatibleSchemaError, RecordError, SchemaError

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "add-fields.md"


def test_the_page_runs_as_written(page_examples: Any, in_tmp_path: Path) -> None:
    blocks = page_examples.code_blocks(PAGE)
    page_examples.run_python_blocks(blocks)
    python = [b for b in blocks if b.language == "python"]
    assert all(b.output for b in python), "every example prints what it shows"


def test_the_errors_the_page_quotes_are_raised(page_examples: Any, in_tmp_path: Path) -> None:
    page_examples.run_python_blocks(page_examples.code_blocks(PAGE)[:2])  # the dataset
    text = PAGE.read_text(encoding="utf-8")
    caption = rk.Schema(name="c", fields={"caption": rk.FieldSpec(codec="text")})
    with pytest.raises(SchemaError) as taken:
        rk.add_fields("data/photos", "train", caption, ["x"] * 10)
    assert f"`SchemaError: {taken.value}`" in text
    options = {"dtype": "float32", "shape": [8]}
    embedding = rk.Schema(name="e", fields={"embedding": rk.FieldSpec(codec="tensor", options=options)})
    with pytest.raises(DatasetError) as few:
        rk.add_fields("data/photos", "train", embedding, np.zeros((7, 8), np.float32))
    assert f"`DatasetError: {str(few.value).split('(')[0]}(...)`" in text
    rk.add_fields("data/photos", "train", embedding, np.zeros((10, 8), np.float32))
    with pytest.raises(DatasetError) as twice:
        rk.add_fields("data/photos", "train", embedding, np.zeros((10, 8), np.float32))
    assert f"recordkit.errors.DatasetError: {twice.value}\n" in text


def test_the_append_errors_the_page_quotes_are_raised(page_examples: Any, in_tmp_path: Path) -> None:
    page_examples.run_python_blocks(page_examples.code_blocks(PAGE)[:4])  # the dataset, its embedding
    text = PAGE.read_text(encoding="utf-8")
    stored = rk.open("data/photos").schema
    fields = {name: spec for name, spec in stored.fields.items() if name != "embedding"}
    without = stored.model_copy(update={"fields": fields})
    record = {"image": np.zeros((32, 32, 3), np.uint8), "caption": "c", "label": "cat"}
    with pytest.raises(IncompatibleSchemaError) as refused:
        rk.write_dataset([record], "data/photos", without, append=True, progress=False)
    head, difference = str(refused.value).split("\n  - ")
    assert f"`IncompatibleSchemaError: {head}` and `- {difference}`" in text
    with pytest.raises(RecordError) as missing:
        rk.write_dataset([record], "data/photos", stored, append=True, progress=False)
    assert f"`RecordError: {missing.value}`" in text
