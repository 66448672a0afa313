"""The sources by kind: :class:`SourceRegistry`, and the default one with recordkit's
own sources and those plugins add through ``recordkit_register_sources``."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recordkit.codec._plugins import PluginSet, default_plugins
from recordkit.errors import PluginError
from recordkit.sources._base import Source
from recordkit.sources._factories import BUILTIN_SOURCES

__all__ = ["SourceFactory", "SourceInfo", "SourceRegistry", "default_sources"]

#: Makes a source from the user's input path and options: ``factory(input, **options)``.
SourceFactory = Callable[..., Source]


@dataclasses.dataclass(frozen=True)
class SourceInfo:
    """A registered source: its kind, factory and the plugin that registered it."""

    kind: str
    factory: SourceFactory
    plugin: str
    distribution: str | None

    @property
    def summary(self) -> str:
        """The first line of the factory's docstring."""
        doc = (self.factory.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


class SourceRegistry:
    """Sources by kind (``coco``, ``image_folder`` ...), filled by plugins."""

    def __init__(self) -> None:
        self._sources: dict[str, SourceInfo] = {}
        self._current: tuple[str, str | None] = ("<direct>", None)

    def _set_current_plugin(
        self, plugin: str, distribution: str | None, distribution_version: str | None
    ) -> None:
        self._current = (plugin, distribution)

    def register(self, kind: str, factory: SourceFactory, *, replace: bool = False) -> None:
        """Add the source ``kind``; ``factory(input, **options)`` makes it."""
        if not kind or not kind.replace("_", "a").replace("-", "a").isalnum():
            raise PluginError(
                f"invalid source kind {kind!r} (letters, digits, _ and -)", plugin=self._current[0]
            )
        if not callable(factory):
            raise PluginError(f"source {kind!r}: the factory must be callable", plugin=self._current[0])
        old = self._sources.get(kind)
        if old is not None and not replace:
            raise PluginError(
                f"source {kind!r} is registered twice (first by plugin {old.plugin!r}); pass replace=True "
                "to replace it",
                plugin=self._current[0],
                distribution=self._current[1],
            )
        self._sources[kind] = SourceInfo(kind, factory, *self._current)

    def kinds(self) -> list[str]:
        """The registered kinds, sorted."""
        return sorted(self._sources)

    def info(self, kind: str) -> SourceInfo:
        """The registration of ``kind``; an unknown kind names the registered ones."""
        try:
            return self._sources[kind]
        except KeyError:
            raise PluginError(f"no source {kind!r}; the sources are: {', '.join(self.kinds())}") from None

    def create(self, kind: str, input: str | Path, **options: Any) -> Source:
        """The source ``kind`` reading ``input`` with ``options``; a bad option is a
        TypeError or ValueError naming it."""
        return self.info(kind).factory(input, **options)


_lock = threading.Lock()
_default: SourceRegistry | None = None


def default_sources(
    plugins: PluginSet | None = None, builtins: dict[str, SourceFactory] | None = None
) -> SourceRegistry:
    """recordkit's own sources (``builtins``, default: all of them) plus those that
    ``plugins`` (default: the installed plugins) register; cached when neither is given."""
    global _default
    if plugins is None and builtins is None:
        with _lock:
            if _default is None:
                _default = _fill(default_plugins(), None)
            return _default
    return _fill(plugins or default_plugins(), builtins)


def _fill(plugins: PluginSet, builtins: dict[str, SourceFactory] | None) -> SourceRegistry:
    from_builtins = BUILTIN_SOURCES if builtins is None else builtins
    registry = SourceRegistry()
    registry._set_current_plugin("recordkit", "recordkit", None)
    for kind, factory in from_builtins.items():
        registry.register(kind, factory)
    registry._set_current_plugin("<direct>", None, None)
    plugins.register_sources(registry)
    return registry
