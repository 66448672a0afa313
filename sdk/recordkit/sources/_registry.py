"""The sources by kind: :class:`SourceRegistry`, and the default one, filled by the
installed plugins through ``recordkit_register_sources``: recordkit's own sources come
through recordkit's ``sources`` entry point, exactly as a third party's do."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from recordkit._suggest import did_you_mean
from recordkit.codec._plugins import PluginSet, default_plugins
from recordkit.codec._provenance import PluginScoped
from recordkit.errors import PluginError
from recordkit.sources._base import Source

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
    distribution_version: str | None = None

    @property
    def summary(self) -> str:
        """The first line of the factory's docstring."""
        doc = (self.factory.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


class SourceRegistry(PluginScoped):
    """Sources by kind (``coco``, ``image_folder`` ...), filled by plugins, each inside
    :meth:`plugin_scope`."""

    def __init__(self) -> None:
        super().__init__()
        self._sources: dict[str, SourceInfo] = {}
        #: Plugins that failed to load and were skipped (their error messages), and
        #: plugins an allowlist or blocklist kept out: a kind that is missing may be one
        #: of theirs, so the lookup error names them.
        self.broken_plugins: list[str] = []
        self.blocked_plugins: list[str] = []

    def register(self, kind: str, factory: SourceFactory, *, replace: bool = False) -> None:
        """Add the source ``kind``; ``factory(input, **options)`` makes it.

        A kind registered already is a PluginError unless one of the two registrations
        passed ``replace=True``: that one wins, whichever plugin loaded first, and a
        warning names both plugins.
        """
        plugin = self.current_plugin
        if not isinstance(kind, str) or not kind.replace("_", "a").replace("-", "a").isalnum():
            raise PluginError(f"invalid source kind {kind!r} (letters, digits, _ and -)", plugin=plugin.name)
        if not callable(factory):
            raise PluginError(f"source {kind!r}: the factory must be callable", plugin=plugin.name)
        existing = self._sources.get(kind)
        holder = existing.plugin if existing is not None and existing.factory is not factory else None

        def duplicate() -> PluginError:
            return PluginError(
                f"source {kind!r} is registered twice (first by plugin {holder!r}); pass replace=True "
                "to replace it",
                plugin=plugin.name,
                distribution=plugin.distribution,
            )

        if self._settle("source", kind, holder, replace=replace, duplicate=duplicate):
            self._sources[kind] = SourceInfo(
                kind, factory, plugin.name, plugin.distribution, plugin.distribution_version
            )

    def kinds(self) -> list[str]:
        """The registered kinds, sorted."""
        return sorted(self._sources)

    def __iter__(self) -> Iterator[SourceInfo]:
        return iter(sorted(self._sources.values(), key=lambda info: info.kind))

    def __len__(self) -> int:
        return len(self._sources)

    def __contains__(self, kind: object) -> bool:
        return kind in self._sources

    def info(self, kind: str) -> SourceInfo:
        """The registration of ``kind``; an unknown kind names the registered ones."""
        try:
            return self._sources[kind]
        except KeyError:
            registered = ", ".join(self.kinds()) or "none"
            missing = "".join(f"; {problem}" for problem in self.broken_plugins)
            if self.blocked_plugins:
                missing += f"; plugins not loaded (allow or block lists): {', '.join(self.blocked_plugins)}"
            hint = did_you_mean(kind, self._sources)
            raise PluginError(f"no source {kind!r}; {hint}the sources are: {registered}{missing}") from None

    def create(self, kind: str, input: str | Path, **options: Any) -> Source:
        """The source ``kind`` reading ``input`` with ``options``; a bad option is a
        TypeError or ValueError naming it."""
        return self.info(kind).factory(input, **options)


_lock = threading.Lock()
_default: tuple[PluginSet, SourceRegistry] | None = None


def default_sources(plugins: PluginSet | None = None) -> SourceRegistry:
    """The sources that ``plugins`` register (default: the installed plugins, recordkit's
    own sources among them, kept until the default plugins are reloaded)."""
    global _default
    if plugins is not None:
        return _filled(plugins)
    loaded = default_plugins()
    with _lock:
        if _default is None or _default[0] is not loaded:
            _default = (loaded, _filled(loaded))
        return _default[1]


def _filled(plugins: PluginSet) -> SourceRegistry:
    registry = SourceRegistry()
    registry.broken_plugins = [f"{error} (a source it provides is missing)" for error in plugins.broken]
    registry.blocked_plugins = sorted(plugins.blocked)
    plugins.register_sources(registry)
    return registry
