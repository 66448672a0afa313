"""Plugin loading through real entry points (sdk/recordkit/codec/_plugins.py).

Each test builds throwaway distributions (a dist-info folder with entry_points.txt and
the plugin modules) with the ``plugin_dist`` fixture, so loading goes through
importlib.metadata exactly as for an installed package.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import recordkit as rk
from recordkit.codec._plugins import default_plugins, reset_default_registry

# A plugin module registering one codec named {codec!r}; {replace} is the register flag.
CODEC_PLUGIN = """
import recordkit as rk
from recordkit_codecs.scalar import ScalarCodec


class ThrowawayCodec(ScalarCodec):
    name = {codec!r}
    summary = "from a throwaway plugin"


@rk.hookimpl
def recordkit_register_codecs(registry):
    registry.register(ThrowawayCodec, replace={replace})
"""

RAISES_ON_IMPORT = """
raise RuntimeError("boom at import")
"""

RAISES_IN_HOOK = """
import recordkit as rk


@rk.hookimpl
def recordkit_register_codecs(registry):
    raise KeyError("no such thing")
"""


def unique(prefix: str) -> str:
    """A module name no other test uses (modules stay cached in sys.modules)."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def codec_plugin(codec: str, *, replace: bool = False) -> str:
    return CODEC_PLUGIN.format(codec=codec, replace=replace)


# -- discovery -----------------------------------------------------------------------------


def test_builtin_codecs_come_from_recordkits_own_entry_points() -> None:
    plugins = rk.load_plugins()
    info = plugins.registry.info("scalar")
    assert (info.plugin, info.distribution) == ("scalar", "recordkit")
    assert info.distribution_version == importlib.metadata.version("recordkit")
    own = importlib.metadata.distribution("recordkit").entry_points.select(group="recordkit")
    declared = {ep.name for ep in own}
    assert {p.name for p in plugins.plugins if p.distribution == "recordkit"} == declared


def test_a_third_party_plugin_is_found_and_its_provenance_kept(plugin_dist) -> None:
    module = unique("rk_shapes")
    plugin_dist("rk-shapes", {module: codec_plugin("shape")}, version="2.3.1")
    plugins = rk.load_plugins()
    info = plugins.registry.info("shape")
    assert (info.plugin, info.distribution, info.distribution_version) == (module, "rk-shapes", "2.3.1")
    assert rk.PluginInfo(module, "rk-shapes", "2.3.1") in plugins.plugins
    assert info.codec.summary == "from a throwaway plugin"


def test_in_process_plugins_register_like_installed_ones() -> None:
    from recordkit_codecs import scalar

    plugins = rk.load_plugins(entry_points=False, extra_plugins=[("mine", scalar)])
    assert plugins.registry.names() == ["scalar"]
    assert plugins.registry.info("scalar").plugin == "mine"
    assert plugins.registry.info("scalar").distribution is None


# -- failures name the plugin, its distribution and the original error --------------------


def test_a_plugin_that_raises_on_import_names_itself(plugin_dist) -> None:
    module = unique("rk_broken")
    plugin_dist("rk-broken", {module: RAISES_ON_IMPORT})
    with pytest.raises(rk.errors.PluginLoadError) as info:
        rk.load_plugins()
    error = info.value
    assert (error.plugin, error.context.distribution) == (module, "rk-broken")
    assert isinstance(error.__cause__, RuntimeError)
    message = str(error)
    assert f"plugin {module!r}" in message
    assert "distribution 'rk-broken'" in message
    assert "RuntimeError: boom at import" in message


def test_an_entry_point_to_a_missing_module(plugin_dist) -> None:
    plugin_dist("rk-ghost", {}, entry_points={"ghost": "rk_no_such_module_here"})
    with pytest.raises(rk.errors.PluginLoadError, match="ModuleNotFoundError") as info:
        rk.load_plugins()
    assert info.value.plugin == "ghost"
    assert "distribution 'rk-ghost'" in str(info.value)


def test_a_plugin_whose_hook_raises_names_itself(plugin_dist) -> None:
    module = unique("rk_hookfail")
    plugin_dist("rk-hookfail", {module: RAISES_IN_HOOK})
    with pytest.raises(rk.errors.PluginLoadError, match="registering codecs: KeyError") as info:
        rk.load_plugins()
    assert info.value.plugin == module
    assert info.value.context.distribution == "rk-hookfail"
    assert isinstance(info.value.__cause__, KeyError)


def test_a_duplicate_codec_name_is_refused(plugin_dist) -> None:
    module = unique("zz_dup")
    plugin_dist("rk-dup", {module: codec_plugin("scalar")})
    with pytest.raises(rk.errors.DuplicateCodecError) as info:
        rk.load_plugins()
    message = str(info.value)
    # Both providers are named, whichever registered first.
    assert "codec 'scalar' is already registered by plugin" in message
    assert "plugin 'scalar'" in message
    assert "distribution 'recordkit'" in message
    assert f"plugin {module!r}" in message
    assert "distribution 'rk-dup'" in message
    assert "replace=True" in message
    assert info.value.context.codec == "scalar"


@pytest.mark.parametrize("prefix", ["aa_replacer", "zz_replacer"])
def test_replace_true_wins_whichever_plugin_loads_first(plugin_dist, prefix: str) -> None:
    module = unique(prefix)  # entry points load in name order: before and after 'scalar'
    plugin_dist("rk-replacer", {module: codec_plugin("scalar", replace=True)})
    with pytest.warns(UserWarning, match=f"codec 'scalar' from plugin .* is replaced by plugin .*{prefix}"):
        plugins = rk.load_plugins()
    info = plugins.registry.info("scalar")
    assert (info.plugin, info.distribution) == (module, "rk-replacer")
    assert info.codec.summary == "from a throwaway plugin"


# -- allow and block lists -----------------------------------------------------------------


def test_a_blocked_plugin_is_not_even_imported(plugin_dist) -> None:
    module = unique("rk_blocked")
    plugin_dist("rk-blocked", {module: RAISES_ON_IMPORT})
    plugins = rk.load_plugins(block=[module])
    assert module not in sys.modules
    assert plugins.blocked == [module]
    assert "scalar" in plugins.registry


def test_block_by_distribution_name_is_normalised(plugin_dist) -> None:
    module = unique("rk_blocked")
    plugin_dist("rk-blocked-dist", {module: RAISES_ON_IMPORT})
    plugins = rk.load_plugins(block=["RK_Blocked.Dist"])
    assert module not in sys.modules
    assert module in plugins.blocked


def test_an_allowlist_loads_only_what_it_names(plugin_dist) -> None:
    wanted, unwanted = unique("rk_wanted"), unique("rk_unwanted")
    plugin_dist("rk-wanted", {wanted: codec_plugin("wanted")})
    plugin_dist("rk-unwanted", {unwanted: RAISES_ON_IMPORT})
    plugins = rk.load_plugins(allow=["rk-wanted"])
    assert plugins.registry.names() == ["wanted"]
    assert unwanted not in sys.modules
    assert {"scalar", unwanted} <= set(plugins.blocked)


def test_allowing_recordkit_loads_only_the_builtins(plugin_dist) -> None:
    module = unique("rk_other")
    plugin_dist("rk-other", {module: RAISES_ON_IMPORT})
    plugins = rk.load_plugins(allow=["recordkit"])
    assert {p.distribution for p in plugins.plugins} == {"recordkit"}
    assert "scalar" in plugins.registry
    assert module not in sys.modules


def test_block_wins_over_allow(plugin_dist) -> None:
    module = unique("rk_both")
    plugin_dist("rk-both", {module: codec_plugin("both")})
    plugins = rk.load_plugins(allow=["rk-both", "recordkit"], block=[module])
    assert "both" not in plugins.registry
    assert "scalar" in plugins.registry


def test_environment_blocklist_applies_to_the_default_plugins(plugin_dist, monkeypatch) -> None:
    broken, other = unique("rk_envblocked"), unique("rk_envother")
    plugin_dist("rk-envblocked", {broken: RAISES_ON_IMPORT})
    plugin_dist("rk-envother", {other: RAISES_ON_IMPORT})
    monkeypatch.setenv("RECORDKIT_BLOCK_PLUGINS", f" {broken} , rk-envother ")
    registry = rk.default_registry()
    assert "scalar" in registry
    assert broken not in sys.modules
    assert other not in sys.modules
    assert set(default_plugins().blocked) >= {broken, other}


def test_environment_allowlist_applies_to_the_default_plugins(plugin_dist, monkeypatch) -> None:
    module = unique("rk_envallowed")
    plugin_dist("rk-envallowed", {module: codec_plugin("envallowed")})
    monkeypatch.setenv("RECORDKIT_PLUGINS", "rk-envallowed")
    assert rk.default_registry().names() == ["envallowed"]
    monkeypatch.delenv("RECORDKIT_PLUGINS")
    assert "envallowed" in rk.default_registry()  # still the cached default ...
    reset_default_registry()
    assert "scalar" in rk.default_registry()  # ... until it is reset


def test_the_default_plugins_are_loaded_once() -> None:
    reset_default_registry()
    assert default_plugins() is default_plugins()
    assert rk.default_registry() is default_plugins().registry


# -- unknown codecs ------------------------------------------------------------------------


def test_an_unknown_codec_lists_the_installed_ones() -> None:
    registry = rk.load_plugins().registry
    with pytest.raises(rk.errors.UnknownCodecError) as info:
        registry.get("imagee")
    message = str(info.value)
    assert "no codec named 'imagee' is installed" in message
    assert f"(did you mean 'image'? installed: {', '.join(registry.names())})" in message


def test_a_schema_with_an_unknown_codec_names_the_field() -> None:
    schema = rk.Schema(name="s", fields={"photo": rk.FieldSpec(codec="imagee")})
    with pytest.raises(rk.errors.UnknownCodecError) as info:
        schema.bind(rk.load_plugins().registry)
    assert info.value.field == "photo"
    assert "field 'photo'" in str(info.value)
    assert "scalar" in str(info.value)


# -- no TensorFlow at import ---------------------------------------------------------------


@pytest.mark.slow
def test_import_and_plugin_loading_do_not_import_tensorflow() -> None:
    code = textwrap.dedent(
        """
        import sys
        import recordkit as rk
        assert "tensorflow" not in sys.modules, "import recordkit imported tensorflow"
        rk.default_registry()
        loaded = [n for n in ("tensorflow", "keras") if n in sys.modules]
        assert not loaded, f"loading the plugins imported {loaded}"
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# -- no pluggy in the per-record path ------------------------------------------------------


def test_only_the_plugin_modules_touch_pluggy() -> None:
    """Everything else reaches plugins through the filled registry, never ``pm.hook``."""
    repo = Path(__file__).resolve().parents[3]
    roots = [repo / "sdk" / "recordkit", repo / "plugins" / "recordkit_codecs"]
    users = sorted(
        path.relative_to(root.parent).as_posix()
        for root in roots
        for path in root.rglob("*.py")
        if re.search(r"^\s*(import pluggy|from pluggy\b)|\.hook\.", path.read_text(encoding="utf-8"), re.M)
    )
    assert users == ["recordkit/codec/_plugins.py", "recordkit/hookspecs.py"]


def test_writing_and_reading_records_call_no_hook(tmp_path: Path) -> None:
    from recordkit_codecs.scalar import ScalarCodec

    calls = []

    class CountingPlugin:
        @rk.hookimpl
        def recordkit_register_codecs(self, registry: rk.CodecRegistry) -> None:
            calls.append(registry)
            registry.register(ScalarCodec)

    plugins = rk.load_plugins(entry_points=False, extra_plugins=[("counting", CountingPlugin())])
    assert len(calls) == 1
    schema = rk.Schema(name="n", fields={"n": rk.FieldSpec(codec="scalar", options={"dtype": "int64"})})
    rk.write_dataset(
        ({"n": i} for i in range(50)), schema, tmp_path / "d", progress=False, registry=plugins.registry
    )
    assert [r["n"] for r in rk.iter_records(tmp_path / "d", registry=plugins.registry)] == list(range(50))
    assert len(calls) == 1
