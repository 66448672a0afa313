"""Batched, graph-safe WAV decoding for the ``audio`` codec (and its generated parsers).

A ``tf.while_loop`` over the batch decodes each record's WAV bytes with
``tf.audio.decode_wav`` (iterations run in parallel) and checks the file's sample rate
and ``[samples, channels]`` against the schema and the stored ``num_samples``. Each
waveform is written flat into a ``tf.TensorArray`` and the batch is concatenated once
into a ``tf.RaggedTensor`` ``[B, (samples), channels]``: one copy of the samples, where
``tf.map_fn`` with a ragged output signature copied every waveform three times.
TensorFlow is imported by the caller's ``decode_tf`` only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["decode_wav_batch"]


def decode_wav_batch(encoded: Any, counts: Any, *, channels: int, sample_rate: int) -> Any:
    """Decode a ``[B]`` string tensor of WAV files holding ``counts`` ``[B]`` samples each
    to float32 ``[B, (samples), channels]`` in [-1, 1)."""
    import tensorflow as tf

    encoded = tf.reshape(encoded, [-1])
    counts = tf.cast(tf.reshape(counts, [-1]), tf.int64)
    size = tf.shape(encoded)[0]

    def body(index: Any, samples: Any) -> Any:
        audio, file_rate = tf.audio.decode_wav(encoded[index])
        checks = [
            tf.debugging.assert_equal(
                file_rate, sample_rate, message=f"audio codec: the WAV sample rate is not {sample_rate} Hz"
            ),
            tf.debugging.assert_equal(
                tf.shape(audio, out_type=tf.int64),
                tf.stack([counts[index], tf.constant(channels, tf.int64)]),
                message=(
                    "audio codec: the decoded WAV [samples, channels] differs from "
                    f"num_samples and the schema's channels ({channels})"
                ),
            ),
        ]
        with tf.control_dependencies(checks):
            flat = tf.reshape(audio, [-1])
        return index + 1, samples.write(index, flat)

    # Flat 1-D elements: their concatenation is defined for an empty batch too.
    samples = tf.TensorArray(tf.float32, size=size, infer_shape=False, element_shape=tf.TensorShape([None]))
    _, samples = tf.while_loop(lambda index, _: index < size, body, (tf.constant(0), samples))
    values = tf.reshape(samples.concat(), [-1, channels])
    return tf.RaggedTensor.from_row_lengths(values, counts, validate=False)
