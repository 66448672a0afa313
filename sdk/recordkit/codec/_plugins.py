"""Plugin loading: entry points in, a filled codec registry out.

Nothing is loaded at import time. :func:`load_plugins` builds a pluggy manager, loads
the ``recordkit`` entry points (optionally only those an allowlist names, never those a
blocklist names), and asks each plugin to register its codecs. :class:`PluginSet` is
the typed facade over ``pm.hook``: nothing else in recordkit touches untyped hook calls.
The same loaded plugins register their sources when the sources layer asks
(:meth:`PluginSet.register_sources`), so one allowlist and one blocklist govern both.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
import os
import re
import threading
from collections.abc import Collection, Iterable

import pluggy

from recordkit import hookspecs
from recordkit.codec._provenance import PluginInfo, PluginScoped
from recordkit.codec._registry import CodecRegistry
from recordkit.errors import PluginLoadError, RecordkitError

__all__ = [
    "PluginInfo",
    "PluginSet",
    "default_plugins",
    "default_registry",
    "load_plugins",
    "reset_default_registry",
]

logger = logging.getLogger("recordkit")

ENTRY_POINT_GROUP = hookspecs.PROJECT_NAME
ALLOW_ENV = "RECORDKIT_PLUGINS"
BLOCK_ENV = "RECORDKIT_BLOCK_PLUGINS"


@dataclasses.dataclass
class PluginSet:
    """The loaded plugins, their pluggy manager and the codecs they registered."""

    manager: pluggy.PluginManager
    plugins: list[PluginInfo]
    registry: CodecRegistry
    blocked: list[str]
    #: Plugins that failed to import and were skipped (``load_plugins(skip_broken=True)``).
    broken: list[PluginLoadError] = dataclasses.field(default_factory=list)

    def register_codecs(self, registry: CodecRegistry) -> None:
        """Call ``recordkit_register_codecs`` on every plugin, one at a time, so the
        registry knows which plugin registers what and a failing plugin is named."""
        self._call_each("recordkit_register_codecs", registry, "codecs")

    def register_sources(self, registry: PluginScoped) -> None:
        """Call ``recordkit_register_sources`` on every plugin, as :meth:`register_codecs`
        does (``registry`` is a :class:`recordkit.sources.SourceRegistry`)."""
        self._call_each("recordkit_register_sources", registry, "sources")

    def _call_each(self, hook: str, registry: PluginScoped, what: str) -> None:
        by_name = {p.name: p for p in self.plugins}
        for impl in reversed(getattr(self.manager.hook, hook).get_hookimpls()):
            info = by_name.get(impl.plugin_name, PluginInfo(impl.plugin_name, None, None))
            with registry.plugin_scope(info):
                try:
                    impl.function(registry=registry)
                except RecordkitError:
                    raise
                except Exception as exc:
                    raise PluginLoadError(
                        f"failed while registering {what}: {type(exc).__name__}: {exc}",
                        plugin=info.name,
                        distribution=info.distribution,
                    ) from exc


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _matches(ep: importlib.metadata.EntryPoint, names: Collection[str]) -> bool:
    wanted = {_normalize(n) for n in names}
    dist = ep.dist.name if ep.dist is not None else None
    return _normalize(ep.name) in wanted or (dist is not None and _normalize(dist) in wanted)


def load_plugins(
    *,
    allow: Collection[str] | None = None,
    block: Collection[str] = (),
    extra_plugins: Iterable[tuple[str, object]] = (),
    entry_points: bool = True,
    skip_broken: bool = False,
) -> PluginSet:
    """Load plugins and return them with a registry holding their codecs.

    :param allow: if given, load only the entry points whose name or distribution is
        listed (recordkit's built-in codecs are the ``recordkit`` distribution).
    :param block: never load entry points whose name or distribution is listed.
    :param extra_plugins: ``(name, plugin)`` pairs registered in-process, for codecs
        that live in an application or a test rather than a distribution.
    :param entry_points: set to False to load only ``extra_plugins``.
    :param skip_broken: a plugin that fails to import is skipped (logged as a warning,
        kept in :attr:`PluginSet.broken`, and named by the registry when a codec is
        missing) instead of failing the whole load: one broken, unrelated plugin must not
        stop reading datasets that do not use it.
    :raises PluginLoadError: a plugin failed to import or to register, naming its
        distribution and the original error.
    """
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    plugins: list[PluginInfo] = []
    blocked: list[str] = []
    broken: list[PluginLoadError] = []
    if entry_points:
        for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if _matches(ep, block) or (allow is not None and not _matches(ep, allow)):
                manager.set_blocked(ep.name)
                blocked.append(ep.name)
                continue
            if manager.get_plugin(ep.name) is not None:
                continue  # the same entry point seen twice (e.g. an editable install)
            dist = ep.dist.name if ep.dist is not None else None
            dist_version = ep.dist.version if ep.dist is not None else None
            try:
                plugin = ep.load()
            except Exception as exc:
                error = PluginLoadError(
                    f"could not be imported ({ep.value}): {type(exc).__name__}: {exc}; "
                    f"to skip it, set {BLOCK_ENV}={ep.name} (or list the plugins to load in {ALLOW_ENV})",
                    plugin=ep.name,
                    distribution=dist,
                )
                if not skip_broken:
                    raise error from exc
                logger.warning("recordkit: %s", error)
                broken.append(error)
                continue
            manager.register(plugin, name=ep.name)
            plugins.append(PluginInfo(ep.name, dist, dist_version))
    for name, plugin in extra_plugins:
        manager.register(plugin, name=name)
        plugins.append(PluginInfo(name, None, None))
    registry = CodecRegistry()
    registry.broken_plugins = [f"{error} (a codec it provides is missing)" for error in broken]
    plugin_set = PluginSet(manager, plugins, registry, blocked, broken)
    plugin_set.register_codecs(registry)
    return plugin_set


_default_lock = threading.Lock()
_default: PluginSet | None = None


def _env_list(name: str) -> list[str] | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]


def default_plugins() -> PluginSet:
    """The plugins recordkit uses when none are passed explicitly, loaded on first use.

    ``RECORDKIT_PLUGINS`` (comma-separated names) is an allowlist and
    ``RECORDKIT_BLOCK_PLUGINS`` a blocklist, for environments that must control what
    code runs. A plugin that fails to import is skipped with a warning that says how to
    block it (reads and writes that need only other codecs work); a codec it would
    have provided is reported missing, naming it.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = load_plugins(
                allow=_env_list(ALLOW_ENV), block=_env_list(BLOCK_ENV) or (), skip_broken=True
            )
        return _default


def default_registry() -> CodecRegistry:
    """The codec registry of :func:`default_plugins`."""
    return default_plugins().registry


def reset_default_registry() -> None:
    """Forget the default plugins so the next use loads them again (after installs)."""
    global _default
    with _default_lock:
        _default = None
