"""recordkit's benchmarks against the alternatives users would otherwise write.

Run them with ``python benchmarks/run.py`` (see benchmarks/README.md and
docs/performance.md). The modules here are not part of the recordkit distribution.
"""
