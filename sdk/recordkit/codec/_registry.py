"""The codec registry: codec names to codec classes, with where each came from."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from recordkit._suggest import did_you_mean
from recordkit.codec._codec import Codec
from recordkit.codec._provenance import PluginScoped
from recordkit.errors import DuplicateCodecError, PluginError, UnknownCodecError

__all__ = ["CodecInfo", "CodecRegistry"]


@dataclasses.dataclass(frozen=True)
class CodecInfo:
    """One registered codec and its provenance."""

    name: str
    codec: type[Codec[Any]]
    plugin: str
    distribution: str | None = None
    distribution_version: str | None = None

    @property
    def version(self) -> str:
        return self.codec.version


class CodecRegistry(PluginScoped):
    """Codec classes by name.

    Plugins fill it through the ``recordkit_register_codecs`` hook, each inside
    :meth:`plugin_scope`; the writer and reader look codecs up here once per schema,
    never per record.
    """

    def __init__(self) -> None:
        super().__init__()
        self._codecs: dict[str, CodecInfo] = {}
        #: Plugins that failed to load and were skipped (their error messages): a codec
        #: that is missing may be one of theirs, so the lookup error names them.
        self.broken_plugins: list[str] = []

    # -- filling -----------------------------------------------------------------------

    def register(self, codec: type[Codec[Any]], *, replace: bool = False) -> None:
        """Register ``codec`` under its ``name``.

        A name registered already is a :class:`DuplicateCodecError` unless one of the
        two registrations passed ``replace=True``: that one wins, whichever plugin loaded
        first, and a warning names both providers.
        """
        plugin = self.current_plugin
        if not (isinstance(codec, type) and issubclass(codec, Codec)):
            raise PluginError(f"register() takes a Codec subclass, not {codec!r}", plugin=plugin.name)
        name = getattr(codec, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(f"codec class {codec.__qualname__} has no 'name'", plugin=plugin.name)
        existing = self._codecs.get(name)
        holder = existing.plugin if existing is not None and existing.codec is not codec else None

        def duplicate() -> DuplicateCodecError:
            assert existing is not None
            return DuplicateCodecError(
                f"codec {name!r} is already registered by plugin {existing.plugin!r}"
                f"{_from(existing.distribution)}; pass replace=True to replace it",
                codec=name,
                plugin=plugin.name,
                distribution=plugin.distribution,
            )

        if self._settle("codec", name, holder, replace=replace, duplicate=duplicate):
            self._codecs[name] = CodecInfo(
                name, codec, plugin.name, plugin.distribution, plugin.distribution_version
            )

    # -- lookup ------------------------------------------------------------------------

    def get(self, name: str) -> type[Codec[Any]]:
        """The codec class registered as ``name``; the error lists the installed ones."""
        return self.info(name).codec

    def info(self, name: str) -> CodecInfo:
        """What is known of codec ``name`` (its class, version, plugin and distribution);
        an :class:`UnknownCodecError` naming the installed codecs if there is none."""
        try:
            return self._codecs[name]
        except KeyError:
            installed = ", ".join(sorted(self._codecs)) or "none"
            broken = "".join(f"; {problem}" for problem in self.broken_plugins)
            raise UnknownCodecError(
                f"no codec named {name!r} is installed ({did_you_mean(name, self._codecs)}"
                f"installed: {installed}){broken}",
                codec=name,
            ) from None

    def create(self, name: str, options: Mapping[str, Any] | None = None) -> Codec[Any]:
        """An instance of codec ``name`` with validated ``options``."""
        return self.get(name)(options)

    def __contains__(self, name: object) -> bool:
        return name in self._codecs

    def __iter__(self) -> Iterator[CodecInfo]:
        return iter(sorted(self._codecs.values(), key=lambda i: i.name))

    def __len__(self) -> int:
        return len(self._codecs)

    def names(self) -> list[str]:
        """The names of the registered codecs, sorted."""
        return sorted(self._codecs)


def _from(distribution: str | None) -> str:
    return f" (distribution {distribution!r})" if distribution else ""
