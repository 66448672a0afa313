"""A codec's optional capability called by a command (``show``, ``stats``), with its
failures reported as recordkit errors that name the field and the codec.

A capability is the codec's code, often a plugin's: a recordkit error it raises gains
the field and codec; any other exception becomes a :class:`~recordkit.errors.PluginError`
saying which method failed and how (the command prints one line, not a traceback; the
original exception is chained for ``--debug``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from recordkit.errors import PluginError, RecordkitError
from recordkit.schema._bound import BoundField

__all__ = ["calling"]


@contextlib.contextmanager
def calling(field: BoundField, method: str) -> Iterator[None]:
    """Run the body, a call of ``field``'s codec's ``method``, as the module docs say."""
    try:
        yield
    except RecordkitError as exc:
        raise exc.with_context(field=field.name, codec=field.spec.codec) from exc.__cause__
    except Exception as exc:
        raise PluginError(
            f"the codec's {method}() failed: {type(exc).__name__}: {exc}",
            field=field.name,
            codec=field.spec.codec,
        ) from exc
