"""The hooks a recordkit plugin can implement; each docstring is that hook's reference.

A plugin is a module (or object) exposed under the ``recordkit`` entry-point group::

    # pyproject.toml of your distribution
    [project.entry-points.recordkit]
    keypoints = "recordkit_keypoints"

and implements hooks with the :data:`hookimpl` marker::

    import recordkit as rk

    @rk.hookimpl
    def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
        registry.register(KeypointsCodec)

recordkit's own codecs are registered exactly this way, through recordkit's own entry
points. A plugin can also add sources (what ``recordkit ingest KIND`` reads) with
:func:`recordkit_register_sources`, as recordkit's own sources are added.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import pluggy

__all__ = [
    "PROJECT_NAME",
    "CodecRegistrar",
    "SourceRegistrar",
    "hookimpl",
    "hookspec",
    "recordkit_register_codecs",
    "recordkit_register_sources",
]

#: The pluggy project name, which is also the entry-point group plugins are found in.
PROJECT_NAME = "recordkit"

#: Marks a function of this module as a hook specification (recordkit's own use).
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
#: Marks a function of a plugin as the implementation of a recordkit hook.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class CodecRegistrar(Protocol):
    """What :func:`recordkit_register_codecs` is given: the one call a plugin makes,
    ``register``, on a :class:`recordkit.CodecRegistry` (``codec`` is a
    :class:`recordkit.Codec` subclass). A protocol, as for sources, so that this module,
    which the codec layer loads plugins by, needs nothing of that layer."""

    def register(self, codec: type[Any], *, replace: bool = False) -> None:
        """Register ``codec`` under its name; ``replace=True`` to replace a codec of that name."""


# --8<-- [start:recordkit_register_codecs]
@hookspec
def recordkit_register_codecs(registry: CodecRegistrar) -> None:
    """Register the plugin's codec classes with ``registry``.

    Called once per plugin when plugins are loaded, never while records are written or
    read. Call ``registry.register(CodecClass)`` for each codec. A codec name that
    another plugin registers too is refused with
    :class:`~recordkit.errors.DuplicateCodecError`, unless one of the two calls says
    ``registry.register(CodecClass, replace=True)``: that codec then wins, whichever
    plugin loads first, and a warning names both.

    A registered codec takes part everywhere a built-in one does: writing and reading,
    ``recordkit codegen`` (through :meth:`~recordkit.Codec.decode_tf_source`) and
    :func:`~recordkit.infer_schema`, which asks every registered codec to adopt the keys
    of foreign TFRecords (through :meth:`~recordkit.Codec.adopt`).

    :param registry: the registry being filled; it knows which plugin is calling, so
        ``recordkit plugins`` can show where each codec came from.
    """


# --8<-- [end:recordkit_register_codecs]


class SourceRegistrar(Protocol):
    """What :func:`recordkit_register_sources` is given: a
    :class:`recordkit.sources.SourceRegistry`."""

    def register(self, kind: str, factory: Callable[..., Any], *, replace: bool = False) -> None:
        """Register ``factory`` as source ``kind``; ``replace=True`` to replace one of that kind."""


# --8<-- [start:recordkit_register_sources]
@hookspec
def recordkit_register_sources(registry: SourceRegistrar) -> None:
    """Register the plugin's sources (readers of existing collections) with ``registry``.

    Called once per plugin when the sources are first needed (``recordkit ingest``,
    ``recordkit schema infer --source``, ``recordkit plugins``,
    :func:`recordkit.sources.default_sources`), never while records are written. Call
    ``registry.register(kind, factory)`` for each source: ``factory(input, **options)``
    returns a :class:`recordkit.sources.Source` (a subclass that implements ``schema()``
    and ``scan()``); ``input`` is the path the user gives (``recordkit ingest KIND INPUT
    OUT``) and ``options`` come from ``--opt NAME=VALUE``. The first line of the
    factory's docstring is the summary ``recordkit plugins`` shows.

    recordkit's own sources (``image_folder``, ``coco`` ...) are registered by this very
    hook, through recordkit's ``sources`` entry point. A kind that another plugin
    registers too is refused with :class:`~recordkit.errors.PluginError`, unless one of
    the two calls says ``registry.register(kind, factory, replace=True)``: that source
    then wins, whichever plugin loads first, and a warning names both.

    :param registry: the registry being filled; it knows which plugin is calling, so
        ``recordkit plugins`` can show where each source came from.
    """


# --8<-- [end:recordkit_register_sources]
