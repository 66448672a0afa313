"""The small dataset the CLI tests write: its schema and records."""

from __future__ import annotations

import numpy as np

SCHEMA_YAML = """\
name: shapes
version: "2.1"
fields:
  image: {codec: image, options: {format: png}}
  label: {codec: label, options: {names: [circle, square, triangle]}}
  caption: {codec: text, optional: true}
"""

#: Records per split, and records per shard (so train has 3 shards, test has 1).
SPLITS = {"train": 12, "test": 3}
SHARD_RECORDS = 4


def records(count: int, seed: int) -> list[dict[str, object]]:
    """Random small images (real PNGs once encoded), labels, and captions on some."""
    rng = np.random.default_rng(seed)
    return [
        {
            "image": rng.integers(0, 256, size=(8 + i % 3, 10, 3), dtype=np.uint8),
            "label": ["circle", "square", "triangle"][i % 3],
            "caption": f"shape number {i}" if i % 2 else None,
        }
        for i in range(count)
    ]
