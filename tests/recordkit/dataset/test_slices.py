"""Split slicing (sdk/recordkit/dataset/_slices.py) in both readers: the records TFDS's
rules select, computed by TFDS itself for comparison, and no shard opened outside the
slice."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from _writer_support import SCHEMA, make_records

import recordkit as rk
from recordkit.dataset._slices import resolve_split, shard_slices
from recordkit.storage import location

#: train: 23 records in shards of 5 (5, 5, 5, 5, 3); validation: 7 (5, 2).
SIZES = {"train": 23, "validation": 7}
SPECS = [
    "train",
    "train[:10%]",
    "train[3:17]",
    "train[-5%:]",
    "train[33%:66%]",
    "train[12.5%:87.5%]",
    "train[:-3]",
    "train[-8:-2]",
    "train[5:10]",
    "train+validation",
    "validation[:50%]+train[-1:]",
    "train[1shard:3shard]",
    "train[2shard]",
    "train[-2shard:]",
    "all",
    "train[10:5]",
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("slices") / "data"
    for i, (split, n) in enumerate(SIZES.items()):
        records = ({"id": 1000 * i + r["id"], "payload": r["payload"]} for r in make_records(n))
        rk.write_dataset(records, SCHEMA, root, split, shard_records=5, append=i > 0, progress=False)
    return root


def _tfds_ids(spec: str) -> list[int]:
    """The records TFDS selects for ``spec`` on splits of the same sizes and shards."""
    tfds = pytest.importorskip("tensorflow_datasets")
    shards = {"train": [5, 5, 5, 5, 3], "validation": [5, 2]}
    infos = {
        name: SimpleNamespace(name=name, num_examples=n, shard_lengths=shards[name])
        for name, n in SIZES.items()
    }
    ids: list[int] = []
    for instruction in tfds.core.ReadInstruction.from_spec(spec).to_absolute(infos):
        offset = 1000 * list(SIZES).index(instruction.splitname)
        n = SIZES[instruction.splitname]
        start = instruction.from_ or 0
        stop = n if instruction.to is None else instruction.to
        ids += [offset + i for i in range(start, stop)]
    return ids


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS)
def test_iter_records_selects_what_tfds_selects(dataset: Path, spec: str) -> None:
    got = [int(r["id"]) for r in rk.iter_records(dataset, split=spec, fields=["id"])]
    assert got == _tfds_ids(spec)


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec", ["train[:10%]", "train[-5%:]", "train[3:17]", "validation[:50%]+train[-1:]", "all"]
)
def test_load_dataset_selects_what_tfds_selects(dataset: Path, spec: str) -> None:
    ds = rk.load_dataset(dataset, split=spec, fields=["id"], block_length=2, cycle_length=1)
    got = [int(r["id"]) for r in ds.as_numpy_iterator()]
    assert got == _tfds_ids(spec)
    assert int(ds.cardinality()) == len(got)


@pytest.mark.slow
def test_shard_instructions_match_tfds() -> None:
    pytest.importorskip("tensorflow_datasets")
    from tensorflow_datasets.core.utils import shard_utils

    lengths = [5, 0, 5, 7, 3]
    for start in range(21):
        for stop in range(start + 1, 21):
            theirs = shard_utils.get_file_instructions(start, stop, [str(i) for i in range(5)], lengths)
            ours = shard_slices(start, stop, lengths)
            # A take of "the rest" is -1 or the count, by TFDS version: compare counts.
            assert [
                (int(t.filename), t.skip, lengths[int(t.filename)] - t.skip if t.take == -1 else t.take)
                for t in theirs
            ] == [(s.index, s.skip, lengths[s.index] - s.skip if s.take is None else s.take) for s in ours]


def test_percent_rounding_is_tfdss_closest() -> None:
    counts, shards = {"train": 10}, {"train": [10]}
    # 25% of 10 is 2.5: round() gives 2 (halves to even); 35% is 3.5: 4.
    assert [(r.start, r.stop) for r in resolve_split("train[25%:35%]", counts, shards)] == [(2, 4)]
    assert [(r.start, r.stop) for r in resolve_split("train[-25%:]", counts, shards)] == [(8, 10)]


def test_no_shard_outside_the_slice_is_opened(dataset: Path, tmp_path: Path) -> None:
    import shutil

    copy = Path(shutil.copytree(dataset, tmp_path / "copy"))
    shards = [s.file for s in rk.Manifest.load(copy).splits["train"].shards]
    for name in shards[:2] + shards[3:]:
        (copy / name).unlink()  # only the third shard (records 10..14) is left
    assert [int(r["id"]) for r in rk.iter_records(copy, split="train[11:14]", fields=["id"])] == [11, 12, 13]
    assert [int(r["id"]) for r in rk.iter_records(copy, split="train[2shard]", fields=["id"])] == list(
        range(10, 15)
    )
    with pytest.raises(rk.errors.ManifestError, match="missing on disk"):
        list(rk.iter_records(copy, split="train[9:14]"))


@pytest.mark.slow
def test_load_dataset_opens_no_shard_outside_the_slice(dataset: Path, tmp_path: Path) -> None:
    import shutil

    copy = Path(shutil.copytree(dataset, tmp_path / "copy"))
    shards = [s.file for s in rk.Manifest.load(copy).splits["train"].shards]
    for name in shards[:3]:
        (copy / name).unlink()
    ds = rk.load_dataset(copy, split="train[-5:]", fields=["id"])
    assert [int(r["id"]) for r in ds.as_numpy_iterator()] == list(range(18, 23))


def test_records_before_the_slice_are_not_decoded(dataset: Path, tmp_path: Path) -> None:
    import shutil

    copy = Path(shutil.copytree(dataset, tmp_path / "copy"))
    first = rk.Manifest.load(copy).splits["train"].shards[0]
    data = bytearray((copy / first.file).read_bytes())
    # Damage the payload (not the framing) of the first record: it fails its data CRC
    # only if read with verify, and does not decode if decoded.
    from recordkit.format._tfrecord import iter_tfrecords  # private: a shard's raw frames, without TensorFlow

    offsets = [offset for offset, _ in iter_tfrecords(location(copy / first.file))]
    data[offsets[0] + 12 + 2] ^= 0xFF
    (copy / first.file).write_bytes(bytes(data))
    got = [int(r["id"]) for r in rk.iter_records(copy, split="train[2:4]", fields=["id"], verify=False)]
    assert got == [2, 3]
    with pytest.raises(rk.errors.RecordkitError):
        list(rk.iter_records(copy, split="train[0:4]", fields=["id"], verify=False))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("train[:200]", "reaches past the 23 records"),
        ("nope[:1]", "no split 'nope'"),
        ("train[1:2:3]", "cannot read the slice"),
        ("train[:150%]", r"percent boundaries lie in \[-100, 100\]"),
        ("train[5]", "need from:to"),
        ("train+", "an empty part"),
    ],
)
def test_bad_slices_are_named(dataset: Path, spec: str, message: str) -> None:
    with pytest.raises(rk.errors.ManifestError, match=message):
        rk.iter_records(dataset, split=spec)
