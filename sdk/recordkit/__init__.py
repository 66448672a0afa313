"""recordkit: typed, multimodal datasets as sharded TFRecords, with generated readers.

Importing recordkit does not import TensorFlow; the functions that need it import it
when called. The public API is what ``__all__`` lists; modules whose names start with
an underscore are private and may change.
"""

from __future__ import annotations

from recordkit import errors
from recordkit._breakdown import byte_breakdown
from recordkit._codec import Codec, CodecOptions
from recordkit._codegen import DecodeSource, generate_parser_code
from recordkit._compat import CompatibilityReport, FieldDifference, check_compatibility
from recordkit._encode import EncodedRecord, RecordEncoder
from recordkit._existing import infer_schema
from recordkit._iter_records import iter_records
from recordkit._manifest import Manifest, ShardInfo, SplitInfo
from recordkit._parse import PRESENT_SUFFIX, feature_spec, make_parser
from recordkit._plugins import PluginInfo, PluginSet, default_registry, load_plugins
from recordkit._reader import load_dataset
from recordkit._record import Record, field, schema_of
from recordkit._registry import CodecInfo, CodecRegistry
from recordkit._schema import BoundField, BoundSchema, FieldSpec, KeyedFeature, Schema
from recordkit._source import CorruptionReport, SkippedRecords
from recordkit._version import __version__
from recordkit._wire import WireFeature, WireKind, WireSpec, WireValues
from recordkit._writer import DatasetWriter, write_dataset
from recordkit.hookspecs import hookimpl

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
    "iter_records",
    "load_dataset",
    "load_plugins",
    "make_parser",
    "schema_of",
    "write_dataset",
]
