"""The shards a split expression reads (sdk/recordkit/dataset/_shards.py) and the same
shards with their field groups joined (dataset/_split_groups.py): each says what the
manifest lists for its ``i``-th shard (``piece``) without making it, and where that shard
sits in its split when it knows (``place``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import recordkit as rk
from recordkit.dataset._shards import split_shards
from recordkit.dataset._split_groups import join_split_groups
from recordkit.storage import location

SCHEMA = rk.Schema(name="ids", fields={"id": rk.FieldSpec(codec="scalar")})
SCORE = rk.Schema(name="score", fields={"score": rk.FieldSpec(codec="scalar")})


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shards") / "data"
    with rk.DatasetWriter(path, SCHEMA, shard_records=3, progress=False) as writer:
        for i in range(10):
            writer.write({"id": i}, "train")
        for i in range(4):
            writer.write({"id": 100 + i}, "validation")
    rk.add_fields(path, "train", SCORE, [2 * i for i in range(10)])
    return path


@pytest.mark.parametrize(
    ("split", "places"),
    [("train", [0, 1, 2, 3]), ("train[2:8]", [None] * 3), ("train+validation", [None] * 6)],
)
def test_every_kind_of_lazy_shards_says_what_the_manifest_lists_for_a_shard_without_making_it(
    dataset: Path, split: str, places: list[int | None]
) -> None:
    manifest = rk.Manifest.load(dataset)
    shards = split_shards(location(dataset), manifest, split)
    assert [shards.place(i) for i in range(len(shards))] == places
    for i in range(len(shards)):
        piece, shard = shards.piece(i), shards[i]
        assert (piece.info.file, piece.skip, piece.take) == (shard.name, shard.skip, shard.take)
    if split == "train+validation":
        return  # the validation split has no group: joined reads are train's alone
    joined = join_split_groups(location(dataset), manifest, split, shards, ["id", "score"])
    assert [joined.piece(i) for i in range(len(joined))] == [shards.piece(i) for i in range(len(shards))]
    assert [joined.place(i) for i in range(len(joined))] == places
    ids = [int(r["id"]) for r in rk.open(dataset, split).records()]
    assert [int(r["score"]) for r in rk.open(dataset, split).records()] == [2 * i for i in ids]
