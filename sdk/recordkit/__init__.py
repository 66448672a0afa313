"""recordkit: typed, multimodal datasets as sharded TFRecords, with generated readers.

Importing recordkit does not import TensorFlow; the functions that need it import it
when called. The public API is what ``__all__`` lists; modules whose names start with
an underscore are private and may change.
"""

from __future__ import annotations

from recordkit import errors
from recordkit._codec import Codec, CodecOptions
from recordkit._encode import EncodedRecord, RecordEncoder
from recordkit._parse import PRESENT_SUFFIX, feature_spec, make_parser
from recordkit._plugins import PluginInfo, PluginSet, default_registry, load_plugins
from recordkit._registry import CodecInfo, CodecRegistry
from recordkit._schema import BoundField, BoundSchema, FieldSpec, KeyedFeature, Schema
from recordkit._version import __version__
from recordkit._wire import WireFeature, WireKind, WireSpec, WireValues
from recordkit.hookspecs import hookimpl

__all__ = [
    "PRESENT_SUFFIX",
    "BoundField",
    "BoundSchema",
    "Codec",
    "CodecInfo",
    "CodecOptions",
    "CodecRegistry",
    "EncodedRecord",
    "FieldSpec",
    "KeyedFeature",
    "PluginInfo",
    "PluginSet",
    "RecordEncoder",
    "Schema",
    "WireFeature",
    "WireKind",
    "WireSpec",
    "WireValues",
    "__version__",
    "default_registry",
    "errors",
    "feature_spec",
    "hookimpl",
    "load_plugins",
    "make_parser",
]
