"""recordkit.beam.WriteDataset(..., append=True): the pipeline's records join an existing
dataset as new shards, as a local append's do; a failed append leaves the dataset as it
was, and running the pipeline again appends every record once. Locally and into the
local S3 server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import apache_beam as beam
import pytest
from _beam_support import SCHEMA, canonical, read_ids, records, run, write_beam, write_to
from _object_stores import Bucket, cli_options, run_shard_names
from _writer_support import check_manifest_matches_files
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.errors import DatasetError, IncompatibleSchemaError
from recordkit.format._tfrecord import (  # private: frames records by hand, to build or damage shards
    Compression,
    frame_record,
)
from recordkit.storage import Location, location
from recordkit.write import _beam as beam_writer

pytestmark = pytest.mark.slow


def _listing(root: Path) -> dict[str, bytes]:
    """Every file of the dataset folder (not the staging folder, not the lock) and its bytes."""
    return {p.name: p.read_bytes() for p in root.iterdir() if p.is_file() and p.name != ".recordkit.lock"}


def test_append_adds_new_shards_after_the_existing_ones(tmp_path: Path) -> None:
    """Into a dataset the local writer wrote (3 shards, 2 rejects): the old shards stay
    as they were, the new ones are numbered after them, a new split joins, the rejects
    file gets the new lines after the old, and the result reads and verifies."""
    root = tmp_path / "data"
    rk.write_dataset(
        records(30, bad=frozenset({4, 9})),
        SCHEMA,
        root,
        key="id",
        shard_records=10,
        on_error="skip",
        progress=False,
    )
    before = rk.Manifest.load(root)
    old_shards = before.split("train").shards
    assert len(old_shards) == 3

    more = records(40, start=100, bad=frozenset({5}))
    validation = records(8, start=500)
    run(
        write_beam(
            root,
            {"train": more, "validation": validation},
            key="id",
            num_shards=2,
            append=True,
            on_error="skip",
        )
    )

    manifest = rk.Manifest.load(root)
    train = manifest.split("train")
    assert train.shards[:3] == old_shards  # the same files, bytes and sha256
    assert [s.file for s in train.shards[3:]] == ["train-00003.tfrecord", "train-00004.tfrecord"]
    assert train.rejected == 3
    rejects = [json.loads(line) for line in (root / "rejects-train.jsonl").read_text().splitlines()]
    assert [r.get("key") for r in rejects] == ["4", "9", "105"]
    assert [s.file for s in manifest.split("validation").shards] == [
        "validation-00000.tfrecord",
        "validation-00001.tfrecord",
    ]
    assert manifest.created == before.created
    assert manifest.fingerprint == before.fingerprint
    expected = sorted({*range(30), *range(100, 140)} - {4, 9, 105})
    assert read_ids(root) == expected
    assert read_ids(root, "validation") == list(range(500, 508))
    check_manifest_matches_files(root)
    verified = CliRunner().invoke(main, ["verify", str(root)])
    assert verified.exit_code == 0, verified.output
    # A local append after the Beam one continues the numbering.
    manifest = rk.write_dataset(records(5, start=900), SCHEMA, root, key="id", append=True, progress=False)
    assert manifest.split("train").shards[-1].file == "train-00005.tfrecord"
    check_manifest_matches_files(root)


def test_append_to_a_beam_dataset_equals_one_write_of_all_records(tmp_path: Path) -> None:
    first, second = records(50), records(30, start=1000)
    run(write_beam(tmp_path / "a", {"train": first}, key="id", num_shards=3))
    run(write_beam(tmp_path / "a", {"train": second}, key="id", num_shards=2, append=True))
    run(write_beam(tmp_path / "b", {"train": first + second}, key="id", num_shards=4))
    assert canonical(tmp_path / "a", "train") == canonical(tmp_path / "b", "train")
    assert len(rk.Manifest.load(tmp_path / "a").split("train").shards) == 5
    check_manifest_matches_files(tmp_path / "a")


def test_keys_are_not_checked_against_the_stored_records(tmp_path: Path) -> None:
    """As locally: an append adds what it is given; the same records twice are stored twice."""
    items = records(10)
    run(write_beam(tmp_path, {"train": items}, key="id", num_shards=1))
    run(write_beam(tmp_path, {"train": items}, key="id", num_shards=1, append=True))
    assert read_ids(tmp_path) == sorted([*range(10), *range(10)])


def test_an_append_may_add_an_optional_field(tmp_path: Path) -> None:
    rk.write_dataset(records(6), SCHEMA, tmp_path, key="id", progress=False)
    grown = SCHEMA.model_copy(
        update={"fields": {**SCHEMA.fields, "note": rk.FieldSpec(codec="text", optional=True)}}
    )
    items = [{**r, "note": f"n{r['id']}"} for r in records(4, start=50)]

    def body(p: beam.Pipeline) -> None:
        p | beam.Create(items) | rk.beam.WriteDataset(grown, tmp_path, key="id", num_shards=1, append=True)

    run(body)
    manifest = rk.Manifest.load(tmp_path)
    assert list(manifest.schema.fields) == ["id", "payload", "image", "note"]
    assert manifest.fingerprint == grown.bind().fingerprint()
    notes = {int(r["id"]): r.get("note") for r in rk.iter_records(tmp_path)}
    assert {i: notes[i] for i in range(50, 54)} == {i: f"n{i}" for i in range(50, 54)}
    assert all(notes[i] is None for i in range(6))
    check_manifest_matches_files(tmp_path)


def test_an_incompatible_schema_or_compression_is_refused_when_the_pipeline_is_built(tmp_path: Path) -> None:
    rk.write_dataset(records(3), SCHEMA, tmp_path, key="id", progress=False)
    before = _listing(tmp_path)
    changed = SCHEMA.model_copy(
        update={
            "fields": {**SCHEMA.fields, "payload": rk.FieldSpec(codec="scalar", options={"dtype": "int64"})}
        }
    )
    with pytest.raises(IncompatibleSchemaError, match="payload"):
        beam.Pipeline() | beam.Create([]) | rk.beam.WriteDataset(changed, tmp_path, append=True)
    with pytest.raises(DatasetError, match="stored with compression 'none'; cannot add shards with 'GZIP'"):
        (
            beam.Pipeline()
            | beam.Create([])
            | rk.beam.WriteDataset(SCHEMA, tmp_path, append=True, compression="GZIP")
        )
    with pytest.raises(DatasetError, match="pass append=True"):
        beam.Pipeline() | beam.Create([]) | rk.beam.WriteDataset(SCHEMA, tmp_path)
    assert _listing(tmp_path) == before


def test_the_local_and_beam_writers_refuse_an_append_in_the_same_words(tmp_path: Path) -> None:
    """Both writers plan an append with the same code: another layout or another
    compression is refused by each with the same error, and nothing is written."""
    rk.write_dataset(records(3), tmp_path, SCHEMA, key="id", progress=False)
    before = _listing(tmp_path)
    changed = SCHEMA.model_copy(
        update={
            "fields": {**SCHEMA.fields, "payload": rk.FieldSpec(codec="scalar", options={"dtype": "int64"})}
        }
    )
    refused: list[tuple[rk.Schema, dict[str, Any], type[Exception]]] = [
        (changed, {}, IncompatibleSchemaError),
        (SCHEMA, {"compression": "ZLIB"}, DatasetError),
    ]
    for schema, options, error in refused:
        with pytest.raises(error) as local:
            rk.write_dataset([], tmp_path, schema, append=True, progress=False, **options)
        with pytest.raises(error) as in_beam:
            beam.Pipeline() | beam.Create([]) | rk.beam.WriteDataset(tmp_path, schema, append=True, **options)
        assert str(local.value) == str(in_beam.value)
    assert _listing(tmp_path) == before


def test_a_split_with_an_unfinished_local_write_is_refused(tmp_path: Path) -> None:
    writer = rk.DatasetWriter(tmp_path, SCHEMA, shard_records=2, progress=False)
    for record in records(5):
        writer.write(record)
    writer.abort()  # as if the process stopped: two complete shards listed, the split unfinished
    assert rk.Manifest.load(tmp_path).split("train").unfinished is not None
    with pytest.raises(DatasetError, match="split 'train' has an unfinished write"):
        beam.Pipeline() | beam.Create([]) | rk.beam.WriteDataset(SCHEMA, tmp_path, append=True)


def test_a_split_with_field_groups_is_refused_naming_the_local_writer(tmp_path: Path) -> None:
    rk.write_dataset(records(4), SCHEMA, tmp_path, shard_records=2, progress=False)
    scores = rk.Schema(name="s", fields={"score": rk.FieldSpec(codec="scalar")})
    rk.add_fields(tmp_path, "train", scores, [1, 2, 3, 4])
    with pytest.raises(DatasetError, match=r"split 'train' has field groups \(score\).*rk.DatasetWriter"):
        beam.Pipeline() | beam.Create([]) | rk.beam.WriteDataset(SCHEMA, tmp_path, append=True)


def test_a_failed_append_leaves_the_dataset_unchanged_and_a_rerun_appends_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard write that fails, then a commit that fails after moving the new shards to
    their final names: each time the old manifest, shards and indexes are as they were
    and readers see the old records. The same pipeline run again appends every record once."""
    rk.write_dataset(records(20), SCHEMA, tmp_path, key="id", shard_records=8, progress=False)
    before = _listing(tmp_path)
    more = records(30, start=200)
    pipeline = write_beam(tmp_path, {"train": more}, key="id", num_shards=4, append=True)

    real_write = beam_writer.write_shard
    written: list[str] = []

    def failing_write(target: Location, framed: Iterable[bytes], compression: Compression) -> rk.ShardInfo:
        if len(written) == 2:
            raise OSError("injected failure while writing a shard")
        written.append(target.name)
        return real_write(target, framed, compression)

    monkeypatch.setattr(beam_writer, "write_shard", failing_write)
    with pytest.raises(Exception, match="injected failure while writing"):
        run(pipeline)
    assert _listing(tmp_path) == before
    assert read_ids(tmp_path) == list(range(20))
    monkeypatch.setattr(beam_writer, "write_shard", real_write)

    def failing_cleanup(folder: Any, split: str, listed: set[str]) -> None:
        raise OSError("injected failure in the commit")

    monkeypatch.setattr(beam_writer, "_remove_unlisted", failing_cleanup)
    with pytest.raises(Exception, match="injected failure in the commit"):
        run(pipeline)
    after = _listing(tmp_path)
    assert {name: after[name] for name in before} == before  # the old files, unchanged
    new = {f"train-{i:05d}.tfrecord{suffix}" for i in range(3, 7) for suffix in ("", ".index")}
    assert set(after) - set(before) == new  # the new shards, listed by no manifest
    assert read_ids(tmp_path) == list(range(20))
    verified = CliRunner().invoke(main, ["verify", str(tmp_path)])
    assert verified.exit_code == 0, verified.output

    monkeypatch.undo()
    run(pipeline)
    assert read_ids(tmp_path) == sorted([*range(20), *range(200, 230)])
    check_manifest_matches_files(tmp_path)  # nothing left of the failed runs


def test_a_manifest_changed_while_the_pipeline_ran_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local append lands between the pipeline's start and its commit: the commit
    refuses, and the local append's records stay."""
    rk.write_dataset(records(5), SCHEMA, tmp_path, key="id", progress=False)
    real_write = beam_writer.write_shard

    def write_after_another_append(
        target: Location, framed: Iterable[bytes], compression: Compression
    ) -> rk.ShardInfo:
        if not (tmp_path / "train-00001.tfrecord").exists():
            rk.write_dataset(records(3, start=50), SCHEMA, tmp_path, key="id", append=True, progress=False)
        return real_write(target, framed, compression)

    monkeypatch.setattr(beam_writer, "write_shard", write_after_another_append)
    with pytest.raises(Exception, match=r"dataset\.json changed while the pipeline ran"):
        run(write_beam(tmp_path, {"train": records(10, start=100)}, key="id", num_shards=2, append=True))
    assert read_ids(tmp_path) == [0, 1, 2, 3, 4, 50, 51, 52]


def test_a_retried_commit_finds_its_write_committed(tmp_path: Path) -> None:
    """The commit step run a second time with the same input (as a runner retries a
    failed bundle) after the first wrote dataset.json: no error, nothing appended twice."""
    rk.write_dataset(records(6), SCHEMA, tmp_path, key="id", progress=False)
    before = rk.Manifest.load(tmp_path)
    folder = beam_writer.Folder(str(tmp_path), None)
    run_folder = f"{beam_writer.STAGING_FOLDER}/retried"
    shard = beam_writer._WriteShardFn(folder, "train", Compression.NONE, run_folder)
    shard.setup()
    encoder = SCHEMA.bind().encoder()
    seen: dict[str, list[int]] = {}
    framed = [(i, frame_record(encoder.encode(r, None, seen))) for i, r in enumerate(records(4, start=70))]
    staged = list(shard.process((0, framed)))
    listed = before.model_dump_json(by_alias=True)
    commit = beam_writer._CommitFn(folder, listed, listed, ["train"], run_folder, frozenset())
    first = list(commit.process(staged, [], {"train": seen}))
    again = list(commit.process(staged, [], {"train": seen}))
    assert first == again == [str(tmp_path / "dataset.json")]
    assert read_ids(tmp_path) == [0, 1, 2, 3, 4, 5, 70, 71, 72, 73]
    check_manifest_matches_files(tmp_path)
    assert not (tmp_path / beam_writer.STAGING_FOLDER).exists()


def test_append_into_an_s3_bucket_and_a_failed_append_there(
    tmp_path: Path, s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into moto's S3 server on 127.0.0.1: a Beam dataset, an append that fails in its
    commit (the old dataset reads unchanged), the append run again (every record once),
    then verify and the readers in the bucket."""
    url = s3_bucket.join("pets")
    options = s3_bucket.storage_options
    run(write_to(url, {"train": records(25)}, options, num_shards=2))
    manifest_before = location(url, options).join("dataset.json").read_bytes()

    pipeline = write_to(
        url,
        {"train": records(20, start=300), "test": records(5, start=900)},
        options,
        num_shards=2,
        append=True,
    )

    real_place = beam_writer._place
    placed: list[str] = []

    def failing_place(folder: Any, staged: str, info: Any, name: str) -> Any:
        if placed:  # in a bucket the commit sweeps nothing: fail it after one shard is in place
            raise OSError("injected failure in the commit")
        placed.append(name)
        return real_place(folder, staged, info, name)

    monkeypatch.setattr(beam_writer, "_place", failing_place)
    with pytest.raises(Exception, match="injected failure in the commit"):
        run(pipeline)
    assert location(url, options).join("dataset.json").read_bytes() == manifest_before
    assert read_ids(url, storage_options=options) == list(range(25))

    monkeypatch.undo()
    run(pipeline)
    assert read_ids(url, storage_options=options) == sorted([*range(25), *range(300, 320)])
    assert read_ids(url, "test", storage_options=options) == list(range(900, 905))
    manifest = rk.Manifest.load(url, storage_options=options)
    files = [s.file for s in manifest.split("train").shards]
    assert run_shard_names(files) == [f"train-{i:05d}.tfrecord" for i in range(4)]
    assert len({f.split(".")[1] for f in files}) == 2  # the first run's token, the append's
    stored = list(location(url, options).walk_files())
    assert not any(name.startswith(".beam-staging") for name in stored)  # no staging objects left
    assert all(n == "dataset.json" or n.startswith(("train-", "test-")) for n in stored)
    verified = CliRunner().invoke(main, ["verify", url, *cli_options(s3_bucket)])
    assert verified.exit_code == 0, verified.output


def test_a_writer_that_commits_into_a_bucket_during_the_commit_step_is_not_overwritten(
    bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer appends a split of its own after the commit step checked the
    manifest, while it moves the shards: the commit's conditional PUT is refused
    (ConcurrentWriteError), and the other writer's split stays in the dataset."""
    url, options = bucket.join("pets"), bucket.storage_options
    rk.write_dataset(records(5), SCHEMA, url, key="id", progress=False, storage_options=options)
    real_commit_split = beam_writer._commit_split

    def another_writer_commits_meanwhile(*args: Any, **kwargs: Any) -> rk.SplitInfo:
        if "other" not in rk.Manifest.load(url, storage_options=options).splits:
            rk.write_dataset(
                records(3, start=50),
                SCHEMA,
                url,
                "other",
                append=True,
                progress=False,
                storage_options=options,
            )
        return real_commit_split(*args, **kwargs)

    monkeypatch.setattr(beam_writer, "_commit_split", another_writer_commits_meanwhile)
    with pytest.raises(rk.errors.ConcurrentWriteError, match=r"dataset\.json was replaced by another writer"):
        run(write_to(url, {"train": records(10, start=100)}, options, num_shards=2, append=True))
    assert read_ids(url, "train", options) == [0, 1, 2, 3, 4]
    assert read_ids(url, "other", options) == [50, 51, 52]


def test_a_commit_into_a_bucket_that_another_writer_beat_never_replaces_its_rejects_file(
    s3_bucket: Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer appends to train with a reject of its own after the commit step
    read the manifest, and lists its rejects file; the commit then writes its rejects
    before its conditional PUT is refused. Each run writes its rejects under its own
    token (``rejects-train.<token>.jsonl``), so the file the other writer listed keeps its
    lines. (Before, both wrote ``rejects-train.jsonl``: the refused commit's replaced it.)"""
    url, options = s3_bucket.join("pets"), s3_bucket.storage_options
    rk.write_dataset(
        records(5, bad=frozenset({2})),
        SCHEMA,
        url,
        key="id",
        on_error="skip",
        progress=False,
        storage_options=options,
    )
    real_commit_split = beam_writer._commit_split

    def another_writer_commits_meanwhile(*args: Any, **kwargs: Any) -> rk.SplitInfo:
        rk.write_dataset(
            records(3, start=50, bad=frozenset({1})),
            SCHEMA,
            url,
            key="id",
            on_error="skip",
            append=True,
            progress=False,
            storage_options=options,
        )
        return real_commit_split(*args, **kwargs)

    monkeypatch.setattr(beam_writer, "_commit_split", another_writer_commits_meanwhile)
    pipeline = write_to(
        url,
        {"train": records(10, start=100, bad=frozenset({3}))},
        options,
        num_shards=2,
        append=True,
        on_error="skip",
    )
    with pytest.raises(rk.errors.ConcurrentWriteError, match=r"dataset\.json was replaced by another writer"):
        run(pipeline)
    split = rk.Manifest.load(url, storage_options=options).split("train")
    assert split.rejected == 2
    assert split.rejects_file is not None
    text = location(url, options).join(split.rejects_file).read_bytes().decode("utf-8")
    assert [json.loads(line)["key"] for line in text.splitlines()] == ["2", "51"]
    assert read_ids(url, "train", options) == [0, 1, 3, 4, 50, 52]
