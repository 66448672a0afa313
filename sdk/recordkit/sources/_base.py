"""What every source is: records out, a proposed schema, and a report of bad inputs.

A :class:`Source` reads a collection that exists before recordkit (a folder of photos,
COCO's JSON, a VOC tree, a CSV manifest) and yields one record per item: a dict of
field name to value, ready for :func:`recordkit.write_dataset`. Values are file paths
or bytes as found on disk, never decoded and re-encoded pixels, so a JPEG is stored as
the very bytes of the file (with the image codec's ``format: keep``).

Bad inputs (a missing image, a box outside its image, a broken XML file, a CSV row
short of a column) are :class:`~recordkit.errors.InputError`\\ s that name the file and
the line or entry. With ``on_error="raise"`` (the default) the first one stops the
iteration; with ``"skip"`` the item is left out and listed in :attr:`Source.skipped`,
with the items a source passes over on purpose (a stray ``notes.txt`` in a folder of
photos).

Every file a source reads on behalf of its input (an image a COCO JSON names, a path in
a CSV column) must lie inside the root the user named; :meth:`Source.input_path` is the
one rule (:mod:`recordkit.sources._paths`), for plugin sources too. A name that leaves
the root is a bad input like any other, unless the source was made with
``allow_outside_root=True``.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

from recordkit.errors import InputError
from recordkit.schema._schema import Schema
from recordkit.sources._paths import resolve_inside

__all__ = ["OnBadInput", "Skipped", "Source", "SourceItem", "relative_name"]

logger = logging.getLogger("recordkit")

#: What a source does with a bad input: stop with an InputError, or leave it out.
OnBadInput = Literal["raise", "skip"]


@dataclasses.dataclass(frozen=True)
class SourceItem:
    """One record of a source and its key (a relative file name, an image id ...): the
    key names the record in errors and decides its split under ``--split-ratio``."""

    key: str
    record: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Skipped:
    """An input a source left out: where it is and why."""

    file: str
    reason: str
    line: int | None = None
    entry: str | None = None
    #: The field or column that was wrong, when one was.
    field: str | None = None

    def __str__(self) -> str:
        where = self.file + (f", line {self.line}" if self.line is not None else "")
        where += f", {self.entry}" if self.entry is not None else ""
        where += f", field {self.field!r}" if self.field is not None else ""
        return f"{where}: {self.reason}"

    @classmethod
    def of(cls, error: InputError) -> Skipped:
        """The skip of a bad input, from its error."""
        context = error.context
        return cls(context.file or "?", error.reason, context.line, context.entry, context.field)


class Source(abc.ABC):
    """A collection of inputs that yields records and proposes their schema.

    Iterate it for the records (dicts); :meth:`items` gives them with their keys.
    Subclasses (the built-in sources and plugins' alike) implement two public methods,
    :meth:`schema` and :meth:`scan`; the base class applies ``on_error`` to what
    :meth:`scan` yields, and :meth:`input_path` is the containment rule for the file
    names an input gives.

    :param on_error: ``"raise"``: the first bad input raises InputError naming its file
        and line or entry; ``"skip"``: it is left out and listed in :attr:`skipped`.
    :param allow_outside_root: follow file names that leave the source's root (absolute
        paths, ``..``, symlinks to elsewhere); by default they are bad inputs.
    """

    #: The name the source is registered under (``recordkit ingest KIND``).
    kind: ClassVar[str] = ""

    def __init__(self, *, on_error: OnBadInput = "raise", allow_outside_root: bool = False) -> None:
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
        self.on_error: OnBadInput = on_error
        self.allow_outside_root = bool(allow_outside_root)
        #: What the last iteration left out (bad inputs under ``"skip"``, and inputs that
        #: are not items, such as a text file among photos), in input order.
        self.skipped: list[Skipped] = []

    @abc.abstractmethod
    def schema(self, name: str | None = None) -> Schema:
        """The schema this source proposes for its records (a new object on every call:
        change it with ``schema.model_copy(update=...)``, or dump it to YAML with
        ``schema.dump("schema.yaml")``, edit the file and load it back)."""

    @abc.abstractmethod
    def scan(self) -> Iterator[SourceItem | Skipped | InputError]:
        """Every input in order, as it is: a :class:`SourceItem` per record, a bad input
        as its :class:`~recordkit.errors.InputError` (yielded, not raised, so that
        ``on_error="skip"`` can go on), an input passed over on purpose as a
        :class:`Skipped`. What a source implements; users iterate the source or call
        :meth:`items`, which apply ``on_error``."""

    def input_path(
        self,
        root: str | Path,
        name: object,
        *,
        file: str | Path,
        line: int | None = None,
        entry: str | None = None,
        field: str | None = None,
    ) -> Path:
        """``root / name`` for a file name an input gives, checked to stay inside ``root``
        (unless ``allow_outside_root``); else an InputError naming the input ``file``,
        its ``line`` or ``entry``, the ``field`` and the path. Nothing of a refused file
        is read. Whether the file exists is for the caller to ask."""
        try:
            return resolve_inside(Path(root), name, allow_outside_root=self.allow_outside_root)
        except ValueError as exc:
            raise InputError(str(exc), file=str(file), line=line, entry=entry, field=field) from None

    def items(self) -> Iterator[SourceItem]:
        """The records with their keys; bad inputs handled as ``on_error`` says."""
        self.skipped = []
        for item in self.scan():
            if isinstance(item, InputError):
                if self.on_error == "raise":
                    raise item
                item = Skipped.of(item)
            if isinstance(item, Skipped):
                logger.info("recordkit: %s source skipped %s", self.kind, item)
                self.skipped.append(item)
                continue
            yield item

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (item.record for item in self.items())


def relative_name(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators (a record's file name)."""
    return path.relative_to(root).as_posix()
