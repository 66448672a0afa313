"""A codec's TensorFlow decode as source code: what ``recordkit codegen`` copies into a
standalone parser module (see :meth:`recordkit.Codec.decode_tf_source`).

Part of the codec contract, so codecs can declare it without importing the code
generator. A codec writes its decode once, as module-level functions, and uses them
twice: its ``decode_tf`` calls the :class:`DecodeSource` (``source(wire)``), and the
generator copies the very same functions into generated modules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["DecodeSource", "decode_as_parsed"]


@dataclasses.dataclass(frozen=True)
class DecodeSource:
    """A codec's batched TensorFlow decode, as code a generated module can carry.

    :param function: a module-level function ``function(wire, **constants)`` that
        returns what the codec's ``decode_tf(wire)`` returns. It may use only
        TensorFlow (``import tensorflow as tf`` inside it, or the module-level name
        ``tf``), the Python standard library, its arguments and ``helpers``.
    :param constants: the keyword arguments that bake in the field's options; plain
        literals only (str, bytes, int, float, bool, None, and tuples, lists and dicts
        of them).
    :param helpers: other module-level functions ``function`` calls, by their names.

    Calling it runs the decode in the running process: ``source(wire)`` is
    ``function(wire, **constants)``, so a codec's ``decode_tf`` can be
    ``return self.decode_tf_source()(wire)`` and the two can never differ.
    """

    function: Callable[..., Any]
    constants: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    helpers: tuple[Callable[..., Any], ...] = ()

    def __call__(self, wire: Mapping[str, Any], **extra: Any) -> Any:
        """Run the decode on a batch: ``function(wire, **constants, **extra)``.

        ``extra`` are keyword arguments the runtime passes and generated code leaves at
        their defaults (the image codec's ``pad=True`` for ``decode_tf_padded``).
        """
        return self.function(wire, **self.constants, **extra)


def decode_as_parsed(wire: Mapping[str, Any], names: list[str]) -> Any:
    """The decode a codec gets when it writes none: its values as ``tf.io.parse_example``
    gives them. The one wire feature's tensor (dense ``[B, *shape]``, or ragged
    ``[B, (n), *inner]`` for a variable shape), or a dict of them by feature name when the
    wire spec has several. Generated parser modules carry a copy of it."""
    if len(names) == 1:
        return wire[names[0]]
    return {name: wire[name] for name in names}
