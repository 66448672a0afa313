"""A remote writer's commits: every save of ``dataset.json`` on an object store is
conditional on the version this writer read or last wrote.

A local writer holds the folder's lock (:mod:`recordkit.write._lock`), so no other
writer changes the folder meanwhile. An object store has no lock: two writers that read
the same ``dataset.json`` would each replace it, each report success, and the later
one's manifest would drop what the earlier one committed. :class:`RemoteManifest`
reads the manifest with its version and writes each new one only if the stored one is
still that version (:func:`recordkit.storage.write_if_version`: S3's conditional PUT,
GCS's generation; see there what each store enforces). A writer that finds it replaced
fails with :class:`~recordkit.errors.ConcurrentWriteError`, and never saves again: the
other writer's commit stands, and no writer reports success for records the dataset
does not list.
"""

from __future__ import annotations

from recordkit.dataset._manifest import MANIFEST_FILE, Manifest
from recordkit.errors import ConcurrentWriteError, ManifestError
from recordkit.storage import Location, VersionConflictError, read_versioned, write_if_version

__all__ = ["RemoteManifest"]

#: What the error tells a local or Beam writer to do.
WRITER_ADVICE = (
    "run one writer per dataset at a time: once the other writer has finished, write these "
    "records again (resume=True finishes a split that dataset.json lists as unfinished; "
    "append=True adds to a finished one)"
)


class RemoteManifest:
    """The ``dataset.json`` of the remote dataset at ``root``, as one writer saw it last."""

    def __init__(self, root: Location, *, advice: str = WRITER_ADVICE) -> None:
        self.file = root.join(MANIFEST_FILE)
        self._advice = advice
        #: The version read or written last (None: there was no manifest).
        self.version: str | None = None
        #: Set once a save found another writer's manifest: this writer saves no more.
        self.lost = False

    @classmethod
    def at(cls, root: Location, *, advice: str = WRITER_ADVICE) -> RemoteManifest | None:
        """The guard of the manifest of the remote dataset at ``root``; None for a local
        folder, whose writers the folder's lock keeps apart instead."""
        return cls(root, advice=advice) if root.local_path is None else None

    def load(self) -> Manifest | None:
        """The manifest now stored (None when there is none), remembering its version."""
        try:
            got = read_versioned(self.file)
        except VersionConflictError:
            raise self._error("kept being replaced while it was read") from None
        except OSError as exc:
            raise ManifestError(f"cannot be read: {exc.strerror or exc}", file=str(self.file)) from None
        if got is None:
            self.version = None
            return None
        data, self.version = got
        return Manifest._parse(data, str(self.file), self.file.parent)

    def save(self, manifest: Manifest) -> None:
        """Replace the stored manifest by ``manifest`` if it is still the one this writer
        read or wrote last; else :class:`ConcurrentWriteError`, nothing written."""
        if self.lost:
            raise self._error("was replaced by another writer")
        manifest.save_shard_tables(self.file.parent)  # before the manifest that lists them
        data = manifest.to_json().encode("utf-8")  # stamped with its format, as Manifest.save
        try:
            self.version = write_if_version(self.file, data, self.version)
        except VersionConflictError as exc:
            # Even when the stored bytes equal this writer's (a PUT whose answer was lost,
            # retried by the client, would find them): another writer may have saved the
            # same manifest (two appenders opening one split in the same second), and
            # both going on would write the same shard names. So this writer stops.
            self.lost = True
            raise self._error(f"{exc.found} by another writer") from None

    def _error(self, what: str) -> ConcurrentWriteError:
        return ConcurrentWriteError(
            f"{MANIFEST_FILE} {what} since this writer read it; nothing this writer wrote after its "
            f"last commit is in the dataset; {self._advice}",
            file=str(self.file.parent),
        )
