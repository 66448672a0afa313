"""One TensorFlow decode per codec: every built-in codec's ``decode_tf`` runs the very
module function (with the very constants) that its ``decode_tf_source`` hands to
``recordkit codegen``, which copies that function's source verbatim; the functions live
in the codec's own module or in the package's private helper modules (``_tf_*``, ``_image_header``)."""

from __future__ import annotations

import inspect
import io
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _codec_io import bind
from PIL import Image

import recordkit as rk
from recordkit.testing import assert_values_equal


def _png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


_rng = np.random.default_rng(11)

#: (id, codec, options, two values of different sizes): every built-in codec, and each
#: branch of a decode that the options choose.
CASES: list[tuple[str, str, dict[str, Any], list[Any]]] = [
    ("scalar-f64", "scalar", {"dtype": "float64"}, [1.5, -2.25]),
    ("scalar-bool", "scalar", {"dtype": "bool"}, [True, False]),
    ("text", "text", {}, ["a", "ünï"]),
    ("label", "label", {"names": ["a", "b"]}, ["b", "a"]),
    ("label-multi-hot", "label", {"num_classes": 4, "multi": True, "multi_hot": True}, [[0, 2], [3]]),
    (
        "bbox-labels",
        "bbox",
        {"format": "cxcywh", "labels": ["cat"], "extras": ["score"]},
        [
            {"boxes": [[0.5, 0.5, 0.2, 0.2]], "labels": ["cat"], "score": [0.5]},
            {"boxes": [], "labels": [], "score": []},
        ],
    ),
    ("tensor-fixed", "tensor", {"dtype": "uint32", "shape": [2]}, [np.array([1, 2], np.uint32)] * 2),
    (
        "tensor-ragged",
        "tensor",
        {"dtype": "float64", "shape": [None, 2]},
        [np.zeros((1, 2)), np.ones((3, 2))],
    ),
    ("tensor-any", "tensor", {"dtype": "int16"}, [np.arange(6, dtype=np.int16).reshape(2, 3), np.int16(4)]),
    (
        "image-keep",
        "image",
        {"format": "keep"},
        [
            _png(_rng.integers(0, 256, (3, 4, 3), dtype=np.uint8)),
            _png(_rng.integers(0, 256, (5, 2, 3), dtype=np.uint8)),
        ],
    ),
    (
        "image-fixed-jpeg",
        "image",
        {"format": "jpeg", "height": 4, "width": 4, "channels": 3},
        [_rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)] * 2,
    ),
    (
        "mask",
        "mask",
        {"num_classes": 3},
        [_rng.integers(0, 3, (3, 4), dtype=np.uint8), _rng.integers(0, 3, (2, 5), dtype=np.uint8)],
    ),
    (
        "audio-wav",
        "audio",
        {"sample_rate": 8000, "channels": 2},
        [_rng.integers(-999, 999, (5, 2), dtype=np.int16), _rng.integers(-999, 999, (9, 2), dtype=np.int16)],
    ),
    (
        "audio-pcm",
        "audio",
        {"sample_rate": 8000, "format": "pcm"},
        [_rng.integers(-999, 999, 7, dtype=np.int16), _rng.integers(-999, 999, 3, dtype=np.int16)],
    ),
    (
        "audio-int-samples",
        "audio",
        {"sample_rate": 8000, "channels": 2, "stored": "int_samples"},
        [_rng.integers(-999, 999, (5, 2), dtype=np.int16), _rng.integers(-999, 999, (2, 2), dtype=np.int16)],
    ),
    (
        "mask-header",
        "mask",
        {"sizes": "header"},
        [_rng.integers(0, 3, (3, 4), dtype=np.uint8), _rng.integers(0, 3, (2, 5), dtype=np.uint8)],
    ),
    (
        "tensor-numbers",
        "tensor",
        {"dtype": "int8", "shape": [2, None], "stored": "numbers"},
        [np.arange(6, dtype=np.int8).reshape(2, 3), np.ones((2, 1), np.int8)],
    ),
    (
        "image-header-fast-dct",
        "image",
        {"format": "jpeg", "sizes": "header", "jpeg_dct": "fast"},
        [_rng.integers(0, 256, (4, 6, 3), dtype=np.uint8), _rng.integers(0, 256, (5, 3, 3), dtype=np.uint8)],
    ),
]


def test_the_cases_cover_every_built_in_codec() -> None:
    built_in = {
        info.name for info in rk.default_registry() if info.codec.__module__.startswith("recordkit_codecs.")
    }
    assert {codec for _, codec, _, _ in CASES} == built_in


@pytest.mark.parametrize(("codec", "options", "values"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decode_tf_runs_the_function_codegen_copies(
    codec: str, options: dict[str, Any], values: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    bound = bind(x={"codec": codec, "options": options})
    field = bound.fields[0]
    source = field.codec.decode_tf_source()
    assert source is not None
    home = type(field.codec).__module__
    assert source.function.__module__ == home
    for helper in source.helpers:
        module = helper.__module__
        assert module == home or module.startswith("recordkit_codecs._"), (helper, module)
    code = rk.generate_parser_code(bound)
    for function in (*source.helpers, source.function):
        assert textwrap.indent(textwrap.dedent(inspect.getsource(function)), "    ") in code, function
    assert "_standalone" not in code

    serialized = tf.constant(
        [rk.RecordEncoder(bound).encode({"x": value}, i) for i, value in enumerate(values)]
    )
    namespace: dict[str, Any] = {}
    exec(compile(code, "<generated>", "exec"), namespace)  # the generated module, in-process
    generated = namespace["parse"](serialized)["x"]

    calls: list[dict[str, Any]] = []
    original = source.function

    def spy(wire: Any, **constants: Any) -> Any:
        calls.append(constants)
        return original(wire, **constants)

    monkeypatch.setattr(sys.modules[home], original.__name__, spy)
    runtime = rk.make_parser(bound)(serialized)["x"]
    assert calls
    assert calls[0] == dict(source.constants)
    assert_values_equal(runtime, generated)
