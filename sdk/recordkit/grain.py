"""A Grain data source over recordkit splits, for JAX (``pip install 'recordkit[grain]'``).

``DataSource`` gives Grain random access to a split's records without TensorFlow; see
:mod:`recordkit.read._grain` and the how-to "JAX with Grain".
"""

from __future__ import annotations

import importlib.util

from recordkit.errors import MissingExtraError

if importlib.util.find_spec("grain") is None:
    raise MissingExtraError("grain", "grain", purpose="recordkit.grain")

from recordkit.read._grain import DataSource

__all__ = ["DataSource"]
