"""The codec registry (sdk/recordkit/codec/_registry.py), used directly."""

from __future__ import annotations

import warnings

import pytest

import recordkit as rk
from recordkit_codecs.scalar import ScalarCodec


class OtherScalar(ScalarCodec):
    """Another codec under the name ``scalar``."""


class Renamed(ScalarCodec):
    name = "renamed"
    version = "7"


def filled(plugin: str = "first", distribution: str | None = "dist-one") -> rk.CodecRegistry:
    registry = rk.CodecRegistry()
    with registry.plugin_scope(rk.PluginInfo(plugin, distribution, "1.0" if distribution else None)):
        registry.register(ScalarCodec)
    return registry


SECOND = rk.PluginInfo("second", "dist-two", "2.0")


def test_register_and_look_up() -> None:
    registry = filled()
    assert registry.get("scalar") is ScalarCodec
    assert "scalar" in registry
    assert "image" not in registry
    assert len(registry) == 1
    info = registry.info("scalar")
    assert (info.name, info.codec, info.plugin, info.distribution, info.distribution_version) == (
        "scalar",
        ScalarCodec,
        "first",
        "dist-one",
        "1.0",
    )
    assert info.version == ScalarCodec.version


def test_direct_registration_has_no_distribution() -> None:
    registry = rk.CodecRegistry()
    registry.register(Renamed)
    info = registry.info("renamed")
    assert (info.plugin, info.distribution, info.version) == ("<direct>", None, "7")


def test_a_plugin_scope_ends_with_its_block_even_when_it_raises() -> None:
    registry = rk.CodecRegistry()
    seen = []

    def failing_hook() -> None:
        with registry.plugin_scope(SECOND):
            seen.append(registry.current_plugin)
            raise KeyError("a plugin's hook failed")

    with pytest.raises(KeyError):
        failing_hook()
    assert seen == [SECOND]
    assert registry.current_plugin.name == "<direct>"
    registry.register(Renamed)
    assert registry.info("renamed").distribution is None


def test_iteration_is_sorted_by_name() -> None:
    registry = filled()
    registry.register(Renamed)
    assert [i.name for i in registry] == ["renamed", "scalar"]
    assert registry.names() == ["renamed", "scalar"]


def test_registering_the_same_class_twice_is_harmless() -> None:
    registry = filled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registry.register(ScalarCodec)
    assert len(registry) == 1


def test_duplicate_is_refused_naming_both_plugins() -> None:
    registry = filled()
    with registry.plugin_scope(SECOND), pytest.raises(rk.errors.DuplicateCodecError) as info:
        registry.register(OtherScalar)
    message = str(info.value)
    assert "already registered by plugin 'first' (distribution 'dist-one')" in message
    assert "plugin 'second'" in message
    assert "distribution 'dist-two'" in message
    assert registry.get("scalar") is ScalarCodec


def test_replace_warns_and_replaces() -> None:
    registry = filled()
    replaced = "codec 'scalar' from plugin 'first' is replaced by plugin 'second'"
    with registry.plugin_scope(SECOND), pytest.warns(UserWarning, match=replaced):
        registry.register(OtherScalar, replace=True)
    assert registry.get("scalar") is OtherScalar
    assert registry.info("scalar").distribution == "dist-two"


def test_a_replacement_registered_first_survives_the_original() -> None:
    registry = rk.CodecRegistry()
    with registry.plugin_scope(rk.PluginInfo("replacer", "dist-r", "1")):
        registry.register(OtherScalar, replace=True)
    replaced = "from plugin 'original' is replaced by plugin 'replacer'"
    with (
        registry.plugin_scope(rk.PluginInfo("original", "dist-o", "1")),
        pytest.warns(UserWarning, match=replaced),
    ):
        registry.register(ScalarCodec)
    assert registry.get("scalar") is OtherScalar


def test_unknown_codec_lists_the_installed_ones() -> None:
    registry = filled()
    registry.register(Renamed)
    with pytest.raises(rk.errors.UnknownCodecError, match=r"'nope' .*\(installed: renamed, scalar\)") as info:
        registry.get("nope")
    assert info.value.context.codec == "nope"


def test_unknown_codec_in_an_empty_registry() -> None:
    with pytest.raises(rk.errors.UnknownCodecError, match=r"installed: none"):
        rk.CodecRegistry().info("scalar")


@pytest.mark.parametrize("thing", [ScalarCodec(), "scalar", int])
def test_only_codec_classes_can_be_registered(thing: object) -> None:
    registry = rk.CodecRegistry()
    sloppy = rk.PluginInfo("sloppy", None, None)
    with (
        registry.plugin_scope(sloppy),
        pytest.raises(rk.errors.PluginError, match="takes a Codec subclass") as info,
    ):
        registry.register(thing)  # type: ignore[arg-type]
    assert info.value.plugin == "sloppy"


def test_a_codec_needs_a_name() -> None:
    class Nameless(ScalarCodec):
        name = ""

    with pytest.raises(rk.errors.PluginError, match="Nameless has no 'name'"):
        rk.CodecRegistry().register(Nameless)


def test_create_validates_options() -> None:
    registry = filled()
    codec = registry.create("scalar", {"dtype": "str"})
    assert isinstance(codec, ScalarCodec)
    assert codec.options.dtype == "str"
    with pytest.raises(rk.errors.CodecOptionsError, match="option dtype") as info:
        registry.create("scalar", {"dtype": "complex"})
    assert info.value.context.codec == "scalar"
