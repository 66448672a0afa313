"""The commands that decode a dataset's records do so with the codec versions its
manifest records (sdk/recordkit/_cli/show.py, stats.py, inspect.py, codegen.py): a
dataset that version 1 of the ``versioned`` codec wrote, with version 2 installed as a
plugin distribution (tests/recordkit/_versioned_codecs.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _versioned_codecs import PLUGIN_MODULE, SCHEMA, VersionedV1, records, registry
from click.testing import CliRunner, Result

import recordkit as rk
from recordkit.cli import main

N = 5


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def old_dataset(plugin_dist: Any, tmp_path: Path) -> Path:
    """A dataset version 1 wrote; version 2 is what is installed (the default plugins)."""
    path = tmp_path / "old"
    rk.write_dataset(records(N), SCHEMA, path, registry=registry(VersionedV1), progress=False)
    plugin_dist("rk-versioned", {"rk_versioned_v2": PLUGIN_MODULE.format(version=2)}, version="2.0.0")
    assert rk.default_registry().info("versioned").version == "2"
    return path


def written_numbers() -> list[list[int]]:
    return [np.asarray(record["numbers"]).tolist() for record in records(N)]


def test_stats_of_an_older_version_decode_its_records(old_dataset: Path, tmp_path: Path) -> None:
    result = run("stats", old_dataset, "--json", tmp_path / "stats.json")
    assert result.exit_code == 0, result.output
    values = json.loads((tmp_path / "stats.json").read_text())["fields"]["numbers"]["values"]
    flat = [n for row in written_numbers() for n in row]
    assert values["count"] == len(flat)
    assert (values["min"], values["max"]) == (min(flat), max(flat))
    assert values["mean"] == pytest.approx(sum(flat) / len(flat))


def test_show_of_an_older_version_draws_its_records(old_dataset: Path, tmp_path: Path) -> None:
    result = run("show", old_dataset, "-n", "2", "-o", tmp_path / "show")
    assert result.exit_code == 0, result.output
    drawn = sorted(p.name for p in (tmp_path / "show").iterdir())
    assert drawn == ["contact-sheet.png", "record-00000.png", "record-00001.png"]


def test_inspect_charges_the_bytes_of_an_older_version(old_dataset: Path) -> None:
    result = run("inspect", old_dataset, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["codecs"]["versioned"]["version"] == "1"
    assert summary["breakdown"]["records"] == N
    assert set(summary["breakdown"]["fields"]) >= {"numbers", "id"}


def test_codegen_of_a_dataset_parses_it_as_its_codec_version_stored_it(
    old_dataset: Path, tmp_path: Path
) -> None:
    """Given the dataset, the generated parser decodes version 1's int64 list; given the
    schema alone, it is the installed version's parser (bytes)."""
    import tensorflow as tf

    assert run("codegen", old_dataset, "-o", tmp_path / "old_parser.py").exit_code == 0
    namespace: dict[str, Any] = {}
    exec(compile((tmp_path / "old_parser.py").read_text(), "old_parser.py", "exec"), namespace)
    shards = sorted(str(p) for p in old_dataset.glob("train-*.tfrecord"))
    batch = next(iter(namespace["dataset"](shards, N)))
    assert batch["numbers"].numpy().tolist() == written_numbers()
    assert namespace["feature_spec"]()["numbers"].dtype == tf.int64

    SCHEMA.dump(tmp_path / "versions.yaml")
    result = run("codegen", tmp_path / "versions.yaml")
    assert result.exit_code == 0, result.output
    namespace = {}
    exec(compile(result.output, "new_parser.py", "exec"), namespace)
    assert namespace["feature_spec"]()["numbers"].dtype == tf.string


@pytest.fixture
def newer_dataset(plugin_dist: Any, tmp_path: Path) -> Path:
    """A dataset version 2 wrote; version 1, which does not read it, is installed."""
    from _versioned_codecs import VersionedV2

    path = tmp_path / "newer"
    rk.write_dataset(records(N), SCHEMA, path, registry=registry(VersionedV2), progress=False)
    plugin_dist("rk-versioned", {"rk_versioned_v1": PLUGIN_MODULE.format(version=1)}, version="1.0.0")
    return path


def test_a_version_the_installed_codec_does_not_read_is_one_line(newer_dataset: Path) -> None:
    result = run("stats", newer_dataset)
    assert result.exit_code == 1
    assert result.output == (
        "Error: CodecVersionError: field 'numbers', codec 'versioned': the records were stored by "
        "version 2 of codec 'versioned'; the installed codec is version 1 and does not read them: "
        "install version 2 of codec 'versioned' (the version that wrote them)\n"
    )


def test_inspect_of_a_version_the_installed_codec_does_not_read_says_so(newer_dataset: Path) -> None:
    """The summary comes from the manifest; the byte breakdown needs the keys the stored
    version wrote, which the installed codec cannot tell."""
    result = run("inspect", newer_dataset)
    assert result.exit_code == 0, result.output
    assert "no byte breakdown: field 'numbers', codec 'versioned': the records were stored by version 2" in (
        result.output
    )
