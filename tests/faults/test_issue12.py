"""The defects of issue 12 that the generated families do not already pin down, one
test each: the CLI given a file or a missing path, missing paths in the readers, a
shard holding more records than its manifest says, a failing split in a multi-split
write, a broken unrelated plugin, ``--debug``, and the writer's lock options."""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import Any

import pytest
from _fault_support import SCHEMA, ids, records, relist, shard_paths, write
from click.testing import CliRunner

import recordkit as rk
from recordkit.cli import main
from recordkit.codec._plugins import (  # private: resets the process-wide registry; no public reset
    reset_default_registry,
)
from recordkit.format._tfrecord import (  # private: frames records by hand, to build or damage shards
    frame_record,
)
from recordkit.write._lock import DatasetLock  # private: holds the dataset's lock as another writer would


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_the_cli_given_a_file_or_nothing_says_so_in_one_line(tmp_path: Path, command: str) -> None:
    write(tmp_path / "d", 10)
    schema = tmp_path / "pets.yaml"
    schema.write_text("name: pets\nfields: {}\n")
    for target, expected in [
        (schema, "is a file, not a dataset folder"),
        (shard_paths(tmp_path / "d")[0], "is a file, not a dataset folder"),
        (tmp_path / "nowhere", "does not exist"),
    ]:
        result = _cli(command, str(target))
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        assert expected in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output


def test_the_readers_say_a_missing_path_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(rk.errors.DatasetError, match="does not exist"):
        rk.iter_records(tmp_path / "nowhere")
    with pytest.raises(rk.errors.DatasetError, match="does not exist"):
        rk.iter_records(tmp_path / "nowhere.tfrecord", schema=SCHEMA)
    with pytest.raises(rk.errors.ManifestError, match="does not exist"):
        rk.Manifest.load(tmp_path / "nowhere")


def test_iter_records_notices_more_records_than_the_manifest_says(tmp_path: Path) -> None:
    root = tmp_path / "d"
    write(root, 10, shard_records=10)
    (shard,) = shard_paths(root)
    extra = rk.RecordEncoder(SCHEMA.bind()).encode({"id": 99, "payload": "smuggled"})
    with open(shard, "ab") as out:
        out.write(frame_record(extra))
    relist(root)  # sizes and sha256 agree; the record count does not
    with pytest.raises(rk.errors.CorruptRecordError, match="more records than the 10 the manifest lists"):
        list(rk.iter_records(root))
    report = rk.CorruptionReport()
    assert [r["id"] for r in rk.iter_records(root, on_corrupt="skip", report=report)] == list(range(10))
    assert report.shards == [shard.name]


def test_a_multi_split_write_names_the_failing_split_and_keeps_the_complete_one(tmp_path: Path) -> None:
    root = tmp_path / "d"
    bad = [*records(5), {"id": 5, "payload": 5}]
    writer = rk.DatasetWriter(root, SCHEMA, shard_records=4, progress=False)
    writer.write_all(records(10), "train")  # complete: its input is all written
    with pytest.raises(rk.errors.RecordError, match=r"split 'test', record 5, field 'payload'"):
        writer.write_all(bad, "test")
    manifest = rk.Manifest.load(root)
    assert manifest.split("train").unfinished is None
    assert ids(root, "train") == list(range(10))
    assert manifest.split("test").unfinished is not None
    assert _cli("verify", "--split", "train", str(root)).exit_code == 0


BROKEN = "raise ImportError('needs libfoo')\n"


def test_a_broken_unrelated_plugin_does_not_stop_reads(
    tmp_path: Path, plugin_dist: Any, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "d"
    write(root, 10)
    plugin_dist("rk-broken-extra", {"rk_broken_extra": BROKEN})
    reset_default_registry()  # the write above loaded the plugins before it was installed
    with caplog.at_level(logging.WARNING, logger="recordkit"):
        assert ids(root) == list(range(10))
    warning = "\n".join(r.getMessage() for r in caplog.records)
    assert "plugin 'rk_broken_extra'" in warning
    assert "RECORDKIT_BLOCK_PLUGINS=rk_broken_extra" in warning
    # A codec nobody provides now names the broken plugin and how to block it.
    with pytest.raises(rk.errors.UnknownCodecError, match="RECORDKIT_BLOCK_PLUGINS=rk_broken_extra"):
        rk.Schema(name="x", fields={"f": rk.FieldSpec(codec="extra-codec")}).bind()
    # An explicit load still fails loudly, naming the way out.
    with pytest.raises(rk.errors.PluginLoadError, match="to skip it, set RECORDKIT_BLOCK_PLUGINS"):
        rk.load_plugins()


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    plain = _cli("verify", str(tmp_path))
    assert plain.exit_code == 1
    assert "Traceback" not in plain.output
    assert plain.output.startswith("Error: ManifestError: ")
    debug = _cli("--debug", "verify", str(tmp_path))
    assert isinstance(debug.exception, rk.errors.ManifestError)  # not turned into one line


def test_an_unexpected_error_is_one_line_asking_for_debug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "d", 3)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise struct.error("bad things")

    monkeypatch.setattr("recordkit._cli.verify.verify_dataset", broken)
    result = _cli("verify", str(tmp_path / "d"))
    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: error: bad things (unexpected: run 'recordkit --debug ...' for the traceback, and report it)"
    )


def test_the_lock_waits_a_given_time_then_names_the_holder(tmp_path: Path) -> None:
    with DatasetLock(tmp_path) as held:
        assert held.held
        with pytest.raises(rk.errors.DatasetLockedError, match=r"pid \d+\) .*\(waited 0.2 s\)"):
            DatasetLock(tmp_path, wait=0.2)
        with pytest.raises(rk.errors.DatasetLockedError, match="wait=True"):
            rk.write_dataset(records(2), SCHEMA, tmp_path, progress=False)
    with pytest.raises(ValueError, match="wait must be"):
        DatasetLock(tmp_path, wait=-1)
    rk.write_dataset(records(2), SCHEMA, tmp_path, progress=False, wait=True)
    assert ids(tmp_path) == [0, 1]
