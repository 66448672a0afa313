"""recordkit: typed, multimodal datasets as sharded TFRecords, with generated readers.

Importing recordkit does not import TensorFlow; the functions that need it import it
when called. The public API is what ``__all__`` lists; modules whose names start with
an underscore are private and may change.
"""

from __future__ import annotations

import importlib as _importlib
import warnings as _warnings
from typing import Any as _Any

from recordkit import errors
from recordkit._version import __version__
from recordkit.codec._adoption import Adoption, ForeignKey, ForeignRecords, LeftOut
from recordkit.codec._capabilities import (
    Audible,
    Backdrop,
    Canvas,
    Captioned,
    Convertible,
    DataTyped,
    DecodedAsRawArray,
    DecodedInColumns,
    DecodedPerRecord,
    Drawable,
    FixedWireBytes,
    HfDescribed,
    HfFeature,
    NativeField,
    NativeRequest,
    PadsAsDecoded,
    Pictured,
    Raster,
    RawArray,
    Statistics,
    Summarized,
    TfdsDescribed,
    TfdsFeature,
)
from recordkit.codec._codec import Codec, CodecOptions
from recordkit.codec._decode_source import DecodeSource
from recordkit.codec._geometry import FollowsImage, ImageGeometry, ImageTransform
from recordkit.codec._plugins import PluginInfo, PluginSet, default_registry, load_plugins
from recordkit.codec._registry import CodecInfo, CodecRegistry
from recordkit.codec._wire import WireFeature, WireKind, WireSpec, WireValues
from recordkit.dataset._breakdown import byte_breakdown
from recordkit.dataset._manifest import FieldGroup, Manifest, ShardInfo, SplitInfo
from recordkit.dataset._tfds import TfdsDataset, open_tfds
from recordkit.hookspecs import hookimpl
from recordkit.read._corruption import CorruptionReport, SkippedRecords
from recordkit.read._dataset import Dataset, open
from recordkit.read._epoch_stream import EpochStream
from recordkit.read._mixture import Mixture, mix
from recordkit.read._parse import PRESENT_SUFFIX, feature_spec, make_parser
from recordkit.read._random_access import RandomAccess
from recordkit.read._read_config import Layout, ReadConfig
from recordkit.read._shortcuts import iter_records, load_dataset
from recordkit.read._tf_epochs import TfEpochs
from recordkit.schema._bound import BoundField, KeyedFeature
from recordkit.schema._card import DatasetCard
from recordkit.schema._compatibility import CompatibilityReport, FieldDifference, check_compatibility
from recordkit.schema._encoder import EncodedRecord as _EncodedRecord
from recordkit.schema._encoder import RecordEncoder
from recordkit.schema._fields import FieldSpec
from recordkit.schema._record_class import Record, field, schema_of
from recordkit.schema._schema import BoundSchema, Schema
from recordkit.storage import ShardCache
from recordkit.tools._adopt import infer_schema
from recordkit.tools._codegen import generate_parser_code
from recordkit.tools._convert import convert_dataset
from recordkit.tools._croissant import croissant
from recordkit.tools._field_groups import add_fields, remove_fields
from recordkit.tools._hf_export import export_parquet, hf_features, to_hf
from recordkit.tools._tfds_export import write_tfds_metadata
from recordkit.write._writer import DatasetWriter, WriteOptions, write_dataset

__all__ = [
    "PRESENT_SUFFIX",
    "Adoption",
    "Audible",
    "Backdrop",
    "BoundField",
    "BoundSchema",
    "Canvas",
    "Captioned",
    "Codec",
    "CodecInfo",
    "CodecOptions",
    "CodecRegistry",
    "CompatibilityReport",
    "Convertible",
    "CorruptionReport",
    "Dataset",
    "DataTyped",
    "DatasetCard",
    "DatasetWriter",
    "DecodeSource",
    "EpochStream",
    "DecodedAsRawArray",
    "DecodedInColumns",
    "DecodedPerRecord",
    "Drawable",
    "FieldDifference",
    "FieldGroup",
    "FieldSpec",
    "FixedWireBytes",
    "FollowsImage",
    "ForeignKey",
    "ForeignRecords",
    "HfDescribed",
    "HfFeature",
    "ImageGeometry",
    "ImageTransform",
    "KeyedFeature",
    "Layout",
    "LeftOut",
    "Manifest",
    "Mixture",
    "NativeField",
    "NativeRequest",
    "PadsAsDecoded",
    "Pictured",
    "PluginInfo",
    "PluginSet",
    "RandomAccess",
    "Raster",
    "RawArray",
    "ReadConfig",
    "Record",
    "RecordEncoder",
    "Schema",
    "ShardCache",
    "ShardInfo",
    "SkippedRecords",
    "SplitInfo",
    "Statistics",
    "Summarized",
    "TfEpochs",
    "TfdsDataset",
    "TfdsDescribed",
    "TfdsFeature",
    "WireFeature",
    "WireKind",
    "WireSpec",
    "WireValues",
    "WriteOptions",
    "__version__",
    "add_fields",
    "byte_breakdown",
    "check_compatibility",
    "convert_dataset",
    "croissant",
    "default_registry",
    "errors",
    "export_parquet",
    "feature_spec",
    "field",
    "generate_parser_code",
    "hf_features",
    "hookimpl",
    "infer_schema",
    "open_tfds",
    "iter_records",
    "load_dataset",
    "load_plugins",
    "make_parser",
    "mix",
    "open",
    "remove_fields",
    "schema_of",
    "to_hf",
    "write_dataset",
    "write_tfds_metadata",
]

#: Public names that still work but warn: name to (object, what to use instead).
_DEPRECATED: dict[str, tuple[_Any, str]] = {
    "EncodedRecord": (
        _EncodedRecord,
        "the result of the deprecated RecordEncoder.encode_with_sizes; use "
        "RecordEncoder.encode, then recordkit.byte_breakdown",
    ),
}


def __getattr__(name: str) -> _Any:
    """Deprecated names, with a DeprecationWarning that says what replaces them; and
    ``rk.beam``, imported on first use (it needs the ``beam`` extra)."""
    if name == "beam":
        return _importlib.import_module("recordkit.beam")
    if name in _DEPRECATED:
        obj, instead = _DEPRECATED[name]
        _warnings.warn(f"recordkit.{name} is deprecated: {instead}", DeprecationWarning, stacklevel=2)
        return obj
    raise AttributeError(f"module 'recordkit' has no attribute {name!r}")
