"""fsspec filesystems for remote URLs, imported lazily, with errors naming the extra.

fsspec and its protocol clients (s3fs for ``s3://``, gcsfs for ``gs://``) are optional:
a user who only writes to local folders never imports them. A missing client raises
:class:`~recordkit.errors.MissingExtraError` naming the extra that installs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recordkit.errors import MissingExtraError

__all__ = ["filesystem", "split_protocol"]

#: The extra that installs each protocol's client (other protocols: fsspec's own, or
#: whatever the user installed; the error then names the package fsspec asked for).
_EXTRAS = {"s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"), "gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs")}


def split_protocol(url: str) -> tuple[str, str]:
    """``("s3", "bucket/key")`` for ``"s3://bucket/key"``."""
    protocol, _, rest = url.partition("://")
    return protocol.lower(), rest


def filesystem(protocol: str, storage_options: Mapping[str, Any]) -> Any:
    """The fsspec filesystem for ``protocol`` (cached by fsspec per options)."""
    package, extra = _EXTRAS.get(protocol, ("fsspec", protocol))
    try:
        import fsspec
    except ImportError as exc:
        # Unknown protocols need fsspec itself, which either cloud extra installs.
        raise MissingExtraError(
            "fsspec", extra if protocol in _EXTRAS else "s3,gcs", purpose=f"{protocol}:// paths"
        ) from exc
    try:
        return fsspec.filesystem(protocol, **dict(storage_options))
    except ImportError as exc:
        if protocol in _EXTRAS:
            raise MissingExtraError(package, extra, purpose=f"{protocol}:// paths") from exc
        raise
