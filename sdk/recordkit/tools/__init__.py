"""Tools built on the layers below: standalone parser code, schemas for TFRecords
recordkit did not write, and what the CLI and the viewer share (record pictures, field
statistics, shard checks, one-line errors)."""
