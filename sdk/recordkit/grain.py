"""A Grain data source over recordkit splits, for JAX (``pip install 'recordkit[grain]'``).

``DataSource`` gives Grain random access to a split's records without TensorFlow; see
:mod:`recordkit.read._grain` and the how-to "JAX with Grain".
"""

from __future__ import annotations

from recordkit.errors import MissingExtraError

try:
    import grain  # noqa: F401  (the extra: checked here, used by the module below)
except ImportError as exc:
    raise MissingExtraError("grain", "grain", purpose="recordkit.grain") from exc

from recordkit.read._grain import DataSource

__all__ = ["DataSource"]
