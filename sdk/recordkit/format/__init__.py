"""Bytes on disk, without a schema: tf.train.Example wire bytes and TFRecord framing."""
