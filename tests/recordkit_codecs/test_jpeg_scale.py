"""The image codec's decode at a reduced scale (``decode_tf_scaled``,
``decode_numpy_scaled``): the scale chosen, and the same pixels in both readers."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from _photos import JPEG_KINDS, jpeg, photo

import recordkit as rk
from recordkit_codecs._jpeg_scale import jpeg_scale, jpeg_scale_tf


def _codec(**options: Any) -> Any:
    bound = rk.Schema(name="t", fields={"photo": rk.FieldSpec(codec="image", options=options)}).bind()
    return bound.fields[0].codec


def _one(wire: dict[str, Any]) -> dict[str, Any]:
    """Wire values as a tf.data batch of one record gives them."""
    return {key: tf.constant([value]) for key, value in wire.items()}


def _tf_scaled(codec: Any, wire: dict[str, Any], cover: tuple[int, int]) -> tuple[Any, Any, int]:
    """What tf.data decodes for a resize to ``cover``: the pixels (None at scale 1, which
    takes the plain decode), the full shape (None at scale 1) and the scale."""
    scale = int(codec.decode_scale_tf(_one(wire), cover))
    if scale == 1:
        return None, None, 1
    pixels, shape = codec.decode_tf_scaled(_one(wire), tf.constant(scale))
    return pixels.numpy(), shape.numpy().tolist(), scale


def test_the_scale_is_the_largest_whose_decode_still_covers_the_target() -> None:
    assert jpeg_scale(1792, 1792, (224, 224)) == 8
    assert jpeg_scale(1791, 1792, (224, 224)) == 4  # 1791 / 8 is under 224 rows
    assert jpeg_scale(2048, 900, (224, 224)) == 4  # the narrow side decides
    assert jpeg_scale(448, 448, (224, 224)) == 2
    assert jpeg_scale(447, 4000, (224, 224)) == 1
    assert jpeg_scale(320, 320, (224, 224)) == 1
    assert jpeg_scale(100, 2000, (10, 1000)) == 2  # each side against its own target


def test_tensorflow_chooses_the_scale_by_the_same_rule() -> None:
    covers = [(224, 224), (10, 1000), (300, 200), (1, 1), (2, 3)]
    sides = [1, 2, 5, 7, 8, 9, 17, 223, 447, 448, 895, 896, 1791, 1792, 4000]
    for cover, height, width in itertools.product(covers, sides, sides):
        assert int(jpeg_scale_tf(tf.constant(height, tf.int64), tf.constant(width, tf.int64), cover)) == (
            jpeg_scale(height, width, cover)
        ), (cover, height, width)


@pytest.mark.parametrize("kind", list(JPEG_KINDS))
@pytest.mark.parametrize("sizes", ["stored", "header"])
def test_both_readers_decode_a_jpeg_at_each_scale_to_the_same_pixels(kind: str, sizes: str) -> None:
    """At 1/1, 1/2, 1/4 and 1/8, sides that are multiples of 8 and sides that are not:
    TensorFlow's decode_jpeg(ratio=) and the numpy reader's simplejpeg give the same
    pixels (tolerance 0), of ceil(side / scale) pixels, with the full shape and the scale."""
    codec = _codec(format="keep", sizes=sizes)
    for seed, (height, width) in enumerate([(1024, 768), (1001, 1283), (450, 333)]):
        data = jpeg(photo(height, width, seed), kind)
        wire = codec.encode(data)
        channels = 1 if JPEG_KINDS[kind][1] else 3
        for cover in [(1000, 1000), (250, 160), (120, 90), (56, 40)]:
            scale = jpeg_scale(height, width, cover)
            pixels, shape, got_scale = codec.decode_numpy_scaled(wire, cover)
            assert got_scale == scale
            assert shape == (height, width, channels)
            assert pixels.shape == (-(-height // scale), -(-width // scale), channels)
            tf_pixels, tf_shape, tf_scale = _tf_scaled(codec, wire, cover)
            assert tf_scale == scale
            if scale == 1:  # no scale applies: the full decode's pixels
                np.testing.assert_array_equal(pixels, codec.decode_numpy(wire))
                continue
            assert tf_shape == [height, width, channels]
            np.testing.assert_array_equal(tf_pixels, pixels)


def test_a_png_decodes_at_full_size() -> None:
    codec = _codec(format="png")
    wire = codec.encode(photo(900, 700, 1))
    pixels, shape, scale = codec.decode_numpy_scaled(wire, (100, 100))
    assert scale == 1
    assert shape == (900, 700, 3)
    np.testing.assert_array_equal(pixels, codec.decode_numpy(wire))
    assert codec.decode_scale_tf(_one(wire), (100, 100)) is None  # tf.data: the plain decode
    keep = _codec(format="keep")  # PNG and JPEG alike: the PNG's scale is 1
    assert int(keep.decode_scale_tf(_one(keep.encode(photo(900, 700, 1))), (100, 100))) == 1


def test_a_record_whose_stored_size_is_not_its_jpegs_is_refused_at_any_scale() -> None:
    codec = _codec(format="keep")
    wire = dict(codec.encode(jpeg(photo(800, 800, 2), "4:2:0")))
    wire["height"] = 640  # the header says 800
    with pytest.raises(rk.errors.DecodeError, match="the record stores"):
        codec.decode_numpy_scaled(wire, (100, 100))
    with pytest.raises(tf.errors.InvalidArgumentError, match="differs from the height, width and channels"):
        _tf_scaled(codec, wire, (100, 100))


@pytest.mark.parametrize("kind", ["4:2:0", "gray"])
def test_tiny_jpegs_decode_alike_in_both_readers(kind: str) -> None:
    """Pictures of a few pixels, where another of libjpeg-turbo's factors (3/8 ...) gives
    the size of 1/2 or 1/4 with other pixels: the two readers still agree (pictures under
    8 pixels a side decode at full size)."""
    codec = _codec(format="keep")
    rng = np.random.default_rng(5)
    for height, width in itertools.product([3, 5, 7, 8, 9, 17], [3, 8, 9, 17]):
        wire = codec.encode(jpeg(rng.integers(0, 256, (height, width, 3)).astype(np.uint8), kind))
        for cover in [(1, 1), (2, 1), (1, 3)]:
            pixels, _, scale = codec.decode_numpy_scaled(wire, cover)
            tf_pixels, _, tf_scale = _tf_scaled(codec, wire, cover)
            assert tf_scale == scale == jpeg_scale(height, width, cover)
            if scale > 1:
                np.testing.assert_array_equal(tf_pixels, pixels, err_msg=f"{height}x{width} {cover}")
