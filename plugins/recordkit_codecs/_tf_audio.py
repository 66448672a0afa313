"""Batched, graph-safe WAV decoding for the ``audio`` codec (and its generated parsers).

The result is float32 ``[B, (samples), channels]`` in [-1, 1) (int16 / 32768), checked
against the schema's sample rate and channels and the stored ``num_samples``. Two paths
give the same values:

* when every WAV of the batch is canonical (the 44-byte header the codec writes: one
  ``fmt`` chunk of 16-bit PCM, then the ``data`` chunk to the end of the file), the
  headers are checked all at once and the samples of the whole batch are read with one
  ``tf.io.decode_raw``, about seven times faster than ``tf.audio.decode_wav``, which
  converts sample by sample;
* otherwise (WAVs written elsewhere, with other chunks) a ``tf.while_loop`` decodes each
  file with ``tf.audio.decode_wav``, writes its samples flat into a ``tf.TensorArray``
  and concatenates them once.

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
    header_size = 44
    lengths = tf.cast(tf.strings.length(encoded), tf.int64)

    def header_words() -> Any:
        # The 11 little-endian 32-bit words of every header; a record shorter than a header
        # is padded with zeros (it then fails the canonical check below).
        header = tf.strings.join([tf.strings.substr(encoded, 0, header_size), bytes(header_size)])
        header = tf.strings.substr(header, 0, header_size)
        return tf.cast(tf.reshape(tf.io.decode_raw(header, tf.int32), [-1, 11]), tf.int64)

    def canonical() -> Any:
        words = header_words()
        wav_channels = words[:, 5] // 65536
        expected = tf.stack(
            [
                tf.fill(tf.shape(lengths), tf.constant(0x46464952, tf.int64)),  # "RIFF"
                lengths - 8,
                tf.fill(tf.shape(lengths), tf.constant(0x45564157, tf.int64)),  # "WAVE"
                tf.fill(tf.shape(lengths), tf.constant(0x20746D66, tf.int64)),  # "fmt "
                tf.fill(tf.shape(lengths), tf.constant(16, tf.int64)),  # fmt chunk size
                1 + wav_channels * 65536,  # PCM, channels
                words[:, 6],  # sample rate: checked against the schema below
                words[:, 6] * 2 * wav_channels,  # bytes per second
                2 * wav_channels + 16 * 65536,  # block align, 16 bits per sample
                tf.fill(tf.shape(lengths), tf.constant(0x61746164, tf.int64)),  # "data"
                lengths - header_size,
            ],
            axis=1,
        )
        whole_frames = tf.equal(tf.math.floormod(lengths - header_size, 2 * tf.maximum(wav_channels, 1)), 0)
        return tf.reduce_all(tf.equal(words, expected)) & tf.reduce_all((wav_channels > 0) & whole_frames)

    def checked(rates: Any, shapes: Any) -> list[Any]:
        """The checks of each file's rate and ``[samples, channels]``, ``[B]`` and ``[B, 2]``
        (plain assertions with a string message: no conditional added to the graph)."""
        expected = tf.stack([counts, tf.fill(tf.shape(counts), tf.constant(channels, tf.int64))], axis=1)
        return [
            tf.debugging.Assert(
                tf.reduce_all(tf.equal(rates, sample_rate)),
                [f"audio codec: the WAV sample rate is not {sample_rate} Hz"],
            ),
            tf.debugging.Assert(
                tf.reduce_all(tf.equal(shapes, expected)),
                [
                    "audio codec: the decoded WAV [samples, channels] differs from "
                    f"num_samples and the schema's channels ({channels})"
                ],
            ),
        ]

    def fast() -> Any:
        words = header_words()
        wav_channels = words[:, 5] // 65536
        shapes = tf.stack([words[:, 10] // (2 * wav_channels), wav_channels], axis=1)
        with tf.control_dependencies(checked(words[:, 6], shapes)):
            data = tf.strings.reduce_join(tf.strings.substr(encoded, header_size, -1))
        samples = tf.cast(tf.io.decode_raw(data, tf.int16, little_endian=True), tf.float32) / 32768.0
        return tf.reshape(samples, [-1, channels])

    def body(index: Any, samples: Any, rates: Any, shapes: Any) -> Any:
        audio, file_rate = tf.audio.decode_wav(encoded[index])
        return (
            index + 1,
            samples.write(index, tf.reshape(audio, [-1])),
            rates.write(index, tf.cast(file_rate, tf.int64)),
            # A cast of the int32 shape, not tf.shape(out_type=int64): TensorFlow types a
            # Shape op's output as a shape tensor, which a list of int64 tensors refuses
            # ("Type inference failed ... invalid graph").
            shapes.write(index, tf.cast(tf.shape(audio), tf.int64)),
        )

    def one_by_one() -> Any:
        # Flat 1-D elements: their concatenation is defined for an empty batch too. The
        # checks come after the loop: an assertion inside it is a stateful op, which
        # makes TensorFlow run the iterations one by one.
        samples = tf.TensorArray(
            tf.float32, size=size, infer_shape=False, element_shape=tf.TensorShape([None])
        )
        rates = tf.TensorArray(tf.int64, size=size, element_shape=tf.TensorShape([]))
        shapes = tf.TensorArray(tf.int64, size=size, element_shape=tf.TensorShape([2]))
        _, samples, rates, shapes = tf.while_loop(
            lambda index, *_: index < size, body, (tf.constant(0), samples, rates, shapes)
        )
        with tf.control_dependencies(checked(rates.stack(), shapes.stack())):
            return tf.reshape(samples.concat(), [-1, channels])

    # An empty batch has no headers to look at: either path gives no samples.
    values = tf.cond(canonical() & (size > 0), fast, one_by_one)
    return tf.RaggedTensor.from_row_lengths(values, counts, validate=False)
