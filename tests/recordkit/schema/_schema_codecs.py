"""A small third-party-style codec for the schema tests, registered through a plugin.

``vector`` stores a fixed-size float vector; its ``like`` option names another vector
field of the record whose length must match (a related field, as bbox's image_field).
It is declared exactly as a third-party plugin would be: a hookimpl that registers it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import pydantic

import recordkit as rk
import recordkit_codecs.scalar


class VectorOptions(rk.CodecOptions):
    size: int = pydantic.Field(ge=1, le=1024, description="How many floats each record holds.")
    scale: float = pydantic.Field(default=1.0, gt=0, description="Values are stored divided by this.")
    like: str | None = pydantic.Field(default=None, description="A vector field of equal size.")


class VectorCodec(rk.Codec[VectorOptions]):
    name = "vector"
    version = "1"
    options_model = VectorOptions

    def wire_spec(self) -> rk.WireSpec:
        return rk.WireSpec((rk.WireFeature("", rk.WireKind.FLOAT, (self.options.size,)),))

    def encode(self, value: Any) -> rk.WireValues:
        try:
            array = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise rk.errors.InvalidValueError(f"not a vector of numbers: {exc}") from None
        if array.shape != (self.options.size,):
            raise rk.errors.InvalidValueError(f"expected {self.options.size} values, got shape {array.shape}")
        return {"": array / self.options.scale}

    def decode_numpy(self, wire: Mapping[str, Any]) -> Any:
        return np.asarray(wire[""], np.float32) * self.options.scale

    def decode_tf(self, wire: Mapping[str, Any]) -> Any:
        return wire[""] * self.options.scale

    def related_fields(self) -> tuple[str, ...]:
        return (self.options.like,) if self.options.like else ()

    def check_related(self, wire: rk.WireValues, related: Mapping[str, rk.WireValues]) -> None:
        for name, other in related.items():
            if len(other[""]) != len(wire[""]):
                raise rk.errors.InvalidValueError(
                    f"has {len(wire[''])} values but field {name!r} has {len(other[''])}"
                )


@rk.hookimpl
def recordkit_register_codecs(registry: rk.CodecRegistry) -> None:
    registry.register(VectorCodec)


def registry() -> rk.CodecRegistry:
    """Only ``scalar`` (the built-in plugin) and ``vector`` (this plugin): tests that use
    it do not depend on the other built-in codecs."""
    plugins = rk.load_plugins(
        entry_points=False,
        extra_plugins=[("scalar", recordkit_codecs.scalar), ("schema-test-vector", sys.modules[__name__])],
    )
    return plugins.registry
