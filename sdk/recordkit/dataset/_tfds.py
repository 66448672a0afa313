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
out, never guessed. ArrayRecord datasets are refused. Splits that older TFDS versions
recorded without ``shardLengths`` get their shards' record counts by a walk of the
record headers.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recordkit._version import __version__
from recordkit.dataset._manifest import MANIFEST_FILE, Manifest, ShardInfo, SplitInfo
from recordkit.errors import DatasetError
from recordkit.format._tfrecord import iter_tfrecords
from recordkit.schema._fields import FieldSpec
from recordkit.schema._schema import Schema
from recordkit.storage import Location

__all__ = [
    "TFDS_FEATURES",
    "TFDS_INFO",
    "TfdsDataset",
    "is_tfds_folder",
    "load_manifest",
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
    when its shards are not TFRecord, or when a listed shard is missing."""
    root = Path(root)
    info = _read_json(root / TFDS_INFO)
    features = _read_json(root / TFDS_FEATURES)
    name = str(info.get("name") or root.parent.name)
    version = str(info.get("version") or "1.0.0")
    file_format = str(info.get("fileFormat") or "tfrecord")
    if file_format != "tfrecord":
        raise DatasetError(
            f"{root}: TFDS wrote this dataset as {file_format} shards; recordkit reads TFRecord shards only "
            "(prepare it again with file_format='tfrecord', or read it with tfds)"
        )
    mapper = _Mapper(root)
    mapper.feature(features, "", in_sequence=False)
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
    splits = {str(s["name"]): _split(root, name, file_format, s) for s in info.get("splits", [])}
    manifest = Manifest(
        recordkit_version=__version__,
        schema=schema,
        fingerprint="",
        codecs={},
        splits=splits,
    )
    return TfdsDataset(root, name, version, schema, manifest, tuple(mapper.skipped))


def open_tfds(folder: str | Path) -> TfdsDataset:
    """Open the folder TFDS prepared (``<data_dir>/<name>/<version>``) as it is: its
    schema, splits and shards, and the features left out (:attr:`TfdsDataset.skipped`).

    Readers (:func:`recordkit.iter_records`, :func:`recordkit.load_dataset`) and the
    ``inspect``, ``verify`` and ``convert`` commands take the folder itself too.
    """
    return load_tfds(folder)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path.parent} is not a TFDS dataset folder (no {path.name})") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: expected a JSON object")
    return data


def _split(root: Path, dataset: str, file_format: str, split: Mapping[str, Any]) -> SplitInfo:
    name = str(split["name"])
    template = str(split.get("filepathTemplate") or "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}")
    template = (
        template.replace("{DATASET}", dataset).replace("{SPLIT}", name).replace("{FILEFORMAT}", file_format)
    )
    if "shardLengths" not in split:
        return _counted_split(root, name, template, split)
    lengths = [int(n) for n in split["shardLengths"]]
    shards = []
    for index, records in enumerate(lengths):
        file = _shard_file(template, index, len(lengths))
        path = root / file
        if not path.is_file():
            raise DatasetError(f"{root}: split {name!r} lists shard {file}, which is missing")
        # TFDS records no sha256: an empty one means unknown.
        shards.append(ShardInfo(file=file, records=records, bytes=path.stat().st_size, sha256=""))
    return SplitInfo(shards=shards)


def _shard_file(template: str, index: int, count: int) -> str:
    return (
        template.replace("{SHARD_X_OF_Y}", f"{index:05d}-of-{count:05d}")
        .replace("{SHARD_INDEX}", f"{index:05d}")
        .replace("{NUM_SHARDS}", f"{count:05d}")
    )


def _counted_split(root: Path, name: str, template: str, split: Mapping[str, Any]) -> SplitInfo:
    """A split whose ``dataset_info.json`` has no ``shardLengths`` (older TFDS versions):
    its shards from ``numShards`` or, without it, every file the template matches; each
    shard's records counted by walking its record headers (data CRCs are left to
    ``verify``), and the total checked against ``statistics.numExamples`` when given."""
    if "numShards" in split:
        count = int(split["numShards"])
        files = [_shard_file(template, index, count) for index in range(count)]
        for file in files:
            if not (root / file).is_file():
                raise DatasetError(
                    f"{root}: split {name!r} has shard {file} ({count} shards), which is missing"
                )
    else:
        pattern = _shard_file(template, 0, 0).replace("00000-of-00000", "*-of-*").replace("00000", "*")
        files = sorted(path.name for path in root.glob(pattern))
    if not files:
        raise DatasetError(
            f"{root}: split {name!r} has no shard lengths and no shard files matching {template}"
        )
    shards = []
    for file in files:
        path = root / file
        records = sum(1 for _ in iter_tfrecords(path, verify=False))
        shards.append(ShardInfo(file=file, records=records, bytes=path.stat().st_size, sha256=""))
    expected = split.get("statistics", {}).get("numExamples")
    counted = sum(shard.records for shard in shards)
    if expected is not None and int(expected) != counted:
        raise DatasetError(
            f"{root}: split {name!r} has {counted} records in its {len(files)} shards, but "
            f"dataset_info.json says statistics.numExamples is {expected}"
        )
    return SplitInfo(shards=shards)


def _class_name(feature: Mapping[str, Any]) -> str:
    return str(feature.get("pythonClassName", "?")).rsplit(".", 1)[-1]


def _dims(spec: Mapping[str, Any]) -> list[int]:
    return [int(d) for d in spec.get("shape", {}).get("dimensions", [])]


class _Mapper:
    """Walks ``features.json`` and collects fields (by name) and what it left out."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fields: dict[str, FieldSpec] = {}
        self.skipped: list[str] = []

    def skip(self, key: str, feature: Mapping[str, Any], why: str = "") -> None:
        self.skipped.append(f"{key}: {_class_name(feature)} left out{f' ({why})' if why else ''}")

    def add(self, key: str, spec: dict[str, Any]) -> None:
        name = key.replace("/", ".")
        if name != key:
            spec.setdefault("keys", {}).setdefault("", key)
        self.fields[name] = FieldSpec(**spec)

    def feature(self, feature: Mapping[str, Any], key: str, *, in_sequence: bool) -> None:
        kind = _class_name(feature)
        if kind == "FeaturesDict":
            self.features_dict(feature["featuresDict"]["features"], key, in_sequence=in_sequence)
        elif kind == "Sequence":
            if in_sequence:
                self.skip(key, feature, "a Sequence inside a Sequence")
                return
            self.feature(feature["sequence"]["feature"], key, in_sequence=True)
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
        if in_sequence:
            # Boxes take the labels beside them in the same sequence (objects/bbox + objects/label).
            boxes = [n for n, f in features.items() if _class_name(f) == "BBoxFeature"]
            labels = [n for n, f in features.items() if _class_name(f) == "ClassLabel"]
            if len(boxes) == 1 and len(labels) == 1:
                box, label = boxes[0], labels[0]
                options = {"format": "yxyx", "stored": "yxyx", "normalized": True}
                names = self.label_options(features[label], joined[label], multi=True).get("names")
                if names is None:
                    count = int(features[label].get("classLabel", {}).get("numClasses", 0))
                    names = [str(i) for i in range(count)]
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
            options["names"] = [n for n in names_file.read_text(encoding="utf-8").splitlines() if n]
        else:
            options["num_classes"] = int(feature.get("classLabel", {}).get("numClasses", 0)) or None
        return options

    def image(self, feature: Mapping[str, Any], key: str, in_sequence: bool) -> None:
        spec = feature.get("image", {})
        if spec.get("dtype", "uint8") != "uint8":
            self.skip(key, feature, f"dtype {spec.get('dtype')}: the image codec reads 8-bit images")
            return
        options: dict[str, Any] = {"sizes": "header"}
        encoding = str(spec.get("encodingFormat") or "")
        options["format"] = encoding if encoding in ("jpeg", "png") else "keep"
        dims = _dims(spec)
        if len(dims) == 3 and dims[2] in (1, 3, 4):
            options["channels"] = dims[2]
        if len(dims) == 3 and dims[0] > 0 and dims[1] > 0:
            options["height"], options["width"] = dims[0], dims[1]
        self.add(
            key, {"codec": "image", "options": options, "sequence": in_sequence, "description": "TFDS Image"}
        )

    def audio(self, feature: Mapping[str, Any], key: str, in_sequence: bool) -> None:
        spec = feature.get("audio", {})
        encoding = str(spec.get("encoding", "none")).lower()
        dims = _dims(spec)
        dtype = str(spec.get("dtype", "int64"))
        wire = _WIRE_DTYPES.get(dtype)
        rate = int(spec.get("sampleRate") or 0)
        if spec.get("lazyDecode"):
            form = spec.get("fileFormat") or "files"
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
        spec = feature.get("tensor", {})
        dims = _dims(spec)
        dtype = str(spec.get("dtype", "float32"))
        encoding = str(spec.get("encoding", "none")).lower()
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


def load_manifest(root: str | Path | Location) -> Manifest:
    """The manifest of the dataset at ``root``: its ``dataset.json``, or for a folder that
    TFDS prepared, the view :func:`load_tfds` gives (shards with an empty sha256: unknown).
    A remote dataset (a Location) has its ``dataset.json`` read."""
    if isinstance(root, Location):
        return Manifest.load(root)
    if is_tfds_folder(root) and not (Path(root) / MANIFEST_FILE).is_file():
        return load_tfds(root).manifest
    return Manifest.load(root)
