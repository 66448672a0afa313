"""Reading: opening a dataset's shards, the generated tf.data parser and pipeline,
and the numpy reader that needs no TensorFlow."""
