"""Sources are plugins like codecs (sdk/recordkit/sources/_registry.py): recordkit's own
come through its ``sources`` entry point, third parties' through theirs (throwaway
distributions from the ``plugin_dist`` fixture), all through one hook and one loading."""

from __future__ import annotations

import importlib.metadata
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import recordkit as rk
from recordkit import sources
from recordkit.cli import main
from recordkit.codec._plugins import reset_default_registry  # private: the reload after an install
from recordkit.errors import InputError

BUILTIN_KINDS = ["audio_folder", "coco", "csv", "hf", "image_folder", "jsonl", "parquet", "pascal_voc"]

# A plugin module registering one source {kind!r}; {replace} is the register flag.
SOURCE_PLUGIN = """
import recordkit as rk
from recordkit.sources import CsvSource


def tsv_table(path, **options):
    '''A tab-separated table, read as the csv source reads its rows.'''
    return CsvSource(path, **options)


@rk.hookimpl
def recordkit_register_sources(registry):
    registry.register({kind!r}, tsv_table, replace={replace})
"""


def unique(prefix: str) -> str:
    """A module name no other test uses (modules stay cached in sys.modules)."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def source_plugin(kind: str, *, replace: bool = False) -> str:
    return SOURCE_PLUGIN.format(kind=kind, replace=replace)


# -- recordkit's own sources, through recordkit's own entry point --------------------------


def test_the_builtin_sources_come_from_recordkits_sources_entry_point() -> None:
    declared = importlib.metadata.distribution("recordkit").entry_points.select(group="recordkit")
    assert {ep.name: ep.value for ep in declared}["sources"] == "recordkit.sources"
    registry = sources.default_sources(rk.load_plugins())
    version = importlib.metadata.version("recordkit")
    for kind in BUILTIN_KINDS:
        info = registry.info(kind)
        assert (info.plugin, info.distribution, info.distribution_version) == (
            "sources",
            "recordkit",
            version,
        )
    assert registry.info("coco").factory is sources.coco
    assert registry.info("coco").summary.startswith("COCO detection: image, boxes")


def test_the_allow_and_block_lists_govern_builtin_sources_as_they_do_codecs() -> None:
    blocked = rk.load_plugins(block=["sources"])
    assert not set(BUILTIN_KINDS) & set(sources.default_sources(blocked).kinds())
    assert "scalar" in blocked.registry
    only_recordkit = sources.default_sources(rk.load_plugins(allow=["recordkit"]))
    assert only_recordkit.kinds() == BUILTIN_KINDS
    assert not sources.default_sources(rk.load_plugins(allow=["scalar"])).kinds()


def test_the_environments_blocklist_reaches_recordkit_ingest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "t.csv").write_text("name\na\n", encoding="utf-8")
    monkeypatch.setenv("RECORDKIT_BLOCK_PLUGINS", "sources")
    reset_default_registry()
    try:
        result = CliRunner().invoke(main, ["ingest", "csv", str(tmp_path / "t.csv"), str(tmp_path / "out")])
        assert result.exit_code == 1
        assert result.output.startswith("Error: PluginError: no source 'csv'; the sources are: ")
        assert "coco" not in result.output
        assert result.output.endswith("; plugins not loaded (allow or block lists): sources\n")
    finally:
        monkeypatch.undo()
        reset_default_registry()
    assert "csv" in sources.default_sources().kinds()


def test_a_source_implements_public_methods_only() -> None:
    assert sources.Source.__abstractmethods__ == {"schema", "scan"}


# -- third parties -------------------------------------------------------------------------


def test_a_plugin_adds_a_source_through_the_second_hook(plugin_dist, tmp_path: Path) -> None:
    module = unique("rk_tsv")
    plugin_dist("rk-tsv", {module: source_plugin("tsv")}, version="3.1")
    registry = sources.default_sources(rk.load_plugins())
    assert set(BUILTIN_KINDS) < set(registry.kinds())
    info = registry.info("tsv")
    assert (info.plugin, info.distribution, info.distribution_version) == (module, "rk-tsv", "3.1")
    assert info.summary == "A tab-separated table, read as the csv source reads its rows."
    table = tmp_path / "t.tsv"
    table.write_text("name\tsize\na\t1\nb\t2\n", encoding="utf-8")
    assert list(registry.create("tsv", table)) == [{"name": "a", "size": 1}, {"name": "b", "size": 2}]


def test_the_default_sources_follow_a_reload_of_the_default_plugins(plugin_dist) -> None:
    before = sources.default_sources()
    assert sources.default_sources() is before
    plugin_dist("rk-late", {unique("rk_late"): source_plugin("late")})
    reset_default_registry()
    assert "late" in sources.default_sources().kinds()


# Plugins register in an order their entry-point names decide: "aa_" and "zz_" fall on
# either side of recordkit's "sources".
@pytest.mark.parametrize("prefix", ["aa_dup", "zz_dup"])
def test_a_source_kind_registered_twice_is_refused_naming_both(plugin_dist, prefix: str) -> None:
    module = unique(prefix)
    plugin_dist("rk-coco2", {module: source_plugin("coco")})
    with pytest.raises(rk.errors.PluginError, match="source 'coco' is registered twice") as caught:
        sources.default_sources(rk.load_plugins())
    message = str(caught.value)
    assert re.search(rf"first by plugin '({module}|sources)'", message)
    assert f"plugin {module!r}" in message
    assert "plugin 'sources'" in message


@pytest.mark.parametrize("prefix", ["aa_rep", "zz_rep"])
def test_a_replacement_wins_whichever_plugin_loads_first(plugin_dist, prefix: str) -> None:
    module = unique(prefix)
    plugin_dist("rk-coco3", {module: source_plugin("coco", replace=True)})
    with pytest.warns(UserWarning, match=r"source 'coco' from plugin .* is replaced by plugin"):
        registry = sources.default_sources(rk.load_plugins())
    assert (registry.info("coco").plugin, registry.info("coco").distribution) == (module, "rk-coco3")
    assert registry.info("csv").plugin == "sources"


def test_a_plugin_whose_source_hook_raises_names_itself(plugin_dist) -> None:
    module = unique("rk_badsrc")
    failing = """
import recordkit as rk


@rk.hookimpl
def recordkit_register_sources(registry):
    raise KeyError("x")
"""
    plugin_dist("rk-badsrc", {module: failing})
    with pytest.raises(rk.errors.PluginLoadError, match="registering sources: KeyError") as caught:
        sources.default_sources(rk.load_plugins())
    assert (caught.value.plugin, caught.value.context.distribution) == (module, "rk-badsrc")


def test_an_unknown_kind_names_the_registered_ones_and_the_broken_plugins(plugin_dist) -> None:
    plugin_dist("rk-shaky", {unique("rk_shaky"): "raise ImportError('needs libfoo')\n"})
    registry = sources.default_sources(rk.load_plugins(skip_broken=True))
    with pytest.raises(rk.errors.PluginError) as caught:
        registry.info("cocoo")
    message = str(caught.value)
    assert "no source 'cocoo'; did you mean 'coco'? the sources are: audio_folder, coco," in message
    assert "distribution 'rk-shaky'" in message
    assert "ImportError: needs libfoo" in message


def test_the_unknown_kind_error_is_the_one_the_cli_reference_shows() -> None:
    page = (Path(__file__).parents[3] / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"^Error: PluginError: (no source .*)$", page, re.MULTILINE)
    own = rk.load_plugins(entry_points=False, extra_plugins=[("sources", sources)])
    with pytest.raises(rk.errors.PluginError) as caught:
        sources.default_sources(own).info("cocoo")
    assert str(caught.value) == shown


# -- the registry itself -------------------------------------------------------------------


def test_registrations_are_scoped_to_a_plugin_by_a_public_context_manager() -> None:
    registry = sources.SourceRegistry()
    mine = rk.PluginInfo("mine", "my-dist", "0.3")
    with registry.plugin_scope(mine):
        registry.register("tsv", sources.csv)
    registry.register("direct", sources.jsonl)
    assert (registry.info("tsv").plugin, registry.info("tsv").distribution_version) == ("mine", "0.3")
    assert (registry.info("direct").plugin, registry.info("direct").distribution) == ("<direct>", None)
    assert [info.kind for info in registry] == ["direct", "tsv"]
    assert "tsv" in registry
    assert len(registry) == 2
    with pytest.raises(rk.errors.PluginError, match="invalid source kind 'a b'"):
        registry.register("a b", sources.csv)
    with pytest.raises(rk.errors.PluginError, match="the factory must be callable"):
        registry.register("c", "not callable")  # type: ignore[arg-type]


def test_registering_the_same_factory_twice_is_harmless() -> None:
    registry = sources.SourceRegistry()
    registry.register("tsv", sources.csv)
    registry.register("tsv", sources.csv)
    assert registry.kinds() == ["tsv"]


# -- a plugin's source, written against the public base class ------------------------------


class _Lines(sources.Source):
    """One record per line of a text file; a line ``bad`` is a bad input."""

    kind = "lines"

    def __init__(self, path: Path, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.path = path

    def schema(self, name: str | None = None) -> rk.Schema:
        return rk.Schema(name=name or "lines", fields={"text": rk.FieldSpec(codec="text")})

    def scan(self) -> Iterator[sources.SourceItem | sources.Skipped | InputError]:
        for number, line in enumerate(self.path.read_text().splitlines(), start=1):
            if line == "bad":
                yield InputError("a bad line", file=str(self.path), line=number)
            elif not line:
                yield sources.Skipped(str(self.path), "an empty line", line=number)
            else:
                yield sources.SourceItem(f"line {number}", {"text": line})


def test_the_base_class_applies_on_error_to_what_scan_yields(tmp_path: Path) -> None:
    path = tmp_path / "l.txt"
    path.write_text("a\n\nbad\nb\n")
    with pytest.raises(InputError, match="a bad line") as caught:
        list(_Lines(path))
    assert caught.value.context.line == 3
    skipping = _Lines(path, on_error="skip")
    assert [item.key for item in skipping.items()] == ["line 1", "line 4"]
    assert [(s.line, s.reason) for s in skipping.skipped] == [(2, "an empty line"), (3, "a bad line")]
