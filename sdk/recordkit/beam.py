"""Writing datasets with Apache Beam (``pip install 'recordkit[beam]'``).

``WriteDataset`` writes a PCollection of records (or a dict of splits) as a recordkit
dataset, with the local writer's encoder, shards, sha256, record indexes and manifest;
see :mod:`recordkit.write._beam` and the how-to "Write at scale with Beam".
"""

from __future__ import annotations

from recordkit.errors import MissingExtraError

try:
    import apache_beam  # noqa: F401  (the extra: checked here, used by the module below)
except ImportError as exc:
    raise MissingExtraError("apache-beam", "beam", purpose="recordkit.beam") from exc

from recordkit.write._beam import WriteDataset, salted_hash

__all__ = ["WriteDataset", "salted_hash"]
