"""Which dataset a location holds, detected once: recordkit's, or a folder TFDS prepared.

:func:`find_dataset` is the one place that tells the two apart, for the readers and the
commands alike: a folder (or its ``dataset.json``) holding ``dataset.json`` is read
through it; a local folder holding TFDS's ``dataset_info.json`` and ``features.json``
(and no ``dataset.json``) through the manifest view :mod:`recordkit.dataset._tfds`
makes of it.
"""

from __future__ import annotations

from recordkit.dataset._manifest import MANIFEST_FILE, Manifest, read_manifest
from recordkit.dataset._tfds import is_tfds_folder, load_tfds
from recordkit.storage import Location

__all__ = ["find_dataset", "load_manifest"]


def find_dataset(where: Location) -> tuple[Location, Manifest] | None:
    """The dataset at ``where`` (its folder, or its ``dataset.json``): its folder and its
    manifest; None when ``where`` holds neither kind (TFRecord files, or nothing)."""
    root = where.parent if where.name == MANIFEST_FILE else where
    if root.join(MANIFEST_FILE).exists():
        return root, read_manifest(root)
    folder = root.local_path
    if folder is not None and is_tfds_folder(folder):
        return root, load_tfds(folder).manifest
    return None


def load_manifest(root: Location) -> Manifest:
    """The manifest of the dataset at ``root`` (see :func:`find_dataset`); a
    :class:`~recordkit.errors.ManifestError` saying what is there instead when it holds
    no dataset (nothing, a file, a folder without ``dataset.json``)."""
    found = find_dataset(root)
    return found[1] if found is not None else read_manifest(root)
