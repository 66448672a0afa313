"""recordkit.testing: the conformance kit for codec authors.

:func:`check_codec` runs a codec through everything recordkit does with it (wire spec,
options through a schema file, encode, a real TFRecord file, batched tf.data decode,
numpy decode, optional and sequence fields, bad inputs). It is also a pytest plugin
(installed with recordkit): the ``codec_conformance`` fixture is ``check_codec`` with
``tmp_path`` already given.
"""

from __future__ import annotations

from recordkit.testing._conformance import (
    BadInput,
    CodecCase,
    ConformanceError,
    ConformanceReport,
    assert_values_equal,
    check_codec,
)

__all__ = [
    "BadInput",
    "CodecCase",
    "ConformanceError",
    "ConformanceReport",
    "assert_values_equal",
    "check_codec",
]
