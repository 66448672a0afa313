"""Bit flips in the data of records of one layout, read by the readers that parse and
decode a fetched batch together (shuffled epochs, resumes, mixtures, random access in
batches). With ``verify=True`` the data CRC stops the flip before anything is parsed;
with ``verify=False`` a flipped record reaches the batch parse, which must give exactly
what parsing that record alone gives: the same error (naming its shard, offset, record
and field), or the same values. Nothing decodes differently in a batch."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _fault_support import flip_bit, record_offsets, shard_paths

import recordkit as rk
from recordkit.errors import RecordkitError
from recordkit.format._tfrecord import FOOTER_BYTES, HEADER_BYTES  # private: to flip data bytes only

SEED = 3407
FLIPS = 24
RECORDS = 48
SCHEMA = rk.Schema(
    name="one-layout",
    fields={
        "embedding": rk.FieldSpec(codec="tensor", options={"dtype": "float32", "shape": [3]}),
        "label": rk.FieldSpec(codec="label", options={"num_classes": 100}),
        "count": rk.FieldSpec(codec="scalar", options={"dtype": "int64"}),
        "code": rk.FieldSpec(codec="text"),
    },
)


def write(root: Path) -> None:
    rng = np.random.default_rng(SEED)
    records = [
        {
            "embedding": rng.normal(size=3).astype(np.float32),
            "label": i % 100,
            "count": i,
            "code": f"c{i % 10}",
        }
        for i in range(RECORDS)
    ]
    rk.write_dataset(records, SCHEMA, root, shard_records=16, progress=False, durable=False)


def flipped_copy(pristine: Path, root: Path, rng: random.Random) -> int:
    """A copy of ``pristine`` with one bit of one record's data flipped; that record's number."""
    shutil.copytree(pristine, root)
    paths = shard_paths(root)
    shard = rng.randrange(len(paths))
    offsets = [*record_offsets(paths[shard]), paths[shard].stat().st_size]
    record = rng.randrange(len(offsets) - 1)
    first, end = offsets[record] + HEADER_BYTES, offsets[record + 1] - FOOTER_BYTES
    flip_bit(paths[shard], first * 8 + rng.randrange((end - first) * 8))
    return shard * 16 + record


def outcome(read: Callable[[], list[dict[str, Any]]]) -> tuple[str, list[dict[str, Any]]]:
    """The error a read raises (its message), with what it gave before it."""
    got: list[dict[str, Any]] = []
    try:
        got.extend(read())
    except RecordkitError as exc:
        return str(exc), got
    return "", got


def same(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> bool:
    return len(expected) == len(actual) and all(
        list(e) == list(a) and all(np.array_equal(e[k], a[k]) and type(e[k]) is type(a[k]) for k in e)
        for e, a in zip(expected, actual, strict=True)
    )


Read = Callable[[], list[dict[str, Any]]]


def batch_reads(root: Path, verify: bool, seed: int, order: list[int]) -> dict[str, tuple[Read, list[int]]]:
    """Each reader that parses a fetched batch together, with the records (in the split's
    numbering) it reads in order."""
    access = rk.RandomAccess(root, verify=verify)
    ds = rk.open(root, "train", verify=verify)
    options: dict[str, Any] = {"shuffle": True, "seed": seed, "window": 8}

    def resumed() -> list[dict[str, Any]]:
        return [r for rank in range(2) for r in ds.epoch_stream(**options, rank=rank, world_size=2, start=8)]

    mixture = rk.mix({ds: 1.0}, samples_per_epoch=RECORDS)
    return {
        "shuffled epoch": (lambda: list(ds.epoch_stream(**options)), order),
        "resumed on 2 ranks": (resumed, order[8:][0::2] + order[8:][1::2]),
        "mixture of itself": (lambda: list(mixture.epoch_stream()), list(range(RECORDS))),
        "random access batch": (lambda: access.read_batch(order), order),
    }


def test_a_flipped_bit_in_a_batch_of_one_layout_gives_what_the_record_alone_gives(
    tmp_path: Path, fault_cases: Any
) -> None:
    pristine = tmp_path / "pristine"
    write(pristine)
    rng = random.Random(SEED)
    errors = 0
    for case in range(FLIPS):
        root = tmp_path / f"flip{case}"
        number = flipped_copy(pristine, root, rng)
        stream = rk.open(pristine, "train").epoch_stream(shuffle=True, seed=case, window=8)
        order = [int(r["count"]) for r in stream]
        for verify in (True, False):
            access = rk.RandomAccess(root, verify=verify)
            reads = batch_reads(root, verify, case, order)
            for name, (read, indices) in reads.items():
                expected_error, expected = outcome(lambda ix=indices, ra=access: [ra[i] for i in ix])
                error, got = outcome(read)
                assert error == expected_error, (case, verify, name)
                if expected_error:
                    assert f"record {number}" in error, (case, verify, name)
                    errors += 1
                else:
                    assert same(expected, got), (case, verify, name)
            fault_cases.tried("bit flips in batches parsed together", len(reads))
    assert errors > 0  # some flips were caught (all with verify=True)
