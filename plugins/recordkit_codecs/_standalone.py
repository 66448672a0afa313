"""The built-in codecs' TensorFlow decodes as standalone code, for generated parsers.

``recordkit codegen`` writes parser modules that run with TensorFlow alone. Each
built-in codec's :meth:`~recordkit.Codec.decode_tf_source` returns one of the
``*_source(options)`` below: a :class:`recordkit.DecodeSource` naming a ``decode_*``
function of this module (what the codec's ``decode_tf`` does, with the options passed
in as plain constants) and the codec module's own TensorFlow helpers it calls, so
shared helpers are copied rather than rewritten. The functions here use only
TensorFlow: the generator copies their source into the generated module.

The tests of generated parsers compare them with ``recordkit.make_parser`` on real
records of every codec, so a decode here cannot drift from its codec unnoticed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import recordkit as rk
from recordkit_codecs._tf_images import decode_image_batch
from recordkit_codecs.bbox import _convert, _convert_dense_tf, _to_xyxy
from recordkit_codecs.tensor import _nest

if TYPE_CHECKING:
    from recordkit_codecs.audio import AudioOptions
    from recordkit_codecs.bbox import BBoxOptions
    from recordkit_codecs.image import ImageOptions
    from recordkit_codecs.label import LabelOptions
    from recordkit_codecs.mask import MaskOptions
    from recordkit_codecs.scalar import ScalarOptions
    from recordkit_codecs.tensor import TensorOptions

__all__ = [
    "audio_source",
    "bbox_source",
    "image_source",
    "label_source",
    "mask_source",
    "scalar_source",
    "tensor_source",
    "text_source",
]


# -- the sources, by codec ------------------------------------------------------------


def scalar_source(options: ScalarOptions) -> rk.DecodeSource:
    return rk.DecodeSource(decode_scalar, {"dtype": options.dtype})


def text_source() -> rk.DecodeSource:
    return rk.DecodeSource(decode_text)


def label_source(options: LabelOptions) -> rk.DecodeSource:
    return rk.DecodeSource(decode_label, {"multi_hot": options.multi_hot, "class_count": options.class_count})


def bbox_source(options: BBoxOptions) -> rk.DecodeSource:
    return rk.DecodeSource(
        decode_bbox,
        {"fmt": options.format, "labels": options.labels is not None, "extras": list(options.extras)},
        helpers=(_to_xyxy, _convert, _convert_dense_tf),
    )


def image_source(options: ImageOptions) -> rk.DecodeSource:
    fixed = (options.height, options.width) if options.height and options.width else None
    return rk.DecodeSource(
        decode_image,
        {"fmt": options.format, "channels": options.channels, "fixed_size": fixed},
        helpers=(decode_image_batch,),
    )


def mask_source(options: MaskOptions) -> rk.DecodeSource:
    fixed = (options.height, options.width) if options.height and options.width else None
    return rk.DecodeSource(decode_mask, {"fixed_size": fixed}, helpers=(decode_image_batch,))


def audio_source(options: AudioOptions) -> rk.DecodeSource | None:
    if options.format not in ("wav", "pcm"):
        return None  # FLAC has no TensorFlow op: its decode calls back into Python
    return rk.DecodeSource(
        decode_audio,
        {"fmt": options.format, "channels": options.channels, "sample_rate": options.sample_rate},
    )


def tensor_source(options: TensorOptions) -> rk.DecodeSource:
    import numpy as np

    return rk.DecodeSource(
        decode_tensor,
        {
            "dtype": options.dtype,
            "itemsize": np.dtype(options.dtype).itemsize,
            "shape": None if options.shape is None else list(options.shape),
        },
        helpers=(_nest,),
    )


# -- the standalone decodes (TensorFlow only: copied into generated modules) ----------


def decode_scalar(wire: Mapping[str, Any], dtype: str) -> Any:
    import tensorflow as tf

    value = wire[""]
    if dtype == "bool":
        return tf.not_equal(value, 0)
    if dtype == "int32":
        return tf.cast(value, tf.int32)
    if dtype == "float64":
        return tf.bitcast(value, tf.float64)
    return value


def decode_text(wire: Mapping[str, Any]) -> Any:
    return wire[""]


def decode_label(wire: Mapping[str, Any], multi_hot: bool, class_count: int | None) -> Any:
    ids = wire[""]
    if not multi_hot:
        return ids
    import tensorflow as tf

    index = tf.stack([ids.value_rowids(), ids.values], axis=1)
    shape = tf.stack([ids.nrows(), tf.constant(class_count, tf.int64)])
    hot = tf.scatter_nd(index, tf.ones_like(ids.values, tf.float32), shape)
    return tf.minimum(hot, 1.0)


def decode_bbox(wire: Mapping[str, Any], fmt: str, labels: bool, extras: list[str]) -> Any:
    import tensorflow as tf

    stored = wire[""]
    flat = tf.reshape(stored.flat_values, [-1, 4])
    boxes = tf.RaggedTensor.from_row_splits(
        _convert_dense_tf(flat, "xyxy", fmt), stored.row_splits, validate=False
    )
    if not labels and not extras:
        return boxes
    out = {"boxes": boxes}
    if labels:
        out["labels"] = wire["labels"]
    for name in extras:
        out[name] = wire[name]
    return out


def decode_image(
    wire: Mapping[str, Any], fmt: str, channels: int | None, fixed_size: tuple[int, int] | None
) -> Any:
    import tensorflow as tf

    depth = channels or 0

    def jpeg(data: Any) -> Any:
        return tf.io.decode_jpeg(data, channels=depth, dct_method="INTEGER_ACCURATE")

    def png(data: Any) -> Any:
        return tf.io.decode_png(data, channels=depth, dtype=tf.uint8)

    def decode_one(data: Any) -> Any:
        if fmt == "jpeg":
            return jpeg(data)
        if fmt == "png":
            return png(data)
        return tf.cond(tf.io.is_jpeg(data), lambda: jpeg(data), lambda: png(data))

    return decode_image_batch(
        wire[""],
        wire["height"],
        wire["width"],
        wire["channels"],
        decode_one=decode_one,
        static_channels=channels,
        fixed_size=fixed_size,
        codec="image",
    )


def decode_mask(wire: Mapping[str, Any], fixed_size: tuple[int, int] | None) -> Any:
    import tensorflow as tf

    decoded = decode_image_batch(
        wire[""],
        wire["height"],
        wire["width"],
        None,
        decode_one=lambda data: tf.io.decode_png(data, channels=1, dtype=tf.uint8),
        static_channels=1,
        fixed_size=fixed_size,
        codec="mask",
    )
    if isinstance(decoded, tf.RaggedTensor):
        return decoded.with_flat_values(tf.reshape(decoded.flat_values, [-1]))
    return tf.squeeze(decoded, axis=-1)


def decode_audio(wire: Mapping[str, Any], fmt: str, channels: int, sample_rate: int) -> Any:
    import tensorflow as tf

    scale = 32768.0
    encoded = tf.reshape(wire[""], [-1])
    counts = tf.cast(tf.reshape(wire["num_samples"], [-1]), tf.int64)
    if fmt == "pcm":
        sizes = tf.cast(tf.strings.length(encoded), tf.int64)
        check = tf.debugging.assert_equal(
            sizes,
            counts * channels * 2,
            message=f"audio codec: raw PCM byte length differs from num_samples x {channels} channels x 2",
        )
        with tf.control_dependencies([check]):
            joined = tf.strings.reduce_join(encoded)
        flat = tf.io.decode_raw(joined, tf.int16, little_endian=True)
        values = tf.cast(tf.reshape(flat, [-1, channels]), tf.float32) / scale
        return tf.RaggedTensor.from_row_lengths(values, counts, validate=False)

    def one(args: Any) -> Any:
        data, count = args
        audio, file_rate = tf.audio.decode_wav(data)
        checks = [
            tf.debugging.assert_equal(
                file_rate, sample_rate, message=f"audio codec: the WAV sample rate is not {sample_rate} Hz"
            ),
            tf.debugging.assert_equal(
                tf.shape(audio, out_type=tf.int64),
                tf.stack([count, tf.constant(channels, tf.int64)]),
                message=(
                    "audio codec: the decoded WAV [samples, channels] differs from "
                    f"num_samples and the schema's channels ({channels})"
                ),
            ),
        ]
        with tf.control_dependencies(checks):
            return tf.identity(audio)

    signature = tf.RaggedTensorSpec(
        shape=[None, channels], dtype=tf.float32, ragged_rank=0, row_splits_dtype=tf.int64
    )
    decoded = tf.map_fn(one, (encoded, counts), fn_output_signature=signature)
    values = tf.reshape(decoded.flat_values, [-1, channels])
    return tf.RaggedTensor.from_row_lengths(values, counts, validate=False)


def decode_tensor(wire: Mapping[str, Any], dtype: str, itemsize: int, shape: list[int | None] | None) -> Any:
    import tensorflow as tf

    def decode_raw(data: Any) -> Any:
        if dtype == "bool":
            return tf.not_equal(tf.io.decode_raw(data, tf.uint8), 0)
        if dtype in ("uint32", "uint64"):  # decode_raw has no unsigned 32/64-bit output
            signed = tf.io.decode_raw(data, tf.int32 if dtype == "uint32" else tf.int64)
            return tf.bitcast(signed, tf.uint32 if dtype == "uint32" else tf.uint64)
        return tf.io.decode_raw(data, tf.as_dtype(dtype))

    data = wire[""]
    if shape is not None and None not in shape:
        return tf.reshape(decode_raw(data), [-1, *(int(d) for d in shape if d is not None)])
    dims = wire["shape"]
    counts = tf.reduce_prod(dims, axis=1)
    check = tf.debugging.assert_equal(
        tf.strings.length(data, unit="BYTE"),
        tf.cast(counts * itemsize, tf.int32),
        message=f"stored {dtype} tensor bytes do not match its stored shape",
    )
    with tf.control_dependencies([check]):
        flat = decode_raw(tf.strings.reduce_join(data))
    if shape is None:
        return {"values": tf.RaggedTensor.from_row_lengths(flat, counts), "shape": dims}
    return _nest(flat, dims, shape)
