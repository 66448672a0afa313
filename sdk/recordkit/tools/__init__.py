"""Tools built on the layers below: standalone parser code, and schemas for TFRecords
recordkit did not write."""
