"""recordkit: typed, multimodal datasets as sharded TFRecords, with generated readers.

Importing recordkit does not import TensorFlow; the functions that need it import it
when called. The public API is what ``__all__`` lists; modules whose names start with
an underscore are private and may change.
"""

from __future__ import annotations

from recordkit import errors
from recordkit._version import __version__
from recordkit.codec._codec import Codec, CodecOptions
from recordkit.codec._decode_source import DecodeSource
from recordkit.codec._plugins import PluginInfo, PluginSet, default_registry, load_plugins
from recordkit.codec._registry import CodecInfo, CodecRegistry
from recordkit.codec._wire import WireFeature, WireKind, WireSpec, WireValues
from recordkit.dataset._breakdown import byte_breakdown
from recordkit.dataset._manifest import Manifest, ShardInfo, SplitInfo
from recordkit.dataset._tfds import TfdsDataset, open_tfds
from recordkit.hookspecs import hookimpl
from recordkit.read._iter_records import iter_records
from recordkit.read._load_dataset import load_dataset
from recordkit.read._open import CorruptionReport, SkippedRecords
from recordkit.read._parse import PRESENT_SUFFIX, feature_spec, make_parser
from recordkit.schema._bound import BoundField, KeyedFeature
from recordkit.schema._compatibility import CompatibilityReport, FieldDifference, check_compatibility
from recordkit.schema._encoder import EncodedRecord, RecordEncoder
from recordkit.schema._fields import FieldSpec
from recordkit.schema._record_class import Record, field, schema_of
from recordkit.schema._schema import BoundSchema, Schema
from recordkit.tools._adopt import infer_schema
from recordkit.tools._codegen import generate_parser_code
from recordkit.write._writer import DatasetWriter, write_dataset

__all__ = [
    "PRESENT_SUFFIX",
    "BoundField",
    "BoundSchema",
    "Codec",
    "CodecInfo",
    "CodecOptions",
    "CodecRegistry",
    "CompatibilityReport",
    "CorruptionReport",
    "DatasetWriter",
    "DecodeSource",
    "EncodedRecord",
    "FieldDifference",
    "FieldSpec",
    "KeyedFeature",
    "Manifest",
    "PluginInfo",
    "PluginSet",
    "Record",
    "RecordEncoder",
    "Schema",
    "ShardInfo",
    "SkippedRecords",
    "SplitInfo",
    "TfdsDataset",
    "WireFeature",
    "WireKind",
    "WireSpec",
    "WireValues",
    "__version__",
    "byte_breakdown",
    "check_compatibility",
    "default_registry",
    "errors",
    "feature_spec",
    "field",
    "generate_parser_code",
    "hookimpl",
    "infer_schema",
    "open_tfds",
    "iter_records",
    "load_dataset",
    "load_plugins",
    "make_parser",
    "schema_of",
    "write_dataset",
]
