"""Bad values for every built-in codec, generated from a seed: each is rejected by the
writer (``on_error="skip"``) and listed in the rejects file with its record and field;
none reaches a shard, and the good records around them are all written."""

from __future__ import annotations

import io
import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import recordkit as rk

SEED = 1206


def _png(size: tuple[int, int] = (4, 4), mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size).save(out, format="PNG")
    return out.getvalue()


def _garbage(rng: random.Random, count: int) -> list[Any]:
    """Values of the wrong kind for any codec: random bytes, objects, nested junk."""
    return [
        *(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))) for _ in range(count)),
        object(),
        {"nested": {"deeper": [1, 2]}},
        {1, 2},
        complex(1, 2),
    ]


def _cases() -> dict[str, tuple[dict[str, Any], Any, list[Any]]]:
    """codec -> (options, a good value, bad values)."""
    rng = random.Random(SEED)
    png = _png()
    return {
        "image": (
            {"format": "png"},
            np.zeros((4, 4, 3), np.uint8),
            [
                png[: len(png) // 2],
                b"\x89PNG\r\n\x1a\n" + b"\x00" * 40,
                np.zeros((4, 4, 5), np.uint8),
                np.zeros((4,), np.uint8),
                np.full((4, 4, 3), 1.5),
                "no/such/photo.png",
                None,
                True,
                3,
                *_garbage(rng, 3),
            ],
        ),
        "audio": (
            {"sample_rate": 8000},
            np.zeros(80, np.float32),
            [
                np.zeros((80, 3), np.float32),
                np.array([math.nan] * 10, np.float32),
                b"RIFF" + b"\x00" * 30,
                "not audio",
                None,
                True,
                np.zeros((2, 2, 2), np.float32),
                *_garbage(rng, 3),
            ],
        ),
        "text": (
            {"max_length": 8},
            "hello",
            ["x" * 9, 12, None, True, b"\xff\xfe", ["a"], 1.5, *_garbage(rng, 3)],
        ),
        "label": (
            {"names": ["cat", "dog"]},
            "cat",
            ["bird", 2, -1, None, True, 1.5, "", ["cat", "dog"], *_garbage(rng, 3)],
        ),
        "scalar": (
            {"dtype": "int64"},
            7,
            ["7", 2**70, -(2**70), 1.5, None, math.nan, [1, 2], *_garbage(rng, 3)],
        ),
        "tensor": (
            {"dtype": "float32", "shape": [2, 3]},
            np.zeros((2, 3), np.float32),
            [
                np.zeros((3, 2), np.float32),
                np.zeros((2, 3, 1), np.float32),
                "tensor",
                None,
                [[1, 2], [3]],
                np.array(["a"] * 6).reshape(2, 3),
                *_garbage(rng, 3),
            ],
        ),
        "bbox": (
            {"format": "xyxy"},
            [[0.1, 0.1, 0.5, 0.5]],
            [
                [[0.1, 0.1, 0.5]],
                [[0.5, 0.5, 0.1, 0.1]],
                [[math.nan, 0, 1, 1]],
                "boxes",
                [[0, 0, math.inf, 1]],
                None,
                *_garbage(rng, 3),
            ],
        ),
        "mask": (
            {"num_classes": 3},
            np.zeros((4, 4), np.uint8),
            [
                np.full((4, 4), 7, np.uint8),
                np.zeros((4,), np.uint8),
                np.zeros((4, 4, 3, 2), np.uint8),
                np.full((4, 4), -1, np.int16),
                "mask",
                None,
                *_garbage(rng, 3),
            ],
        ),
    }


CASES = _cases()


@pytest.mark.parametrize("codec", sorted(CASES))
def test_bad_values_are_rejected_naming_record_and_field(
    tmp_path: Path, codec: str, fault_cases: Any
) -> None:
    options, good, bad = CASES[codec]
    schema = rk.Schema(
        name="bad",
        fields={"id": rk.FieldSpec(codec="scalar"), "value": rk.FieldSpec(codec=codec, options=options)},
    )
    rows = []
    for i, value in enumerate(bad):
        rows.append({"id": 2 * i, "value": good})
        rows.append({"id": 2 * i + 1, "value": value})
    fault_cases.tried("bad values per codec", len(bad))
    manifest = rk.write_dataset(rows, schema, tmp_path / "d", on_error="skip", progress=False)
    split = manifest.split("train")
    lines = [json.loads(line) for line in (tmp_path / "d" / "rejects-train.jsonl").read_text().splitlines()]
    accepted = sorted(set(range(1, 2 * len(bad), 2)) - {entry["index"] for entry in lines})
    assert accepted == [], f"{codec}: accepted {[repr(bad[i // 2])[:60] for i in accepted]}"
    assert split.rejected == len(bad)
    assert all(entry["errors"][0]["field"] == "value" for entry in lines)
    assert all(f"record {entry['index']}, field 'value'" in entry["message"] for entry in lines)
    assert [int(r["id"]) for r in rk.iter_records(tmp_path / "d")] == list(range(0, 2 * len(bad), 2))
