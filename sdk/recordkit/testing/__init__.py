"""recordkit.testing: the conformance kit for codec authors (filled in below)."""
