"""pytest plugin of the conformance kit (filled in below)."""
