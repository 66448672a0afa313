"""A Grain data source over recordkit splits, for JAX (``pip install 'recordkit[grain]'``).

``DataSource`` gives Grain random access to a split's records without TensorFlow;
``EpochSampler`` reads it (or a mixture's ``MixedDataSource``, from ``rk.mix(...).grain()``)
in recordkit's canonical epoch order, resumable with any number of hosts and workers; see
:mod:`recordkit.read._grain`, the how-to "JAX with Grain" and "Training runs: resume, grow, mix".
"""

from __future__ import annotations

from recordkit.errors import MissingExtraError

try:
    import grain  # noqa: F401  (the extra: checked here, used by the module below)
except ImportError as exc:
    raise MissingExtraError("grain", "grain", purpose="recordkit.grain") from exc

from recordkit.read._grain import DataSource
from recordkit.read._grain_epochs import EpochSampler, MixedDataSource

__all__ = ["DataSource", "EpochSampler", "MixedDataSource"]
