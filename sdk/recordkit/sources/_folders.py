"""Folders of media files: ``image_folder(root)`` and ``audio_folder(root, metadata=)``.

``image_folder``: one subfolder of ``root`` per class (``flowers/roses/*.jpg``); folders
nested inside a class folder belong to that class (``roses/garden/1.jpg`` is a rose).
Each record holds the image file (its bytes are stored as they are), the class name and
the file name relative to ``root``. Files that are not images (recognised by their
header, not their suffix), and files directly in ``root``, are skipped and listed in
:attr:`~recordkit.sources.Source.skipped`.

``audio_folder``: every audio file under ``root`` (by suffix), with an optional
metadata table (CSV or JSONL) keyed by file name: its ``file_name`` column holds each
file's name relative to ``root`` (or the table's folder, when it lives elsewhere), and
its other columns (a transcript, a label, a speaker id) become fields, named as the
table sources name them. Without a table, the audio's class folder gives a ``label``
when every file sits in one.

Both read only inside ``root``: a file that is a symlink to somewhere outside it, and a
metadata row whose ``file_name`` leaves the table's folder, are bad inputs (an
InputError naming the file or the line), unless ``allow_outside_root=True``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recordkit.errors import InputError
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.sources._base import OnBadInput, Skipped, Source, SourceItem, relative_name
from recordkit.sources._media import AUDIO_SUFFIXES, audio_field, is_image
from recordkit.sources._rows import field_names, read_rows
from recordkit.sources._tables import SAMPLE_ROWS, propose_fields

__all__ = ["FILE_NAME_COLUMN", "AudioFolderSource", "ImageFolderSource"]

#: The metadata table's column that names each audio file (as in Hugging Face's audiofolder).
FILE_NAME_COLUMN = "file_name"


def _files(root: Path) -> list[Path]:
    """Every file under ``root``, hidden ones (``.DS_Store``) aside, in sorted order."""
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def _check_root(root: Path) -> Path:
    if not root.is_dir():
        raise InputError("no such folder", file=str(root))
    return root


class _FolderSource(Source):
    """A source that lists the files under its ``root``."""

    root: Path

    def _outside(self, rel: str) -> InputError | None:
        """The error for a listed file that is a symlink leading out of ``root``."""
        try:
            self.input_path(self.root, rel, file=self.root / rel, entry=f"file {rel!r}")
        except InputError as exc:
            return exc
        return None


class ImageFolderSource(_FolderSource):
    """A folder with one subfolder of images per class (see the module docs).

    :param root: the folder holding the class folders.
    :param image_field: the name of the image field (also ``label_field``, ``file_field``).
    """

    kind = "image_folder"

    def __init__(
        self,
        root: str | Path,
        *,
        image_field: str = "image",
        label_field: str = "label",
        file_field: str = "file",
        on_error: OnBadInput = "raise",
        allow_outside_root: bool = False,
    ) -> None:
        super().__init__(on_error=on_error, allow_outside_root=allow_outside_root)
        self.root = _check_root(Path(root))
        self.names = (image_field, label_field, file_field)

    def classes(self) -> list[str]:
        """The class names: the subfolders of ``root``, sorted (a class's id is its index)."""
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def schema(self, name: str | None = None) -> Schema:
        image, label, file = self.names
        classes = self.classes()
        if not classes:
            raise InputError("has no class folders (one subfolder of images per class)", file=str(self.root))
        return Schema(
            name=name or self.root.name,
            fields={
                image: FieldSpec(
                    codec="image", options={"format": "keep"}, description="the image file, as it is"
                ),
                label: FieldSpec(codec="label", options={"names": classes}, description="the class folder"),
                file: FieldSpec(codec="text", description="the file name relative to the folder"),
            },
        )

    def scan(self) -> Iterator[SourceItem | Skipped | InputError]:
        image, label, file = self.names
        for path in _files(self.root):
            rel = relative_name(path, self.root)
            if path.parent == self.root:
                yield Skipped(str(path), "not in a class folder")
            elif (outside := self._outside(rel)) is not None:
                yield outside
            elif not is_image(path):
                yield Skipped(str(path), "not an image")
            else:
                klass = path.relative_to(self.root).parts[0]
                yield SourceItem(rel, {image: path, label: klass, file: rel})


class AudioFolderSource(_FolderSource):
    """Audio files under a folder, with an optional metadata table (see the module docs).

    :param root: the folder holding the audio files (nested folders allowed).
    :param metadata: a CSV or JSONL file with a ``file_name`` column; None: look for
        ``metadata.csv`` or ``metadata.jsonl`` in ``root``.
    """

    kind = "audio_folder"

    def __init__(
        self,
        root: str | Path,
        *,
        metadata: str | Path | None = None,
        audio_field: str = "audio",
        file_field: str = "file",
        on_error: OnBadInput = "raise",
        allow_outside_root: bool = False,
    ) -> None:
        super().__init__(on_error=on_error, allow_outside_root=allow_outside_root)
        self.root = _check_root(Path(root))
        if metadata is None:
            found = [self.root / n for n in ("metadata.csv", "metadata.jsonl") if (self.root / n).is_file()]
            metadata = found[0] if found else None
        self.metadata = Path(metadata) if metadata is not None else None
        if self.metadata is not None and not self.metadata.is_file():
            raise InputError("no such metadata file", file=str(self.metadata))
        self.names = (audio_field, file_field)

    def _audio_files(self) -> list[Path]:
        return [p for p in _files(self.root) if p.suffix.lower() in AUDIO_SUFFIXES]

    def _labels(self) -> list[str] | None:
        """Class folder names when there is no table and every file sits in one."""
        files = self._audio_files()
        if self.metadata is not None or not files or any(p.parent == self.root for p in files):
            return None
        return sorted({p.relative_to(self.root).parts[0] for p in files})

    def _table(self) -> tuple[dict[str, tuple[int, dict[str, Any]]], list[InputError]]:
        """The metadata rows by file name (relative to ``root``), and the bad rows."""
        assert self.metadata is not None
        rows: dict[str, tuple[int, dict[str, Any]]] = {}
        bad: list[InputError] = []
        base = self.metadata.parent
        for row in read_rows(self.metadata):
            if isinstance(row, InputError):
                bad.append(row)
                continue
            number, cells = row
            try:
                names = field_names(list(cells))
            except ValueError as exc:
                bad.append(InputError(str(exc), file=str(self.metadata), line=number))
                continue
            cells = {names[column]: value for column, value in cells.items()}
            name = cells.pop(FILE_NAME_COLUMN, None)
            if not isinstance(name, str) or not name:
                bad.append(InputError(f"no {FILE_NAME_COLUMN!r} value", file=str(self.metadata), line=number))
                continue
            try:
                checked = self.input_path(base, name, file=self.metadata, line=number, field=FILE_NAME_COLUMN)
            except InputError as exc:
                bad.append(exc)
                continue
            path = checked.resolve()
            try:
                key = relative_name(path, self.root.resolve())
            except ValueError:
                key = name
            if key in rows:
                bad.append(
                    InputError(
                        f"{name!r} is described twice (first on line {rows[key][0]})",
                        file=str(self.metadata),
                        line=number,
                    )
                )
                continue
            rows[key] = (number, cells)
        return rows, bad

    def schema(self, name: str | None = None) -> Schema:
        audio, file = self.names
        files = self._audio_files()
        if not files:
            raise InputError(
                f"holds no audio files ({', '.join(sorted(AUDIO_SUFFIXES))})", file=str(self.root)
            )
        fields: dict[str, FieldSpec] = {audio: audio_field(files[0]), file: FieldSpec(codec="text")}
        labels = self._labels()
        if labels is not None:
            fields["label"] = FieldSpec(codec="label", options={"names": labels})
        if self.metadata is not None:
            rows, _ = self._table()
            sample = [cells for _, cells in list(rows.values())[:SAMPLE_ROWS]]
            fields.update(propose_fields(sample, {}))
        return Schema(name=name or self.root.name, fields=fields)

    def scan(self) -> Iterator[SourceItem | Skipped | InputError]:
        audio, file = self.names
        rows: dict[str, tuple[int, dict[str, Any]]] = {}
        if self.metadata is not None:
            rows, bad = self._table()
            yield from bad
        labels = self._labels()
        seen: set[str] = set()
        for path in self._audio_files():
            rel = relative_name(path, self.root)
            seen.add(rel)
            outside = self._outside(rel)
            if outside is not None:
                yield outside
                continue
            record: dict[str, Any] = {audio: path, file: rel}
            if labels is not None:
                record["label"] = path.relative_to(self.root).parts[0]
            if self.metadata is not None:
                if rel not in rows:
                    yield InputError(
                        f"the metadata table has no row for {rel!r}",
                        file=str(self.metadata),
                        entry=f"file {rel!r}",
                    )
                    continue
                record.update(rows[rel][1])
            yield SourceItem(rel, record)
        for rel, (number, _) in rows.items():
            if rel not in seen:
                yield InputError(
                    f"no audio file {rel!r} under {self.root}", file=str(self.metadata), line=number
                )
