"""Adopting TFRecords that recordkit did not write.

A schema describes foreign records through each field's ``keys``, which say where the
codec's wire features are (see :class:`~recordkit.FieldSpec`):

* a key: ``{"": "image/encoded", "height": "image/height"}``;
* a list of keys, the columns of the feature's last dimension, for layouts that store
  them apart: ``{"": ["image/object/bbox/xmin", ".../ymin", ".../xmax", ".../ymax"]}``
  for boxes, ``{"shape": ["height", "width", "depth"]}`` for a raw array's shape, where
  a number is a column the records do not store (``["height", "width", 3]``);
* a number, for a feature the records do not store: ``{"channels": 3}``.

Fields may share a key they read as a column (an image's and a mask's ``height``).
Such schemas are for reading: the writer refuses them.

:func:`infer_schema` proposes such a schema by looking at a sample of records: each
key's kind and lengths, JPEG/PNG magic bytes, UTF-8 text, and the usual key names
(``image/encoded``, ``image/height``, ``image/object/bbox/xmin``, ``image_raw`` with
``height``/``width``/``depth``, or with ``height``/``width`` and a channel count its
byte length implies, ``label``). It is a proposal: read it, adjust it, and
keep it as a schema file next to the data.
"""

from __future__ import annotations

import dataclasses
import io
import math
import re
from pathlib import Path
from typing import Any

from recordkit.codec._wire import WireKind
from recordkit.dataset._manifest import Manifest
from recordkit.errors import DatasetError
from recordkit.format._example import decode_example
from recordkit.format._tfrecord import Compression, iter_tfrecords
from recordkit.read._open import Paths, dataset_root, expand_paths, guess_compression
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema

__all__ = ["infer_schema"]

_COORDS = ("xmin", "ymin", "xmax", "ymax")
_LABEL_HINT = re.compile(r"(^|[/_])(label|labels|class|category|category_id|target)$")
_TEXT_HINT = re.compile(r"(^|[/_])(text|name|names)$")
_RAW_HINT = re.compile(r"raw")
_IMAGE_CHANNELS = {"L": 1, "1": 1, "I": 1, "RGB": 3, "YCbCr": 3, "CMYK": 3, "RGBA": 4, "LA": 4}


_KEEP_VALUES = 64  # values of one key kept per record (for label names)
_KEEP_BYTES = 1 << 16  # bytes of a value kept (enough for an image header)


@dataclasses.dataclass
class _Key:
    """What the sampled records hold under one Example key."""

    key: str
    kinds: set[WireKind] = dataclasses.field(default_factory=set)
    #: number of values per sampled record (None: the record lacks the key)
    lengths: list[int | None] = dataclasses.field(default_factory=list)
    #: the first values per sampled record (bytes cut to _KEEP_BYTES; None: none)
    values: list[Any] = dataclasses.field(default_factory=list)
    #: the full size of each record's first bytes value
    sizes: list[int | None] = dataclasses.field(default_factory=list)
    low: float = math.inf
    high: float = -math.inf
    formats: set[str] = dataclasses.field(default_factory=set)
    empty_seen: bool = False

    @property
    def kind(self) -> WireKind | None:
        """The key's kind; empty Features (any kind) do not count."""
        kinds = set(self.kinds)
        if self.empty_seen and len(kinds) > 1:
            kinds.discard(WireKind.BYTES)
        return next(iter(kinds)) if len(kinds) == 1 else None

    @property
    def always(self) -> bool:
        return all(n is not None for n in self.lengths)

    @property
    def scalar(self) -> bool:
        return self.always and all(n == 1 for n in self.lengths)


def infer_schema(
    files: Paths,
    *,
    name: str = "inferred",
    max_records: int = 100,
    compression: str | None = None,
) -> Schema:
    """Propose a schema for TFRecord files recordkit did not write.

    :param files: a TFRecord file, a glob pattern, or a list of them.
    :param name: the proposed schema's name.
    :param max_records: how many records to inspect (from the first files on).
    :param compression: ``"GZIP"``, ``"ZLIB"`` or None (guessed from the suffix).

    The schema's fields say in their descriptions what they were inferred from; keys
    that no codec fits are listed in the schema's description. For a recordkit dataset
    (a folder with ``dataset.json``) there is nothing to infer: its schema is returned.
    """
    root = dataset_root(files)
    if root is not None:
        return Manifest.load(root).schema
    paths = expand_paths(files)
    comp = Compression.parse(compression) if compression is not None else guess_compression(paths)
    keys = _sample(paths, comp, max_records)
    if not keys:
        raise DatasetError(f"no records in {', '.join(str(p) for p in paths[:3])}")
    proposal = _Proposal(keys)
    proposal.boxes()
    proposal.encoded_images()
    proposal.raw_arrays()
    proposal.the_rest()
    notes = "".join(f"\n- {note}" for note in proposal.notes)
    description = (
        f"Proposed by recordkit.infer_schema from {proposal.records} records of {len(paths)} file(s)."
    )
    if notes:
        description += "\nKeys left out:" + notes
    return Schema(name=name, description=description, fields=proposal.fields)


def _sample(paths: list[Path], compression: Compression, limit: int) -> dict[str, _Key]:
    keys: dict[str, _Key] = {}
    count = 0
    for path in paths:
        for _, data in iter_tfrecords(path, compression):
            if count >= limit:
                break
            try:
                example = decode_example(data)
            except ValueError as exc:
                raise DatasetError(
                    f"record {count} is not a tf.train.Example: {exc}", shard=path.name
                ) from None
            for key in example:
                if key not in keys:
                    keys[key] = _Key(key, lengths=[None] * count, values=[None] * count, sizes=[None] * count)
            for key, stats in keys.items():
                if key in example:
                    _observe(stats, *example[key])
                else:
                    stats.lengths.append(None)
                    stats.values.append(None)
                    stats.sizes.append(None)
            count += 1
        if count >= limit:
            break
    # Example keys come in no particular order (a protobuf map): sort them, so that the
    # same files always give the same proposal.
    ordered = dict(sorted(keys.items()))
    ordered["\0count"] = _Key("\0count", lengths=[count])
    return ordered


def _observe(stats: _Key, kind: WireKind, values: Any) -> None:
    stats.lengths.append(len(values))
    if not len(values):
        stats.empty_seen = True  # an empty Feature reads as any kind
        stats.values.append(None)
        stats.sizes.append(None)
        return
    stats.kinds.add(kind)
    kept = list(values[:_KEEP_VALUES])
    if kind is WireKind.BYTES:
        stats.sizes.append(len(values[0]))
        kept = [value[:_KEEP_BYTES] for value in kept]
        stats.formats.update(_sniff(value) for value in kept[:4])
    else:
        stats.sizes.append(None)
        stats.low = min(stats.low, float(values.min()))
        stats.high = max(stats.high, float(values.max()))
    stats.values.append(kept)


def _sniff(data: bytes) -> str:
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data.startswith(b"fLaC"):
        return "flac"
    if data.startswith(b"OggS"):
        return "ogg"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "binary"
    return "text"


def _field_name(key: str, taken: dict[str, FieldSpec], fallback: str = "field") -> str:
    parts = [re.sub(r"[^A-Za-z0-9_.\-]", "_", p) for p in key.split("/") if p]
    parts = [p if re.match(r"^[A-Za-z_]", p) else f"_{p}" for p in parts] or [fallback]
    for size in range(1, len(parts) + 1):
        candidate = "_".join(parts[-size:])
        if candidate not in taken:
            return candidate
    suffix = 2
    while f"{parts[-1]}_{suffix}" in taken:
        suffix += 1
    return f"{parts[-1]}_{suffix}"


class _Proposal:
    """The fields proposed so far and the keys they use."""

    def __init__(self, keys: dict[str, _Key]) -> None:
        self.records = keys.pop("\0count").lengths[0] or 0
        self.keys = keys
        self.used: set[str] = set()
        self.fields: dict[str, FieldSpec] = {}
        self.notes: list[str] = []

    def _add(self, name: str, spec: FieldSpec, *used: str) -> None:
        self.fields[name] = spec
        self.used.update(used)

    def _int_scalar(self, *candidates: str) -> str | None:
        for key in candidates:
            stats = self.keys.get(key)
            if stats is not None and stats.kind is WireKind.INT64 and stats.scalar:
                return key
        return None

    # -- boxes: <prefix>xmin, ymin, xmax, ymax as float lists ------------------------

    def boxes(self) -> None:
        for key, stats in list(self.keys.items()):
            if not key.endswith("xmin") or stats.kind is not WireKind.FLOAT:
                continue
            prefix = key[: -len("xmin")]
            columns = [prefix + c for c in _COORDS]
            found = [self.keys.get(c) for c in columns]
            if any(f is None or f.kind not in (WireKind.FLOAT, None) for f in found):
                continue
            if any(f.lengths != stats.lengths for f in found if f is not None):
                continue
            low = min(f.low for f in found if f is not None)
            high = max(f.high for f in found if f is not None)
            normalized = not math.isfinite(high) or (low >= -1e-6 and high <= 1.0 + 1e-6)
            options: dict[str, Any] = {"format": "xyxy", "normalized": normalized}
            keys: dict[str, Any] = {"": columns}
            root = prefix.rstrip("/_")
            root = root.rsplit("/", 1)[0] if "/" in root else root
            label_key = self._box_labels(root, stats.lengths)
            used = list(columns)
            evidence = f"float lists {prefix}{{xmin,ymin,xmax,ymax}}"
            if label_key is not None:
                text_key = self._box_label_text(root, stats.lengths)
                options["labels"] = self._label_names(label_key, text_key)
                keys["labels"] = label_key
                used.append(label_key)
                evidence += f", class ids {label_key}"
                if text_key is not None:
                    used.append(text_key)
                    evidence += f" named by {text_key}"
            name = _field_name("objects" if label_key else "boxes", self.fields)
            unit = "normalized" if normalized else "pixel"
            spec = FieldSpec(
                codec="bbox", options=options, keys=keys, description=f"{evidence} ({unit} coordinates)"
            )
            self._add(name, spec, *used)

    def _box_labels(self, root: str, lengths: list[int | None]) -> str | None:
        for key, stats in self.keys.items():
            hinted = key.startswith(root) and stats.kind is WireKind.INT64 and _LABEL_HINT.search(key)
            if hinted and stats.lengths == lengths and key not in self.used:
                return key
        return None

    def _box_label_text(self, root: str, lengths: list[int | None]) -> str | None:
        for key, stats in self.keys.items():
            hinted = key.startswith(root) and stats.kind is WireKind.BYTES and _TEXT_HINT.search(key)
            if hinted and stats.lengths == lengths and key not in self.used:
                return key
        return None

    def _label_names(self, label_key: str, text_key: str | None) -> list[str]:
        """Class names by id: from the text key beside the ids where there is one."""
        high = self.keys[label_key].high
        count = int(high) + 1 if math.isfinite(high) and high >= 0 else 1
        names = [f"class_{i}" for i in range(count)]
        if text_key is not None:
            pairs = zip(self.keys[label_key].values, self.keys[text_key].values, strict=True)
            for ids, texts in pairs:
                for label, text in zip(ids or [], texts or [], strict=False):
                    try:
                        names[int(label)] = text.decode("utf-8")
                    except (UnicodeDecodeError, IndexError):
                        continue
        if len(set(names)) != len(names):  # the bbox codec needs distinct names
            names = [f"{name}_{i}" if names.count(name) > 1 else name for i, name in enumerate(names)]
        return names

    # -- encoded images: JPEG/PNG bytes with height and width keys --------------------

    def encoded_images(self) -> None:
        for key, stats in list(self.keys.items()):
            if key in self.used or stats.kind is not WireKind.BYTES or not stats.scalar:
                continue
            if not stats.formats or not stats.formats <= {"jpeg", "png"}:
                continue
            prefix = re.sub(r"[/_](encoded|bytes|data|jpeg|png)$", "", key)
            height = self._int_scalar(f"{prefix}/height", f"{prefix}_height", "height")
            width = self._int_scalar(f"{prefix}/width", f"{prefix}_width", "width")
            if height is None or width is None:
                self._headed_image(key, prefix, stats)
                continue
            channels_key = self._int_scalar(
                f"{prefix}/channels", f"{prefix}/depth", f"{prefix}_channels", "channels", "depth"
            )
            keys: dict[str, Any] = {"": key, "height": height, "width": width}
            options: dict[str, Any] = {"format": "keep"}
            if channels_key is not None:
                keys["channels"] = channels_key
            else:
                channels = {_channels(values[0]) for values in stats.values if values}
                if len(channels) != 1 or None in channels:
                    self.notes.append(f"{key}: images with differing or unknown channel counts {channels}")
                    self.used.add(key)
                    continue
                count = channels.pop()
                keys["channels"] = count
                options["channels"] = count
            name = _field_name(prefix, self.fields, "image")
            if name == key:
                del keys[""]
            used = [key, height, width] + ([channels_key] if channels_key else [])
            formats = "/".join(sorted(stats.formats)).upper()
            self._add(
                name,
                FieldSpec(codec="image", options=options, keys=keys, description=f"{formats} bytes in {key}"),
                *used,
            )

    def _headed_image(self, key: str, prefix: str, stats: _Key) -> None:
        """Encoded images with no height and width keys (as TFDS writes them): the image
        codec reads their shape from the image header (``sizes: header``)."""
        options: dict[str, Any] = {"format": "keep", "sizes": "header"}
        channels = {_channels(values[0]) for values in stats.values if values}
        if len(channels) == 1 and None not in channels:
            options["channels"] = channels.pop()
        name = _field_name(prefix, self.fields, "image")
        formats = "/".join(sorted(stats.formats)).upper()
        self._add(
            name,
            FieldSpec(
                codec="image",
                options=options,
                keys={} if name == key else {"": key},
                description=f"{formats} bytes in {key}, sizes read from the image header",
            ),
            key,
        )

    # -- raw arrays: bytes whose length is the product of dimension keys ----------------

    def raw_arrays(self) -> None:
        for key, stats in list(self.keys.items()):
            if key in self.used or stats.kind is not WireKind.BYTES or not stats.scalar:
                continue
            if "binary" not in stats.formats and not _RAW_HINT.search(key):
                continue
            found = self._raw_dims(key)
            if found is None:
                self._implicit_channels(key)
                continue
            dims, dtype = found
            self._add_raw(key, [*dims], dtype, f"raw {dtype} values in {key}, shaped by {', '.join(dims)}")

    def _add_raw(self, key: str, shape: list[str | int | float], dtype: str, description: str) -> None:
        """Propose a ``tensor`` field for ``key``, shaped by the keys (and constant
        dimensions) of ``shape``; fields share the dimension keys (an image and its mask)."""
        dims = [dim if isinstance(dim, int) else None for dim in shape]
        spec = FieldSpec(
            codec="tensor",
            options={"dtype": dtype, "shape": dims},
            keys={"": key, "shape": shape},
            description=description,
        )
        self._add(_field_name(re.sub(r"[/_]?raw$", "", key) or key, self.fields, "array"), spec, key)
        self.used.update(dim for dim in shape if isinstance(dim, str))

    def _implicit_channels(self, key: str) -> None:
        """Raw pixels whose channel count no key stores (the segmentation tutorial's
        ``image_raw`` beside ``height`` and ``width`` only): when the byte length is the
        same whole multiple of ``height x width`` in every record inspected, that multiple
        is the channel count, proposed as a constant dimension (``[height, width, 3]``).
        Otherwise no shape can be known, and the notes say what was seen."""
        height = self._int_scalar("height", "image/height", "rows")
        width = self._int_scalar("width", "image/width", "cols")
        if height is None or width is None:
            return
        sizes = [int(size or 0) for size in self.keys[key].sizes]
        heights, widths = self.keys[height].values, self.keys[width].values
        areas = [int(heights[i][0]) * int(widths[i][0]) for i in range(len(sizes))]
        ratios = {size // area for size, area in zip(sizes, areas, strict=True) if area > 0}
        channels = ratios.pop() if len(ratios) == 1 else 0
        if channels > 0 and all(size == area * channels for size, area in zip(sizes, areas, strict=True)):
            self._add_raw(
                key,
                [height, width, channels],
                "uint8",
                f"raw uint8 pixels in {key}, shaped by {height}, {width} and {channels} channels that no "
                f"key stores ({key} holds {height} x {width} x {channels} bytes in every record inspected)",
            )
            return
        pairs = list(zip(sizes, areas, strict=True))[:3]
        shown = ", ".join(f"{size} bytes for {area}" for size, area in pairs)
        self.notes.append(
            f"{key}: raw bytes beside {height} and {width}, but not the same whole number of bytes per "
            f"{height} x {width} in every record ({shown} ...), so no shape can be proposed"
        )
        self.used.add(key)

    def _raw_dims(self, key: str) -> tuple[list[str], str] | None:
        """The dimension keys and dtype that account for every sampled size of ``key``."""
        height = self._int_scalar("height", "image/height", "rows")
        width = self._int_scalar("width", "image/width", "cols")
        depth = self._int_scalar("depth", "channels", "image/depth", "image/channels")
        if height is None or width is None:
            return None
        sizes = self.keys[key].sizes
        candidates: list[list[str]] = (
            [[height, width, depth], [height, width]] if depth else [[height, width]]
        )
        for dims in candidates:
            products = [math.prod(int(self.keys[d].values[i][0]) for d in dims) for i in range(len(sizes))]
            for dtype, itemsize in (("uint8", 1), ("float32", 4)):
                if all(size == product * itemsize for size, product in zip(sizes, products, strict=True)):
                    return dims, dtype
        return None

    # -- everything else ----------------------------------------------------------------

    def the_rest(self) -> None:
        for key, stats in self.keys.items():
            base = key[: -len("/present")]
            if key in self.used or (key.endswith("/present") and base in self.keys and base not in self.used):
                continue  # a presence flag: it makes its field optional
            kind = stats.kind
            name = _field_name(key, self.fields)
            keys: dict[str, Any] = {} if name == key else {"": key}
            every = "in every record" if stats.always else "in some records"
            optional = f"{key}/present" in self.keys and all(n in (None, 1) for n in stats.lengths)
            sequence = not stats.scalar and not optional
            if optional:
                every = "when its presence flag is set"
                if name != key:
                    keys["present"] = f"{key}/present"
            if kind is None:
                self.notes.append(f"{key}: only empty values in the sample (kind unknown)")
            elif kind is WireKind.BYTES:
                if not stats.formats <= {"text"}:
                    what = "/".join(sorted(stats.formats - {"text"}))
                    self.notes.append(f"{key}: {what} bytes no built-in codec reads from these keys alone")
                    continue
                self._add(
                    name,
                    FieldSpec(
                        codec="text",
                        sequence=sequence,
                        optional=optional,
                        keys=keys,
                        description=f"UTF-8 text {every}",
                    ),
                    key,
                )
            elif (
                kind is WireKind.INT64
                and (stats.scalar or optional)
                and _LABEL_HINT.search(key)
                and stats.low >= 0
            ):
                count = int(stats.high) + 1
                self._add(
                    name,
                    FieldSpec(
                        codec="label",
                        options={"num_classes": count},
                        optional=optional,
                        keys=keys,
                        description=f"class ids 0..{count - 1} {every}",
                    ),
                    key,
                )
            else:
                dtype = "int64" if kind is WireKind.INT64 else "float32"
                what = "one value" if stats.scalar else "lists of values"
                self._add(
                    name,
                    FieldSpec(
                        codec="scalar",
                        options={"dtype": dtype},
                        sequence=sequence,
                        optional=optional,
                        keys=keys,
                        description=f"{dtype}: {what} {every}",
                    ),
                    key,
                )


def _channels(data: bytes) -> int | None:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            mode = image.mode
            if mode == "P":
                return 4 if "transparency" in image.info else 3
            return _IMAGE_CHANNELS.get(mode)
    except Exception:  # an unreadable header only means "unknown"
        return None
