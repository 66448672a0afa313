"""The codec contract: wire specs, the Codec base class, the registry and plugin loading.

The bottom layer: everything else builds on what a codec promises."""
