"""Tests of the keypoints codec: the conformance kit, entry-point discovery, validation."""

from __future__ import annotations

import ast
import importlib.metadata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import recordkit as rk
from recordkit.testing import BadInput, CodecCase, ConformanceReport
from recordkit_keypoints import COCO_PERSON_KEYPOINTS, KeypointsCodec, KeypointsOptions
from recordkit_keypoints.keypoints import decode_keypoints_tf

Conformance = Callable[..., ConformanceReport]

rng = np.random.default_rng(7)


def _points(k: int, *, visibility: bool, normalized: bool = False) -> np.ndarray:
    scale = 1.0 if normalized else 640.0
    xy = (rng.random((k, 2)) * scale).astype(np.float32)
    if not visibility:
        return xy
    flags = rng.integers(0, 3, size=(k, 1)).astype(np.float32)
    return np.concatenate([xy, flags], axis=1)


# -- found through the entry point alone -------------------------------------------------


def test_registered_through_its_entry_point() -> None:
    plugins = rk.load_plugins()
    info = plugins.registry.info("keypoints")
    dist = importlib.metadata.distribution("recordkit-keypoints")
    assert info.codec is KeypointsCodec
    assert (info.plugin, info.distribution, info.distribution_version) == (
        "keypoints",
        "recordkit-keypoints",
        dist.version,
    )
    # Imported from the installed distribution, not from the source tree.
    import recordkit_keypoints

    assert Path(recordkit_keypoints.__file__).is_relative_to(Path(str(dist.locate_file(""))))
    assert not Path(recordkit_keypoints.__file__).is_relative_to(Path(__file__).parents[1])


def test_blocking_the_distribution_removes_the_codec() -> None:
    registry = rk.load_plugins(block=["recordkit-keypoints"]).registry
    assert "keypoints" not in registry
    assert "scalar" in registry


def test_imports_only_the_public_api() -> None:
    import recordkit_keypoints

    package = Path(recordkit_keypoints.__file__).parent
    for module in package.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            private = [
                n for n in names
                if n.split(".")[0] == "recordkit" and any(p.startswith("_") for p in n.split(".")[1:])
            ]
            assert not private, f"{module.name} imports private recordkit names: {private}"


# -- the conformance kit -----------------------------------------------------------------


# --8<-- [start:conformance]
def test_conformance_fixed_count_with_visibility(codec_conformance: Callable[..., ConformanceReport]) -> None:
    rng = np.random.default_rng(0)

    def pose() -> np.ndarray:  # 17 COCO keypoints: x, y in pixels and a visibility flag
        xy = rng.uniform(0, 640, size=(17, 2))
        flags = rng.integers(0, 3, size=(17, 1))
        return np.concatenate([xy, flags], axis=1).astype(np.float32)

    first = pose()
    report = codec_conformance(
        KeypointsCodec({"names": list(COCO_PERSON_KEYPOINTS), "visibility": True}),
        cases=[
            CodecCase(first, id="array"),
            CodecCase(pose().tolist(), id="nested lists"),
            CodecCase(first.reshape(-1).tolist(), expected=first, id="COCO's flat list"),
        ],
        bad_inputs=[
            BadInput(pose()[:16], match="expected 17 keypoints, got 16"),
            BadInput(pose()[:, :2], match=r"K x 3 .*got shape \(17, 2\)"),
            BadInput(np.full((17, 3), 3.0), match=r"keypoint 0 \('nose'\) has a visibility flag"),
            BadInput([1.0] * 50, match="3 numbers .* per keypoint, got 50"),
            BadInput("nose", match="got str"),
        ],
    )
    assert "sequence field: tf.data batched decode" in report.checks
# --8<-- [end:conformance]


def test_conformance_variable_count(codec_conformance: Conformance) -> None:
    cases = [CodecCase(_points(k, visibility=False)) for k in (1, 4, 2, 7)]
    report = codec_conformance(
        KeypointsCodec(),
        cases,
        bad_inputs=[
            BadInput(np.array([[0.0, np.nan]]), match="keypoint 0 has a coordinate that is not finite"),
            BadInput(np.array([[1.0, 2.0], [1e39, 0.0]]), match="keypoint 1 .* overflows float32"),
            BadInput([[1.0, 2.0], [3.0]], match="K x 2"),
            BadInput(np.ones((2, 2, 2)), match=r"got shape \(2, 2, 2\)"),
            BadInput([[True, False]], match="dtype bool"),
        ],
    )
    assert "optional field: tf.data batch of 1" in report.checks


def test_conformance_variable_count_with_visibility(codec_conformance: Conformance) -> None:
    codec_conformance(
        KeypointsCodec({"visibility": True, "normalized": True}),
        [CodecCase(_points(k, visibility=True, normalized=True)) for k in (3, 1, 5)],
        bad_inputs=[
            BadInput(
                [[0.5, 0.5, 2], [0.5, 1.5, 2], [-1, 0, 1]], match=r"keypoint 1 is outside \[0, 1\] .*1 more"
            ),
        ],
    )


def test_conformance_with_records_of_no_keypoints(codec_conformance: Conformance) -> None:
    report = codec_conformance(
        KeypointsCodec({"visibility": True}),
        [CodecCase(np.zeros((0, 3), np.float32), id="none"), CodecCase(_points(2, visibility=True))],
    )
    assert "sequence field: tf.data batched decode" in report.checks


# -- decoding details the kit does not cover ----------------------------------------------


def test_tf_decode_shapes_and_empty_records(tmp_path: Path) -> None:
    import tensorflow as tf

    schema = rk.Schema(
        name="poses",
        fields={
            "fixed": rk.FieldSpec(codec="keypoints", options={"num_keypoints": 2, "visibility": True}),
            "free": rk.FieldSpec(codec="keypoints", options={"visibility": True}),
        },
    )
    bound = schema.bind(rk.load_plugins().registry)
    encoder = rk.RecordEncoder(bound)
    records = [
        {"fixed": [[1, 2, 2], [3, 4, 0]], "free": np.zeros((0, 3))},
        {"fixed": [[5, 6, 1], [7, 8, 2]], "free": [[9, 10, 1], [11, 12, 2], [13, 14, 0]]},
    ]
    batch = tf.constant([encoder.encode(r, i) for i, r in enumerate(records)])
    out = rk.make_parser(bound)(batch)
    assert out["fixed"].shape == (2, 2, 3)
    assert out["fixed"].dtype == tf.float32
    np.testing.assert_array_equal(out["fixed"].numpy()[1], [[5, 6, 1], [7, 8, 2]])
    free = out["free"]
    assert isinstance(free, tf.RaggedTensor)
    assert free.row_lengths().numpy().tolist() == [0, 3]
    assert free.flat_values.shape == (3, 3)
    np.testing.assert_array_equal(free[1].numpy(), records[1]["free"])


def test_the_generated_parser_decodes_as_decode_tf_does() -> None:
    """``recordkit codegen`` copies decode_keypoints_tf, the function decode_tf runs: the
    generated module and recordkit's parser give the same values."""
    import tensorflow as tf

    schema = rk.Schema(
        name="poses",
        fields={
            "fixed": rk.FieldSpec(codec="keypoints", options={"num_keypoints": 2, "visibility": True}),
            "free": rk.FieldSpec(codec="keypoints"),
        },
    )
    bound = schema.bind(rk.load_plugins().registry)
    source = bound["fixed"].codec.decode_tf_source()
    assert source is not None
    assert source.function is decode_keypoints_tf
    records = [
        {"fixed": [[1, 2, 2], [3, 4, 0]], "free": np.zeros((0, 2))},
        {"fixed": [[5, 6, 1], [7, 8, 2]], "free": [[9, 10], [11, 12], [13, 14]]},
    ]
    batch = tf.constant([rk.RecordEncoder(bound).encode(r, i) for i, r in enumerate(records)])
    namespace: dict[str, Any] = {}
    exec(compile(rk.generate_parser_code(bound), "<generated>", "exec"), namespace)
    generated, parsed = namespace["parse"](batch), rk.make_parser(bound)(batch)
    assert (
        generated["fixed"].numpy().tolist()
        == parsed["fixed"].numpy().tolist()
        == [
            [[1, 2, 2], [3, 4, 0]],
            [[5, 6, 1], [7, 8, 2]],
        ]
    )
    assert generated["free"].to_list() == parsed["free"].to_list() == [[], [[9, 10], [11, 12], [13, 14]]]


@settings(deadline=None, max_examples=50)
@given(
    hnp.arrays(
        np.float32,
        st.tuples(st.integers(0, 12), st.just(2)),
        elements=st.floats(-1e6, 1e6, width=32),
    )
)
def test_numpy_round_trip_is_exact(points: np.ndarray) -> None:
    codec = KeypointsCodec()
    wire = codec.encode(points)
    decoded = codec.decode_numpy({"": np.asarray(wire[""]).reshape(-1, 2)})
    assert decoded.dtype == np.float32
    np.testing.assert_array_equal(decoded, points)


# -- options ---------------------------------------------------------------------------


def test_names_fix_the_count() -> None:
    options = KeypointsOptions(names=("head", "tail"))
    assert options.count == 2
    assert KeypointsCodec(options).wire_spec()[""].shape == (2, 2)
    assert KeypointsCodec().wire_spec()[""].shape == (None, 2)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"names": ["a", "a"]}, "names must be unique"),
        ({"names": ["a", "b"], "num_keypoints": 3}, "num_keypoints is 3 but 2 names"),
        ({"num_keypoints": 0}, "num_keypoints"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_options_name_the_field(options: dict[str, Any], match: str) -> None:
    schema = rk.Schema(name="s", fields={"pose": rk.FieldSpec(codec="keypoints", options=options)})
    with pytest.raises(rk.errors.CodecOptionsError, match=match) as info:
        schema.bind(rk.load_plugins().registry)
    assert info.value.field == "pose"
    assert "codec 'keypoints'" in str(info.value)
