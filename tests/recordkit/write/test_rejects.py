"""The rejects file: one JSON line per rejected record, cut back on resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recordkit.errors import InvalidValueError, ManifestError, RecordError
from recordkit.storage import location
from recordkit.write._rejects import RejectsFile, error_entries


def test_lines_name_index_key_fields_and_reasons(tmp_path: Path) -> None:
    rejects = RejectsFile(location(tmp_path), "train", keep=0)
    assert not rejects.path.exists()  # created on the first reject only
    single = InvalidValueError("too dark", field="image", record="cat.jpg")
    several = RecordError(
        "2 invalid fields",
        errors=[InvalidValueError("bad", field="a"), RecordError("missing", field="b")],
        record=9,
    )
    rejects.add(3, "cat.jpg", single)
    rejects.add(9, None, several)
    rejects.close()
    first, second = (json.loads(line) for line in rejects.path.read_text().splitlines())
    assert first == {
        "index": 3,
        "key": "cat.jpg",
        "errors": [{"field": "image", "reason": "too dark"}],
        "message": "record key 'cat.jpg', field 'image': too dark",
    }
    assert second["index"] == 9
    assert "key" not in second
    assert (
        second["errors"]
        == error_entries(several)
        == [
            {"field": "a", "reason": "bad"},
            {"field": "b", "reason": "missing"},
        ]
    )


def test_reopening_keeps_only_the_counted_lines(tmp_path: Path) -> None:
    path = tmp_path / "rejects-train.jsonl"
    path.write_text("".join(json.dumps({"index": i}) + "\n" for i in range(5)))
    rejects = RejectsFile(location(tmp_path), "train", keep=2)
    rejects.add(7, None, InvalidValueError("x", field="f"))
    rejects.close()
    assert [json.loads(line)["index"] for line in path.read_text().splitlines()] == [0, 1, 7]


def test_a_missing_file_the_manifest_counts_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"rejects-train\.jsonl is missing"):
        RejectsFile(location(tmp_path), "train", keep=3)
