"""The Beam writer's dataset folder, local or remote (:class:`Folder`): every file
operation of :mod:`recordkit.write._beam`, through :mod:`recordkit.storage`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from recordkit.storage import Location, StorageOptions, location
from recordkit.write._lock import DatasetLock

__all__ = ["Folder"]


class Folder:
    """The dataset's folder, local or remote: every file operation of the Beam writer,
    through :mod:`recordkit.storage`. Pickled into the steps as its URL and storage
    options (a :class:`~recordkit.storage.Location` is made where it is used)."""

    def __init__(self, url: str, storage_options: StorageOptions | None) -> None:
        self.url = url
        self.storage_options = dict(storage_options or {})

    def at(self, name: str = "") -> Location:
        root = location(self.url, self.storage_options)
        return root.join(*name.split("/")) if name else root

    def exists(self, name: str) -> bool:
        return self.at(name).exists()

    def size(self, name: str) -> int | None:
        try:
            return self.at(name).size()
        except FileNotFoundError:
            return None

    def write_bytes(self, name: str, data: bytes) -> None:
        """A whole file at once: locally atomic (temp name, rename), remotely one PUT."""
        self.at(name).write_bytes(data)

    def move(self, source: str, target: str) -> None:
        self.at(source).move_to(self.at(target))

    def remove_tree(self, name: str) -> None:
        self.at(name).remove_tree()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Locally, the local writers' lock (:mod:`recordkit.write._lock`), so that no
        local writer changes the folder meanwhile; object stores have no lock."""
        folder = self.at().local_path
        if folder is None:
            yield
            return
        with DatasetLock(folder):
            yield
