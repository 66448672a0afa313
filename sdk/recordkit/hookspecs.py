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
points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from recordkit.codec._registry import CodecRegistry

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec", "recordkit_register_codecs"]

#: The pluggy project name, which is also the entry-point group plugins are found in.
PROJECT_NAME = "recordkit"

#: Marks a function of this module as a hook specification (recordkit's own use).
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
#: Marks a function of a plugin as the implementation of a recordkit hook.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# --8<-- [start:recordkit_register_codecs]
@hookspec
def recordkit_register_codecs(registry: CodecRegistry) -> None:
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
