"""Two guards for a tool that writes a new dataset from local inputs (``recordkit
ingest``, :func:`~recordkit.tools.convert_dataset`), so that it cannot destroy them.

* :func:`refuse_overlap`: the dataset folder must not be an input, hold one, or lie
  inside a folder that is one. Written there, the dataset would be read back as input
  (a folder source lists every file under its root), would leave ``dataset.json``
  inside a folder another reader owns (a TFDS folder holding one is read as a recordkit
  dataset), and an overwrite (which replaces the whole folder) would delete the inputs.
  Checked on resolved paths (``..`` and symlinks followed), before anything is written.
* :class:`FreshOutput`: a write into a place that holds no dataset yet either finishes
  or leaves nothing behind: :meth:`FreshOutput.undo` removes what the failed write made
  (the folder it created, or the files it added to one that was there), so the same
  command runs again as it was. The library's writer keeps an interrupted write's
  complete shards for ``resume=True``; a tool that owns the whole write undoes it.
"""

from __future__ import annotations

from pathlib import Path

from recordkit.dataset._manifest import MANIFEST_FILE
from recordkit.errors import DatasetError, DatasetLockedError
from recordkit.storage import Location
from recordkit.write._lock import DatasetLock

__all__ = ["FreshOutput", "overlap", "refuse_overlap"]


def overlap(out: Path, input_path: Path) -> str | None:
    """How the folder ``out`` overlaps the input ``input_path`` (both resolved): ``"is"``,
    ``"holds"`` (``input_path`` is inside ``out``), ``"is inside"``, or None."""
    written, read = out.resolve(), input_path.resolve()
    if written == read:
        return "is"
    if written in read.parents:
        return "holds"
    if read in written.parents:
        return "is inside"
    return None


def refuse_overlap(out: Location, inputs: dict[str, Path]) -> None:
    """DatasetError naming ``out`` and the input, when the local dataset folder ``out``
    is, holds, or lies inside one of ``inputs`` (named by what they are: ``"INPUT"``,
    ``"images_dir"`` ...); a remote ``out`` overlaps no local input."""
    folder = out.local_path
    if folder is None:
        return
    for what, path in inputs.items():
        how = overlap(folder, path)
        if how is not None:
            raise DatasetError(
                f"the dataset would be written where it is read from: it {how} {what} ({path}); "
                "writing there would read the dataset back as input, leave its files among the "
                "inputs, and an overwrite would delete them; choose a folder outside the inputs",
                file=str(folder),
            )


class FreshOutput:
    """What was at a write's destination before a fresh write began (see the module
    docs); :meth:`undo` removes what the write added."""

    def __init__(self, where: Location) -> None:
        self.where = where
        self.existed = where.exists()
        self.before = set(where.list())

    @classmethod
    def at(cls, where: Location) -> FreshOutput | None:
        """The guard of a write to ``where``, or None when a dataset is there already
        (appending to it or resuming it: the writer keeps what it holds)."""
        return None if where.join(MANIFEST_FILE).exists() else cls(where)

    def undo(self) -> None:
        """Remove what the failed write made: the folder if it created it, else the
        files it added. Locally under the dataset's lock: nothing is removed while
        another writer holds it (that writer's files are not ours to remove)."""
        folder = self.where.local_path
        if folder is None:  # an object store: no lock to take
            self.where.remove_files(sorted(set(self.where.list()) - self.before))
            return
        if not folder.is_dir():
            return
        try:
            lock = DatasetLock(folder)
        except DatasetLockedError:
            return
        try:
            added = sorted(set(self.where.list()) - self.before)
            self.where.remove_files(added)
        finally:
            lock.release()
        if not self.existed:
            self.where.remove_tree()
