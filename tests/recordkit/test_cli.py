"""The ``recordkit`` command (sdk/recordkit/cli.py and sdk/recordkit/_cli/)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import recordkit as rk
from recordkit.cli import RecordkitGroup, main

pytestmark = pytest.mark.usefixtures("keypoints_plugin")

RECORDKIT_SCRIPT = Path(sys.executable).with_name("recordkit")


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def run_json(*args: str) -> dict[str, Any]:
    result = run("plugins", "--json", *args)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


def rows_by_codec(
    output: str, columns: tuple[str, ...] = ("codec", "version", "plugin")
) -> dict[str, list[str]]:
    """The rows of the table whose header starts with ``columns`` (the codecs' by
    default), by their first cell, each split into its cells; none without that table."""
    lines = output.splitlines()
    at = next((i for i, line in enumerate(lines) if line.split()[: len(columns)] == list(columns)), None)
    if at is None:
        return {}
    header = lines[at]
    starts = [header.index(col) for col in header.split()]
    rows = {}
    for line in lines[at + 2 :]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        rows[cells[0]] = cells
    return rows


def rows_by_source(output: str) -> dict[str, list[str]]:
    """The sources table's rows by kind: kind, plugin, distribution, summary."""
    return rows_by_codec(output, ("source", "plugin", "distribution"))


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"recordkit {rk.__version__}"


def test_help_lists_every_command() -> None:
    result = run("--help")
    assert result.exit_code == 0
    commands = result.output.split("Commands:")[1].split()
    for command in ("plugins", "inspect", "verify", "schema", "codegen"):
        assert command in commands
    assert "check" in run("schema", "--help").output


def test_a_multi_line_error_is_shown_on_one_line() -> None:
    group = RecordkitGroup("demo")

    @group.command("fail")
    def fail() -> None:
        raise rk.errors.IncompatibleSchemaError(
            "the schemas differ",
            differences=["field 'a': codec changed", "field 'b': removed"],
            file="s.yaml",
        )

    result = CliRunner().invoke(group, ["fail"])
    assert result.exit_code == 1
    assert result.output == (
        "Error: IncompatibleSchemaError: file s.yaml: the schemas differ; "
        "field 'a': codec changed; field 'b': removed\n"
    )


def test_plugins_table_lists_builtins_and_the_example_plugin() -> None:
    result = run("plugins")
    assert result.exit_code == 0, result.output
    rows = rows_by_codec(result.output)
    recordkit_version = importlib.metadata.version("recordkit")
    keypoints_version = importlib.metadata.version("recordkit-keypoints")
    assert rows["scalar"][1:4] == ["1", "scalar", f"recordkit {recordkit_version}"]
    assert rows["keypoints"][1:4] == ["1", "keypoints", f"recordkit-keypoints {keypoints_version}"]
    # Every installed codec is listed, with the summary its class declares.
    registry = rk.load_plugins().registry
    assert set(rows) == set(registry.names())
    assert rows["keypoints"][4] == registry.get("keypoints").summary


def test_plugins_lists_the_builtin_sources_from_the_recordkit_distribution() -> None:
    result = run("plugins")
    assert result.exit_code == 0, result.output
    rows = rows_by_source(result.output)
    version = importlib.metadata.version("recordkit")
    for kind in ("audio_folder", "coco", "csv", "hf", "image_folder", "jsonl", "parquet", "pascal_voc"):
        assert rows[kind][1:3] == ["sources", f"recordkit {version}"], kind
    assert rows["coco"][3] == rk.sources.coco.__doc__.splitlines()[0]
    assert set(rows) == set(rk.sources.default_sources(rk.load_plugins()).kinds())


def test_plugins_json() -> None:
    report = run_json()
    codecs = {c["codec"]: c for c in report["codecs"]}
    assert codecs["keypoints"] == {
        "codec": "keypoints",
        "version": "1",
        "plugin": "keypoints",
        "distribution": "recordkit-keypoints",
        "distribution_version": importlib.metadata.version("recordkit-keypoints"),
        "summary": rk.load_plugins().registry.get("keypoints").summary,
    }
    assert codecs["scalar"]["distribution"] == "recordkit"
    found = {s["source"]: s for s in report["sources"]}
    assert found["coco"] == {
        "source": "coco",
        "plugin": "sources",
        "distribution": "recordkit",
        "distribution_version": importlib.metadata.version("recordkit"),
        "summary": rk.sources.coco.__doc__.splitlines()[0],
    }
    plugins = {p["plugin"]: p for p in report["plugins"]}
    assert plugins["keypoints"]["codecs"] == ["keypoints"]
    assert plugins["sources"] == {
        "plugin": "sources",
        "distribution": "recordkit",
        "distribution_version": importlib.metadata.version("recordkit"),
        "codecs": [],
        "sources": ["audio_folder", "coco", "csv", "hf", "image_folder", "jsonl", "parquet", "pascal_voc"],
    }
    assert report["recordkit_version"] == rk.__version__
    assert report["blocked"] == []


def test_block_option_hides_a_plugin() -> None:
    result = run("plugins", "--block", "recordkit-keypoints")
    assert result.exit_code == 0
    assert "keypoints" not in rows_by_codec(result.output)
    assert "scalar" in rows_by_codec(result.output)
    assert "blocked plugins (not loaded): keypoints" in result.output
    without_sources = run("plugins", "--block", "sources")
    assert "coco" not in rows_by_source(without_sources.output)
    assert "scalar" in rows_by_codec(without_sources.output)


def test_allow_option_takes_repeats_and_commas() -> None:
    report = run_json("--allow", "keypoints", "--allow", "scalar,nothing-else")
    assert [c["codec"] for c in report["codecs"]] == ["keypoints", "scalar"]


def test_environment_lists_apply_unless_overridden() -> None:
    env = {"RECORDKIT_PLUGINS": "keypoints"}
    result = run("plugins", env=env)
    assert list(rows_by_codec(result.output)) == ["keypoints"]
    result = run("plugins", "--allow", "scalar", env=env)
    assert list(rows_by_codec(result.output)) == ["scalar"]
    result = run("plugins", "--block", "scalar", env={"RECORDKIT_BLOCK_PLUGINS": "keypoints"})
    assert "scalar" not in rows_by_codec(result.output)
    assert "keypoints" not in rows_by_codec(result.output)


def test_nothing_loaded() -> None:
    result = run("plugins", "--allow", "nothing-at-all")
    assert result.exit_code == 0
    assert result.output.startswith("no codecs are installed\n\nno sources are installed\n")


def test_a_plugin_load_error_is_one_line_without_traceback(plugin_dist) -> None:
    plugin_dist("rk-cli-broken", {"rk_cli_broken": "raise ImportError('needs libfoo')\n"})
    result = CliRunner().invoke(main, ["plugins"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert result.output.startswith("Error: PluginLoadError: plugin 'rk_cli_broken'")
    assert "distribution 'rk-cli-broken'" in result.output
    assert "ImportError: needs libfoo" in result.output
    # ... and blocking it is the way out.
    assert run("plugins", "--block", "rk-cli-broken").exit_code == 0


# -- the installed script, in a real process -----------------------------------------------


@pytest.mark.slow
def test_installed_script_lists_codecs_with_distributions() -> None:
    result = subprocess.run(
        [str(RECORDKIT_SCRIPT), "plugins", "--json"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    codecs = {c["codec"]: c for c in json.loads(result.stdout)["codecs"]}
    assert (codecs["scalar"]["distribution"], codecs["scalar"]["distribution_version"]) == (
        "recordkit",
        importlib.metadata.version("recordkit"),
    )
    assert (codecs["keypoints"]["distribution"], codecs["keypoints"]["distribution_version"]) == (
        "recordkit-keypoints",
        importlib.metadata.version("recordkit-keypoints"),
    )


@pytest.mark.slow
def test_installed_script_reports_a_broken_plugin_and_exits_non_zero(plugin_dist) -> None:
    info = plugin_dist("rk-script-broken", {"rk_script_broken": "raise RuntimeError('kaput')\n"})
    env = {**os.environ, "PYTHONPATH": str(info.parent)}
    result = subprocess.run(
        [str(RECORDKIT_SCRIPT), "plugins"], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "plugin 'rk_script_broken'" in result.stderr
    assert "distribution 'rk-script-broken'" in result.stderr
    assert "RuntimeError: kaput" in result.stderr


@pytest.mark.slow
def test_the_cli_does_not_import_tensorflow(tmp_path: Path) -> None:
    schema = rk.Schema.loads("name: t\nfields:\n  n: {codec: scalar, options: {dtype: int64}}\n")
    schema.dump(tmp_path / "t.yaml")
    rk.write_dataset([{"n": i} for i in range(3)], schema, tmp_path / "data", progress=False)
    data, schema_file = str(tmp_path / "data"), str(tmp_path / "t.yaml")
    code = textwrap.dedent(
        f"""
        import sys
        from recordkit.cli import RecordkitGroup, main
        for args in (["plugins"], ["plugins", "--json"], ["inspect", {data!r}], ["verify", {data!r}],
                     ["schema", "check", {schema_file!r}]):
            main(args, standalone_mode=False)
        assert "tensorflow" not in sys.modules, "the CLI imported tensorflow"
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "verified 1 shard of 1 split: 3 records" in result.stdout


@pytest.mark.slow
def test_python_dash_m_recordkit() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "recordkit", "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"recordkit {rk.__version__}"
