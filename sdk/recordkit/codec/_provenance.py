"""Who registered what: the plugin a registry is being filled by, for codecs and sources.

The plugin loader (:class:`recordkit.PluginSet`) calls each plugin's hook inside
``registry.plugin_scope(info)``, so that every codec or source registered there records
the plugin and distribution it came from (``recordkit plugins`` shows them, and a
duplicate names both). Registrations outside any scope are ``<direct>`` ones, with no
distribution.

One rule settles a name registered twice, in both registries: it is refused unless one
of the two registrations says ``replace=True``; that one then wins whichever plugin
loads first, and a warning names both plugins.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Callable, Iterator

from recordkit.errors import RecordkitError

__all__ = ["DIRECT", "PluginInfo", "PluginScoped"]


@dataclasses.dataclass(frozen=True)
class PluginInfo:
    """A loaded plugin: its entry-point name and the distribution that ships it."""

    name: str
    distribution: str | None
    distribution_version: str | None


#: Who registers outside any plugin scope: application code calling ``register`` itself.
DIRECT = PluginInfo("<direct>", None, None)


class PluginScoped:
    """The part of a registry that knows which plugin is registering."""

    def __init__(self) -> None:
        self._plugin = DIRECT
        self._replacers: set[str] = set()  # names registered with replace=True

    @property
    def current_plugin(self) -> PluginInfo:
        """The plugin whose registrations are being made (:data:`DIRECT` outside a scope)."""
        return self._plugin

    @contextlib.contextmanager
    def plugin_scope(self, plugin: PluginInfo) -> Iterator[PluginInfo]:
        """Make what is registered inside the ``with`` block ``plugin``'s::

        with registry.plugin_scope(rk.PluginInfo("mine", "my-dist", "1.0")):
            registry.register(...)
        """
        previous, self._plugin = self._plugin, plugin
        try:
            yield plugin
        finally:
            self._plugin = previous

    def _settle(
        self,
        what: str,
        name: str,
        holder: str | None,
        *,
        replace: bool,
        duplicate: Callable[[], RecordkitError],
    ) -> bool:
        """Whether the current plugin's registration of ``name`` is kept, when ``holder``
        (a plugin name; None if nobody) holds it already: the module docs' rule, with the
        ``duplicate`` error raised when neither registration replaces."""
        keep = True
        if holder is not None:
            if not replace and name in self._replacers:
                warnings.warn(
                    f"{what} {name!r} from plugin {self._plugin.name!r} is replaced by plugin {holder!r}",
                    stacklevel=3,
                )
                keep = False
            elif not replace:
                raise duplicate()
            else:
                warnings.warn(
                    f"{what} {name!r} from plugin {holder!r} is replaced by plugin {self._plugin.name!r}",
                    stacklevel=3,
                )
        if keep and replace:
            self._replacers.add(name)
        return keep
