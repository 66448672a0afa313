"""The sizes of a split's pictures, as ``dataset.json`` records them (format 6).

The writer sees the height and width of every picture it stores (the codec's
:attr:`~recordkit.Raster.size_features`), and records per split and picture field the
smallest and largest of each side (``"picture_sizes": {"image": {"min_height": ...}}``).
A reader that resizes decides from them, once per field, how every picture of the
field decodes (a JPEG at one libjpeg scale for all, or at full size), instead of
deciding record by record in the ``tf.data`` graph, where the branch costs CPU at every
record.

The sizes are a promise about the pictures, never used to allocate anything: a value a
manifest states wrongly only makes the reader decode at another scale than the best
(the pixels then resize from a smaller or larger decode, with the shapes checked as
ever). A split written before (or appended to by a writer that does not record them)
has none, and readers decide record by record as they always did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pydantic

from recordkit.dataset._shard_info import StrictModel
from recordkit.schema._encoder import SidesSeen

__all__ = ["MAX_PICTURE_SIDE", "PictureSizes", "SidesSeen", "common_sizes", "merge_sides", "sizes_from_seen"]

#: The largest side a manifest may state (pixels): far above any picture a codec stores.
MAX_PICTURE_SIDE = 1 << 24


class PictureSizes(StrictModel):
    """The smallest and largest height and width of one field's pictures in a split."""

    min_height: int = pydantic.Field(ge=1, le=MAX_PICTURE_SIDE, description="Smallest height, in pixels.")
    max_height: int = pydantic.Field(ge=1, le=MAX_PICTURE_SIDE, description="Largest height, in pixels.")
    min_width: int = pydantic.Field(ge=1, le=MAX_PICTURE_SIDE, description="Smallest width, in pixels.")
    max_width: int = pydantic.Field(ge=1, le=MAX_PICTURE_SIDE, description="Largest width, in pixels.")
    full_size_only: bool = pydantic.Field(
        default=False,
        description="Some pictures decode at full size only (a PNG among JPEGs): no scale is chosen for all.",
    )

    @pydantic.model_validator(mode="after")
    def _ordered(self) -> PictureSizes:
        if self.min_height > self.max_height or self.min_width > self.max_width:
            raise ValueError(
                f"picture sizes: the smallest side exceeds the largest (height {self.min_height} to "
                f"{self.max_height}, width {self.min_width} to {self.max_width})"
            )
        return self

    def merged(self, other: PictureSizes) -> PictureSizes:
        """The sizes of both sets of pictures together."""
        return PictureSizes(
            min_height=min(self.min_height, other.min_height),
            max_height=max(self.max_height, other.max_height),
            min_width=min(self.min_width, other.min_width),
            max_width=max(self.max_width, other.max_width),
            full_size_only=self.full_size_only or other.full_size_only,
        )


def merge_sides(into: SidesSeen, seen: SidesSeen) -> SidesSeen:
    """Add the sides ``seen`` of some pictures to those ``into`` holds (changed in place,
    and returned): per field the smallest and largest height and width, and whether
    any decodes at full size only. The writers' parts that encode apart (worker
    processes, Beam's workers) are merged by it."""
    for name, (min_height, max_height, min_width, max_width, full_size_only) in seen.items():
        sides = into.get(name)
        if sides is None:
            into[name] = [min_height, max_height, min_width, max_width, full_size_only]
        else:
            into[name] = [
                min(sides[0], min_height),
                max(sides[1], max_height),
                min(sides[2], min_width),
                max(sides[3], max_width),
                sides[4] | full_size_only,
            ]
    return into


def sizes_from_seen(
    seen: SidesSeen, before: Mapping[str, PictureSizes] | None, *, had_records: bool
) -> dict[str, PictureSizes] | None:
    """The sizes a split lists after a write that saw ``seen``, merged with those it
    listed ``before`` the write. A split that ``had_records`` before gets sizes only for
    the fields it listed (its older pictures of another field are unknown); None when
    nothing is known. Sides outside what a manifest may state are left out (the field's
    sizes unknown)."""
    out = dict(before or {})
    for name, (min_height, max_height, min_width, max_width, full_size_only) in seen.items():
        if had_records and name not in out:
            continue
        try:
            sizes = PictureSizes(
                min_height=min_height,
                max_height=max_height,
                min_width=min_width,
                max_width=max_width,
                full_size_only=bool(full_size_only),
            )
        except pydantic.ValidationError:
            out.pop(name, None)
            continue
        previous = out.get(name)
        out[name] = sizes if previous is None else previous.merged(sizes)
    return out or None


def common_sizes(splits: Iterable[Mapping[str, PictureSizes] | None]) -> dict[str, PictureSizes]:
    """The sizes of the pictures of several splits read together: a field's only when
    every split lists it."""
    listed = list(splits)
    if not listed or any(sizes is None for sizes in listed):
        return {}
    out: dict[str, PictureSizes] = {}
    for name in set.intersection(*(set(sizes or {}) for sizes in listed)):
        merged = None
        for sizes in listed:
            merged = (sizes or {})[name] if merged is None else merged.merged((sizes or {})[name])
        assert merged is not None
        out[name] = merged
    return out
