"""A folder that TensorFlow Datasets prepared, seen as a recordkit dataset, as it is.

TFDS writes a dataset as ``NAME-SPLIT.tfrecord-XXXXX-of-YYYYY`` shards beside
``dataset_info.json`` (splits and per-shard record counts) and ``features.json`` (the
``FeaturesDict`` that wrote every Example). :func:`load_tfds` reads both and gives a
:class:`TfdsDataset`: a recordkit :class:`~recordkit.Schema` whose fields map TFDS's
Example keys onto codecs (``FieldSpec.keys``), and a :class:`~recordkit.dataset._manifest.Manifest`
view of the splits and shards. Nothing is copied or rewritten; readers and the CLI
read the shards where they are.

What maps to what (a nested ``FeaturesDict`` key ``a/b`` becomes the field ``a.b``):

* ``Image`` -> ``image`` (encoding, channels and a fixed size from its shape, sizes read
  from the image header: TFDS stores no height or width);
* ``ClassLabel`` -> ``label`` with the names of its ``.labels.txt`` file;
* ``Text`` -> ``text``;
* ``Audio`` (samples stored as a list of numbers) -> ``audio`` with its sample rate and
  channels, ``stored: int_samples`` (or ``float_samples``); a ``scalar`` list when TFDS
  recorded no sample rate; audio stored as files (``lazy_decode``) is left out;
* ``BBoxFeature`` -> ``bbox`` (``yxyx``, normalized), with the ``ClassLabel`` beside it in
  the same ``Sequence`` as its labels;
* ``Tensor`` of rank 0 or 1 stored as numbers -> ``scalar`` (a list for rank 1); of rank
  2 and more (or rank 1 inside a ``Sequence``) -> ``tensor``, ``stored: numbers``;
* ``Sequence`` -> the fields of its feature, each a sequence.

Anything else is reported by its class name in :attr:`TfdsDataset.skipped` and left
out, never guessed.

Both JSON files are untrusted input: every value is type-checked where it is read
(:mod:`recordkit.dataset._tfds_json`), and a malformed one is a
:class:`~recordkit.errors.DatasetError` naming the file and the key; feature names must
be field names; declared sizes (shard counts, shapes, class counts) are bounded before
anything is made from them, and shard file names must stay in the folder
(:mod:`recordkit.dataset._tfds_splits`). ArrayRecord datasets are refused. Splits that older TFDS versions
recorded without ``shardLengths`` get their shards' record counts by a walk of the
record headers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic

from recordkit._version import __version__
from recordkit.dataset._format import format_for
from recordkit.dataset._manifest import Manifest, SplitInfo
from recordkit.dataset._tfds_json import TfdsJson
from recordkit.dataset._tfds_splits import tfds_split
from recordkit.errors import DatasetError
from recordkit.schema._card import DatasetCard
from recordkit.schema._fields import FieldSpec, field_name_problem
from recordkit.schema._schema import Schema

__all__ = [
    "TFDS_FEATURES",
    "TFDS_INFO",
    "TfdsDataset",
    "is_tfds_folder",
    "load_tfds",
    "open_tfds",
]

TFDS_INFO = "dataset_info.json"
TFDS_FEATURES = "features.json"

_SCALAR_DTYPES = {
    "int64": "int64",
    "int32": "int32",
    "float32": "float32",
    "float64": "float64",
    "bool": "bool",
}
# TFDS stores ints of every width as int64 and floats as float (float32) lists.
_WIRE_DTYPES = {
    "int8": "int64", "int16": "int64", "int32": "int64", "int64": "int64", "uint8": "int64",
    "uint16": "int64", "uint32": "int64", "bool": "int64", "float16": "float32", "float32": "float32",
    "float64": "float32",
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class TfdsDataset:
    """A TFDS-prepared folder: its schema, its shards, and what could not be mapped."""

    root: Path
    name: str
    version: str
    schema: Schema
    manifest: Manifest
    #: One line per feature left out: its key and its TFDS class name.
    skipped: tuple[str, ...]


def is_tfds_folder(path: str | Path) -> bool:
    """True when ``path`` is a folder holding ``dataset_info.json`` and ``features.json``."""
    folder = Path(path)
    return folder.is_dir() and (folder / TFDS_INFO).is_file() and (folder / TFDS_FEATURES).is_file()


def load_tfds(root: str | Path) -> TfdsDataset:
    """Read a TFDS-prepared folder (see the module docs); DatasetError when it is not one,
    when its JSON files are malformed (naming the file and the key), when its shards are
    not TFRecord, or when a listed shard is missing."""
    root = Path(root)
    info = TfdsJson(root / TFDS_INFO)
    features = TfdsJson(root / TFDS_FEATURES)
    name = info.text(info.data.get("name"), "name") or root.parent.name
    version = info.text(info.data.get("version"), "version") or "1.0.0"
    file_format = info.text(info.data.get("fileFormat"), "fileFormat") or "tfrecord"
    if file_format != "tfrecord":
        raise DatasetError(
            f"{root}: TFDS wrote this dataset as {file_format} shards; recordkit reads TFRecord shards only "
            "(prepare it again with file_format='tfrecord', or read it with tfds)"
        )
    mapper = _Mapper(root, features)
    mapper.feature(features.data, "", in_sequence=False)
    if not mapper.fields:
        raise DatasetError(
            f"{root}: no feature of this TFDS dataset maps onto a recordkit codec: {mapper.skipped}"
        )
    schema = Schema(
        name=name,
        version=version,
        description=f"TFDS dataset {name} {version}, read in place",
        fields=mapper.fields,
    )
    splits: dict[str, SplitInfo] = {}
    for i, entry in enumerate(info.items(info.data.get("splits", []), "splits")):
        split, shards = tfds_split(
            info, f"splits[{i}]", info.obj(entry, f"splits[{i}]"), root, name, file_format
        )
        if split in splits:
            raise info.error(f"splits[{i}].name", f"split {split!r} is listed twice")
        splits[split] = shards
    card = tfds_card(info)
    manifest = Manifest(
        format=format_for(field_groups=False, card=card is not None),
        recordkit_version=__version__,
        schema=schema,
        fingerprint="",
        codecs={},
        splits=splits,
        card=card,
    )
    return TfdsDataset(root, name, version, schema, manifest, tuple(mapper.skipped))


def tfds_card(info: TfdsJson) -> DatasetCard | None:
    """The card of a TFDS folder from its ``dataset_info.json``: its ``citation``, its
    homepage (``location.urls[0]``) and its license (``redistributionInfo.license``).

    TFDS keeps free text where a card keeps an SPDX expression and BibTeX: a license
    or citation not shaped as such goes into the card's description, word for word."""
    citation = info.text(info.data.get("citation"), "citation").strip()
    urls = info.items(
        info.obj(info.data.get("location"), "location", default={}).get("urls", []), "location.urls"
    )
    homepage = info.text(urls[0], "location.urls[0]").strip() if urls else ""
    redistribution = info.obj(info.data.get("redistributionInfo"), "redistributionInfo", default={})
    license_text = info.text(redistribution.get("license"), "redistributionInfo.license").strip()
    entries: dict[str, str] = {}
    notes: list[str] = []
    for key, value, label in (("citation", citation, "Citation"), ("license", license_text, "License")):
        if value:
            try:
                DatasetCard.model_validate({key: value})
                entries[key] = value
            except pydantic.ValidationError:
                notes.append(f"{label} (from TFDS): {value}")
    if homepage:
        try:
            DatasetCard.model_validate({"homepage": homepage})
            entries["homepage"] = homepage
        except pydantic.ValidationError:
            notes.append(f"Homepage (from TFDS): {homepage}")
    if notes:
        entries["description"] = "\n\n".join(notes)
    return DatasetCard.model_validate(entries) if entries else None


def open_tfds(folder: str | Path) -> TfdsDataset:
    """Open the folder TFDS prepared (``<data_dir>/<name>/<version>``) as it is: its
    schema, splits and shards, and the features left out (:attr:`TfdsDataset.skipped`).

    Readers (:func:`recordkit.iter_records`, :func:`recordkit.load_dataset`) and the
    ``inspect``, ``verify`` and ``convert`` commands take the folder itself too.
    """
    return load_tfds(folder)


def _class_name(feature: Mapping[str, Any]) -> str:
    name = feature.get("pythonClassName")
    return name.rsplit(".", 1)[-1] if isinstance(name, str) else "?"


#: The most classes a ClassLabel may declare when recordkit makes their names ("0", "1" ...).
MAX_CLASSES = 1_000_000


class _Mapper:
    """Walks ``features.json`` and collects fields (by name) and what it left out; every
    value it reads is type-checked (:class:`~recordkit.dataset._tfds_json.TfdsJson`)."""

    def __init__(self, root: Path, json_file: TfdsJson) -> None:
        self.root = root
        self.json = json_file
        self.fields: dict[str, FieldSpec] = {}
        self.skipped: list[str] = []

    def skip(self, key: str, feature: Mapping[str, Any], why: str = "") -> None:
        self.skipped.append(f"{key}: {_class_name(feature)} left out{f' ({why})' if why else ''}")

    def add(self, key: str, spec: dict[str, Any]) -> None:
        name = key.replace("/", ".")
        if name != key:
            spec.setdefault("keys", {}).setdefault("", key)
        if name in self.fields:
            raise self.json.error(_where(key), f"maps onto the field {name!r}, which another feature has")
        try:
            self.fields[name] = FieldSpec(**spec)
        except pydantic.ValidationError as exc:
            problems = "; ".join(e["msg"] for e in exc.errors())
            raise self.json.error(_where(key), f"does not map onto a field: {problems}") from None

    def part(self, feature: Mapping[str, Any], key: str, name: str) -> Mapping[str, Any]:
        """``feature[name]`` (its class's settings), a JSON object (missing: empty)."""
        return self.json.obj(feature.get(name), _where(key, name), default={})

    def text(self, spec: Mapping[str, Any], key: str, path: str, default: str) -> str:
        """``spec``'s value ``path`` (the last part of a dotted path), a string."""
        return self.json.text(spec.get(path.rsplit(".", 1)[-1]), _where(key, path), default)

    def dims(self, spec: Mapping[str, Any], key: str, part: str) -> list[int]:
        """The ``shape.dimensions`` of ``spec`` (feature ``key``'s ``part``)."""
        shape = self.json.obj(spec.get("shape"), _where(key, f"{part}.shape"), default={})
        where = _where(key, f"{part}.shape.dimensions")
        dims = [
            self.json.dimension(d, f"{where}[{i}]")
            for i, d in enumerate(self.json.items(shape.get("dimensions", []), where))
        ]
        if math.prod(d for d in dims if d > 0) >= 2**63:
            raise self.json.error(where, f"{dims} holds more values than int64 can count")
        return dims

    def num_classes(self, feature: Mapping[str, Any], key: str) -> int:
        where = _where(key, "classLabel.numClasses")
        count = self.json.count(self.part(feature, key, "classLabel").get("numClasses", 0), where)
        if count > MAX_CLASSES:
            raise self.json.error(where, f"is {count}: more than the {MAX_CLASSES} classes recordkit reads")
        return count

    def feature(self, feature: Any, key: str, *, in_sequence: bool) -> None:
        feature = self.json.obj(feature, _where(key))
        kind = _class_name(feature)
        if kind == "FeaturesDict":
            features = self.part(feature, key, "featuresDict").get("features")
            self.features_dict(
                self.json.obj(features, _where(key, "featuresDict.features")), key, in_sequence=in_sequence
            )
        elif kind == "Sequence":
            if in_sequence:
                self.skip(key, feature, "a Sequence inside a Sequence")
                return
            inner = self.part(feature, key, "sequence").get("feature")
            self.feature(self.json.obj(inner, _where(key, "sequence.feature")), key, in_sequence=True)
        elif kind == "Image":
            self.image(feature, key, in_sequence)
        elif kind == "ClassLabel":
            self.add(key, {"codec": "label", "options": self.label_options(feature, key, multi=in_sequence)})
        elif kind == "Text":
            self.add(key, {"codec": "text", "sequence": in_sequence, "description": "TFDS Text"})
        elif kind == "BBoxFeature":
            self.add(
                key, {"codec": "bbox", "options": {"format": "yxyx", "stored": "yxyx", "normalized": True}}
            )
        elif kind == "Audio":
            self.audio(feature, key, in_sequence)
        elif kind in ("Tensor", "Scalar"):
            self.tensor(feature, key, in_sequence)
        else:
            self.skip(key, feature, "no recordkit codec reads this TFDS feature")

    def features_dict(self, features: Mapping[str, Any], prefix: str, *, in_sequence: bool) -> None:
        joined = {name: f"{prefix}/{name}" if prefix else name for name in features}
        for name, key in joined.items():
            problem = field_name_problem(key.replace("/", "."))
            if "/" in name or problem is not None:
                why = problem or "a '/' inside a name"
                raise self.json.error(_where(key), f"is not a field name recordkit reads ({why})")
        features = {name: self.json.obj(f, _where(joined[name])) for name, f in features.items()}
        if in_sequence:
            # Boxes take the labels beside them in the same sequence (objects/bbox + objects/label).
            boxes = [n for n, f in features.items() if _class_name(f) == "BBoxFeature"]
            labels = [n for n, f in features.items() if _class_name(f) == "ClassLabel"]
            if len(boxes) == 1 and len(labels) == 1:
                box, label = boxes[0], labels[0]
                options = {"format": "yxyx", "stored": "yxyx", "normalized": True}
                names = self.label_options(features[label], joined[label], multi=True).get("names")
                if names is None:
                    names = [str(i) for i in range(self.num_classes(features[label], joined[label]))]
                if names:
                    options["labels"] = names
                    self.add(
                        joined[box], {"codec": "bbox", "options": options, "keys": {"labels": joined[label]}}
                    )
                    features = {n: f for n, f in features.items() if n not in (box, label)}
        for name, feature in features.items():
            self.feature(feature, joined[name], in_sequence=in_sequence)

    def label_options(self, feature: Mapping[str, Any], key: str, *, multi: bool) -> dict[str, Any]:
        options: dict[str, Any] = {"multi": True} if multi else {}
        names_file = self.root / f"{key.replace('/', '-')}.labels.txt"
        if names_file.is_file():
            try:
                text = names_file.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise DatasetError(f"is not UTF-8 text (byte {exc.start})", file=str(names_file)) from None
            options["names"] = [n for n in text.splitlines() if n]
        else:
            options["num_classes"] = self.num_classes(feature, key) or None
        return options

    def image(self, feature: Mapping[str, Any], key: str, in_sequence: bool) -> None:
        spec = self.part(feature, key, "image")
        dtype = self.text(spec, key, "image.dtype", "uint8")
        if dtype != "uint8":
            self.skip(key, feature, f"dtype {dtype}: the image codec reads 8-bit images")
            return
        options: dict[str, Any] = {"sizes": "header"}
        encoding = self.text(spec, key, "image.encodingFormat", "")
        options["format"] = encoding if encoding in ("jpeg", "png") else "keep"
        dims = self.dims(spec, key, "image")
        if len(dims) == 3 and dims[2] in (1, 3, 4):
            options["channels"] = dims[2]
        if len(dims) == 3 and dims[0] > 0 and dims[1] > 0:
            options["height"], options["width"] = dims[0], dims[1]
        self.add(
            key, {"codec": "image", "options": options, "sequence": in_sequence, "description": "TFDS Image"}
        )

    def audio(self, feature: Mapping[str, Any], key: str, in_sequence: bool) -> None:
        spec = self.part(feature, key, "audio")
        encoding = self.text(spec, key, "audio.encoding", "none").lower()
        dims = self.dims(spec, key, "audio")
        dtype = self.text(spec, key, "audio.dtype", "int64")
        wire = _WIRE_DTYPES.get(dtype)
        rate = self.json.count(spec.get("sampleRate") or 0, _where(key, "audio.sampleRate"))
        if spec.get("lazyDecode"):
            form = self.text(spec, key, "audio.fileFormat", "") or "files"
            why = f"audio stored as encoded {form} files (lazy_decode) without their sample counts"
            self.skip(key, feature, f"{why}, which the audio codec needs beside them")
            return
        channels = dims[1] if len(dims) == 2 else 1
        if (
            encoding not in ("none", "")
            or len(dims) not in (1, 2)
            or channels < 1
            or wire is None
            or in_sequence
        ):
            self.skip(key, feature, f"audio stored as {encoding} of shape {dims}: not read")
            return
        if not rate:
            # No sample rate to declare: the samples as they are, a list of numbers.
            self.add(
                key,
                {
                    "codec": "scalar",
                    "options": {"dtype": wire},
                    "sequence": True,
                    "description": f"TFDS Audio: samples ({dtype}), no sample rate recorded",
                },
            )
            return
        stored = "int_samples" if wire == "int64" else "float_samples"
        self.add(
            key,
            {
                "codec": "audio",
                "options": {"sample_rate": rate, "channels": channels, "stored": stored},
                "description": f"TFDS Audio: {dtype} samples at {rate} Hz"
                + (" (16-bit values, read as int / 32768)" if wire == "int64" else ""),
            },
        )

    def tensor(self, feature: Mapping[str, Any], key: str, in_sequence: bool) -> None:
        spec = self.part(feature, key, "tensor")
        dims = self.dims(spec, key, "tensor")
        dtype = self.text(spec, key, "tensor.dtype", "float32")
        encoding = self.text(spec, key, "tensor.encoding", "none").lower()
        if dtype == "string" and encoding in ("none", "") and len(dims) + in_sequence <= 1:
            self.add(
                key,
                {
                    "codec": "text",
                    "sequence": bool(dims) or in_sequence,
                    "description": "TFDS Tensor of strings",
                },
            )
            return
        wire = _WIRE_DTYPES.get(dtype)
        shape: list[int | None] = [None if d < 0 else d for d in ([-1] if in_sequence else []) + dims]
        if encoding not in ("none", "") or wire is None or shape.count(None) > 1:
            self.skip(key, feature, f"a {dtype} tensor of shape {dims} (encoding {encoding}): not read")
            return
        if len(shape) > 1:
            # Rank 2 and more (or a sequence of rank 1): TFDS stores the numbers flat.
            self.add(
                key,
                {
                    "codec": "tensor",
                    "options": {"dtype": dtype, "shape": shape, "stored": "numbers"},
                    "description": f"TFDS Tensor {dtype} of shape {dims}"
                    + (" in a Sequence" if in_sequence else ""),
                },
            )
            return
        self.add(
            key,
            {
                "codec": "scalar",
                "options": {"dtype": _SCALAR_DTYPES.get(wire, wire)},
                "sequence": bool(dims) or in_sequence,
                "description": f"TFDS Tensor {dtype} of shape {dims}",
            },
        )


def _where(key: str, path: str = "") -> str:
    """Where in ``features.json`` a value is: its feature's key, and the path under it."""
    feature = f"feature {key!r}" if key else "the top feature"
    return f"{feature} {path}" if path else feature
