"""What the viewer shows, without the web server: a dataset opened once with
:func:`recordkit.open`, records reached by split and index only, and pictures drawn by
the same functions as ``recordkit show`` (:func:`~recordkit.tools._render.render_record`,
:func:`~recordkit.tools._render.caption_line`), so every codec that draws, captions or
sounds through its capabilities appears here too, plugins included.

Nothing here turns a request's words into a file path: a split must be one the manifest
names, a field one the schema names, an index a position inside the split. A record that
cannot be read (a corrupt shard) is shown as its error; the server keeps serving.
"""

from __future__ import annotations

import dataclasses
import io
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import soundfile
from PIL import Image

from recordkit.codec._capabilities import Audible, Drawable, Pictured
from recordkit.codec._plugins import default_registry
from recordkit.errors import RecordkitError
from recordkit.read._dataset import Dataset
from recordkit.read._open import bind_to_read
from recordkit.schema._bound import BoundField
from recordkit.tools._common import describe_error
from recordkit.tools._field_stats import FieldStats
from recordkit.tools._render import caption_line, render_record

__all__ = ["MAX_PAGE", "MAX_SIDE", "THUMB_SIDE", "Cell", "NotFoundError", "Viewer", "Wanted"]

#: Longest side of a full-size picture served (larger ones are downscaled on the server).
MAX_SIDE = 1024
#: Longest side of a grid thumbnail.
THUMB_SIDE = 256
#: Records on one grid page at most.
MAX_PAGE = 200
#: Records a filtered grid page examines at most before it offers to go on.
MAX_SCAN = 5_000
#: Drawn pictures kept in memory (thumbnails and full pictures).
_CACHED = 512


#: What a filtered grid shows: records holding a counter's key, or a summary's value in
#: a range (low, high).
Wanted = str | tuple[float, float]


class NotFoundError(Exception):
    """A split, field or index the dataset does not have (the server answers 404)."""


@dataclasses.dataclass
class Cell:
    """One record as the grid and the record page show it: its caption lines, or the
    error that kept it from being read."""

    index: int
    captions: list[str]
    error: str | None = None
    #: Per caption line, the shape and dtype of an array value ("" for other values).
    arrays: list[str] = dataclasses.field(default_factory=list)


def png(picture: Image.Image, side: int) -> bytes:
    """``picture`` as PNG bytes, downscaled to fit ``side`` pixels (never enlarged)."""
    picture = picture.copy()
    picture.thumbnail((side, side), Image.Resampling.BILINEAR, reducing_gap=2.0)
    out = io.BytesIO()
    picture.save(out, format="PNG", compress_level=1)  # served once, to this machine: speed over size
    return out.getvalue()


def wav(samples: np.ndarray, rate: int) -> bytes:
    """Decoded samples as a 16-bit WAV file."""
    out = io.BytesIO()
    soundfile.write(out, np.asarray(samples), rate, format="WAV", subtype="PCM_16")
    return out.getvalue()


class Viewer:
    """A dataset opened for viewing: per split, its records, drawn pictures and captions."""

    def __init__(self, dataset: Dataset, location: str, split: str | None = None) -> None:
        self.dataset = dataset
        self.location = location
        manifest = dataset.manifest
        self.splits: tuple[str, ...] = dataset.splits or ("train",)
        if split is not None and split not in self.splits:
            raise NotFoundError(f"no split {split!r} (the dataset has {', '.join(self.splits)})")
        #: The split a request that names none sees.
        self.default_split = split or self.splits[0]
        self.fields: list[BoundField] = (
            list(bind_to_read(manifest, default_registry()).fields) if manifest is not None else []
        )
        self._handles: dict[str, Dataset] = {}
        self._drawn: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self._lock = threading.Lock()

    # -- names from requests -------------------------------------------------------------------

    def split(self, name: str | None) -> str:
        """The split a request names (the first split when it names none)."""
        chosen = name or self.default_split
        if chosen not in self.splits:
            raise NotFoundError(f"no split {chosen!r}")
        return chosen

    def handle(self, split: str) -> Dataset:
        with self._lock:
            if split not in self._handles:
                self._handles[split] = self.dataset.split(split)
            return self._handles[split]

    def size(self, split: str) -> int:
        return len(self.handle(split))

    def field(self, name: str) -> BoundField:
        for field in self.fields:
            if field.name == name:
                return field
        raise NotFoundError(f"no field {name!r}")

    def index(self, split: str, index: int) -> int:
        if not 0 <= index < self.size(split):
            raise NotFoundError(f"split {split!r} has no record {index}")
        return index

    # -- records -------------------------------------------------------------------------------

    def records(self, split: str, indices: Sequence[int]) -> list[dict[str, Any] | str]:
        """The records at ``indices`` (read together through the index sidecars), each a
        record or, when it cannot be read, its error in one line."""
        handle = self.handle(split)
        try:
            return list(handle[list(indices)])
        except (RecordkitError, OSError):
            out: list[dict[str, Any] | str] = []
            for index in indices:  # one by one: only the unreadable ones show an error
                out.append(self.record(split, index))
            return out

    def record(self, split: str, index: int) -> dict[str, Any] | str:
        try:
            return dict(self.handle(split)[index])
        except (RecordkitError, OSError) as exc:
            return describe_error(exc)

    def cell(self, index: int, record: dict[str, Any] | str, *, every_field: bool = False) -> Cell:
        """Caption lines of ``record``: the fields not drawn on its picture (every field
        with ``every_field``), through the codecs' captions."""
        if isinstance(record, str):
            return Cell(index, [], record)
        shown = [f for f in self.fields if every_field or not _drawn_in_grid(f)]
        arrays = [_array(record.get(f.name)) for f in shown]
        try:
            return Cell(index, [caption_line(f, record.get(f.name)) for f in shown], arrays=arrays)
        except RecordkitError as exc:
            return Cell(index, [], describe_error(exc))

    # -- pictures and sounds ----------------------------------------------------------------

    def picture(self, split: str, index: int, *, overlays: bool, side: int) -> bytes:
        """Record ``index`` drawn by ``recordkit show``'s renderer: its pictures with (or
        without) what the drawing codecs draw on them, as PNG bytes at most ``side`` wide."""
        key = (split, index, overlays, side)
        with self._lock:
            if key in self._drawn:
                self._drawn.move_to_end(key)
                return self._drawn[key]
        record = self.record(split, self.index(split, index))
        if isinstance(record, str):
            raise RecordkitError(record)
        fields = [f for f in self.fields if isinstance(f.codec, Pictured) or (overlays and _drawn_in_grid(f))]
        data = png(render_record(fields, record).picture, side)
        with self._lock:
            self._drawn[key] = data
            while len(self._drawn) > _CACHED:
                self._drawn.popitem(last=False)
        return data

    def has_picture(self) -> bool:
        return any(isinstance(f.codec, (Pictured, Drawable)) for f in self.fields)

    def sounds(self) -> list[str]:
        return [f.name for f in self.fields if isinstance(f.codec, Audible) and not f.spec.sequence]

    def sound(self, split: str, index: int, name: str) -> tuple[np.ndarray, int]:
        field = self.field(name)
        codec = field.codec
        if not isinstance(codec, Audible):
            raise NotFoundError(f"field {name!r} holds no sound")
        record = self.record(split, self.index(split, index))
        if isinstance(record, str):
            raise RecordkitError(record)
        if record.get(name) is None:
            raise NotFoundError(f"record {index} holds no {name!r}")
        samples, rate = codec.sound(record[name])
        return np.asarray(samples), int(rate)

    def waveform(self, split: str, index: int, name: str) -> bytes:
        """The waveform and spectrogram ``recordkit show`` draws for sound field ``name``."""
        self.sound(split, index, name)  # checks the field and the record
        record = self.record(split, index)
        assert not isinstance(record, str)
        return png(render_record([self.field(name)], record).picture, MAX_SIDE)

    # -- filters -------------------------------------------------------------------------------

    def matches(
        self, record: dict[str, Any] | str, field: BoundField, statistic: str, wanted: Wanted
    ) -> bool:
        """Whether ``record`` holds what a bar of ``recordkit stats``'s ``statistic`` of
        ``field`` stands for: a key of a counter (a class "dog" of a label, a box class),
        or a value of a summary within a range (``(low, high)``: 5 boxes per record)."""
        if isinstance(record, str):
            return False
        stats = FieldStats(field)
        stats.add(record.get(field.name))
        if isinstance(wanted, str):
            counter = stats.counters.get(statistic)
            return counter is not None and counter.get(wanted, 0) > 0
        summary = stats.summaries.get(statistic)
        low, high = wanted
        return summary is not None and any(low <= value <= high for value in summary.sample)


def _array(value: Any) -> str:
    return f"shape {value.shape}, {value.dtype}" if isinstance(value, np.ndarray) else ""


def _drawn_in_grid(field: BoundField) -> bool:
    return isinstance(field.codec, (Pictured, Drawable))
