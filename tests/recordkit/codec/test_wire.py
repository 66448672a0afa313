"""Wire specs (sdk/recordkit/codec/_wire.py): what one field becomes inside an Example."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from recordkit.codec._wire import WireFeature, WireKind, WireSpec, wire_key


@pytest.mark.parametrize("kind", list(WireKind))
def test_kinds_name_the_dtypes_parse_example_produces(kind: WireKind) -> None:
    default = {WireKind.BYTES: b"", WireKind.INT64: 0, WireKind.FLOAT: 0.0}[kind]
    spec = {"k": tf.io.FixedLenFeature([], tf.as_dtype(kind.tf_dtype_name), default_value=default)}
    empty = tf.train.Example().SerializeToString()
    parsed = tf.io.parse_example(tf.constant([empty]), spec)["k"]
    assert parsed.dtype.name == kind.tf_dtype_name
    assert np.asarray(parsed.numpy()).dtype == kind.numpy_dtype


def test_fixed_feature() -> None:
    feature = WireFeature("rgb", WireKind.FLOAT, (4, 3))
    assert feature.is_fixed
    assert feature.fixed_size == 12
    assert feature.inner_shape == (3,)
    assert feature.as_dict() == {"name": "rgb", "kind": "float", "shape": [4, 3]}


def test_scalar_feature() -> None:
    feature = WireFeature("", WireKind.INT64)
    assert feature.shape == ()
    assert feature.is_fixed
    assert feature.fixed_size == 1
    assert feature.inner_shape == ()


def test_variable_feature() -> None:
    feature = WireFeature("boxes", WireKind.FLOAT, (None, 4))
    assert not feature.is_fixed
    assert feature.inner_shape == (4,)
    with pytest.raises(ValueError, match="variable shape"):
        _ = feature.fixed_size


@pytest.mark.parametrize(
    ("shape", "match"),
    [
        ((3, None), "only the first dimension may be None"),
        ((None, None), "only the first dimension may be None"),
        ((-1,), "negative dimension"),
    ],
)
def test_invalid_shapes(shape: tuple[int | None, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        WireFeature("x", WireKind.INT64, shape)


def test_spec_lookup_and_order() -> None:
    spec = WireSpec((WireFeature("", WireKind.BYTES), WireFeature("shape", WireKind.INT64, (3,))))
    assert spec.names == ("", "shape")
    assert [f.name for f in spec] == ["", "shape"]
    assert spec["shape"].shape == (3,)
    with pytest.raises(KeyError):
        spec["nope"]
    assert spec.as_dict() == {
        "features": [
            {"name": "", "kind": "bytes", "shape": []},
            {"name": "shape", "kind": "int64", "shape": [3]},
        ],
        "in_graph": True,
    }


def test_spec_needs_unique_names_and_at_least_one_feature() -> None:
    with pytest.raises(ValueError, match="duplicate feature names"):
        WireSpec((WireFeature("a", WireKind.BYTES), WireFeature("a", WireKind.INT64)))
    with pytest.raises(ValueError, match="at least one feature"):
        WireSpec(())


def test_specs_compare_by_value() -> None:
    def make() -> WireSpec:
        return WireSpec((WireFeature("", WireKind.FLOAT, (None, 2)),), in_graph=False)

    assert make() == make()
    assert hash(make()) == hash(make())


def test_wire_keys() -> None:
    assert wire_key("image", "") == "image"
    assert wire_key("image", "shape") == "image/shape"
    assert wire_key("image", "", {"": "image/encoded"}) == "image/encoded"
    assert wire_key("image", "shape", {"": "image/encoded"}) == "image/shape"
