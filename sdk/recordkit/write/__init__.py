"""Writing: shard files that appear only when complete, worker processes, rejects,
progress, and the writer that commits the manifest last."""
