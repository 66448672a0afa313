"""The ``pose_folder`` source: a folder of images, each with a JSON file of keypoints beside it.

A layout many pose and landmark tools export::

    poses/
    ├── walk/0001.jpg
    ├── walk/0001.json      {"keypoints": [[12.5, 40, 2], [30, 41.5, 1], ...]}
    └── run/0002.png ...

Each image (``.jpg``, ``.jpeg``, ``.png``, in any folder under the root) with a ``.json``
of the same name beside it is one record: the image file (stored as its own bytes), its
keypoints as a ``K x 3`` array (x, y in pixels and COCO's visibility flag; ``K x 2``
with ``visibility=False``) and its file name relative to the root. An image without its
``.json``, a ``.json`` without its image, and a ``.json`` that is not such a list are bad
inputs, named with the file and the keypoint; other files are skipped.

This module imports only recordkit's public API, as every plugin should.
"""

from __future__ import annotations

# --8<-- [start:header]
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import recordkit as rk
from recordkit import sources

__all__ = ["MAX_KEYPOINTS_FILE_BYTES", "PoseFolderSource", "recordkit_register_sources"]

_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
#: The largest keypoints file read: a larger one is refused before a byte of it is read.
MAX_KEYPOINTS_FILE_BYTES = 1 << 20
# --8<-- [end:header]


# --8<-- [start:source]
class PoseFolderSource(sources.Source):
    """Images with a JSON file of keypoints beside each: image, keypoints and file name."""

    kind = "pose_folder"

    def __init__(
        self,
        root: str | Path,
        *,
        names: Sequence[str] = (),
        visibility: bool = True,
        on_error: sources.OnBadInput = "raise",
        allow_outside_root: bool = False,
    ) -> None:
        super().__init__(on_error=on_error, allow_outside_root=allow_outside_root)
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"names must be a list of keypoint names, not {names!r:.60}")
        if not isinstance(visibility, bool):
            raise TypeError(f"visibility must be true or false, not {visibility!r:.60}")
        self.root = Path(root)
        if not self.root.is_dir():
            raise rk.errors.InputError("no such folder", file=str(self.root))
        self.names = tuple(names)
        self.visibility = visibility

    def schema(self, name: str | None = None) -> rk.Schema:
        options: dict[str, Any] = {"visibility": self.visibility}
        if self.names:
            options["names"] = list(self.names)
        return rk.Schema(
            name=name or self.root.name,
            fields={
                "image": rk.FieldSpec(
                    codec="image", options={"format": "keep"}, description="the image file"
                ),
                "keypoints": rk.FieldSpec(
                    codec="keypoints", options=options, description="the points of the JSON file beside it"
                ),
                "file": rk.FieldSpec(codec="text", description="the image's name relative to the folder"),
            },
        )

    # --8<-- [end:source]

    # --8<-- [start:scan]
    def scan(self) -> Iterator[sources.SourceItem | sources.Skipped | rk.errors.InputError]:
        files = sorted(
            path
            for path in self.root.rglob("*")
            if path.is_file() and not any(p.startswith(".") for p in path.relative_to(self.root).parts)
        )
        images = {path.with_suffix("") for path in files if path.suffix.lower() in _IMAGE_SUFFIXES}
        for path in files:
            name = path.relative_to(self.root).as_posix()
            if path.suffix == ".json":
                if path.with_suffix("") not in images:
                    yield rk.errors.InputError("a keypoints file with no image beside it", file=str(path))
                continue
            if path.suffix.lower() not in _IMAGE_SUFFIXES:
                yield sources.Skipped(str(path), "not an image or a keypoints file")
                continue
            points_name = f"{name.rpartition('.')[0]}.json"
            try:
                # The containment rule: a symlink leading out of the root is a bad input.
                image = self.input_path(self.root, name, file=path)
                points = self.input_path(self.root, points_name, file=path)
                if not points.is_file():
                    raise rk.errors.InputError(f"no keypoints file {points_name!r} beside it", file=str(path))
                keypoints = self.read_keypoints(points)
            except rk.errors.InputError as error:
                yield error
                continue
            yield sources.SourceItem(name, {"image": image, "keypoints": keypoints, "file": name})

    # --8<-- [end:scan]

    # --8<-- [start:read_keypoints]
    def read_keypoints(self, path: Path) -> np.ndarray:
        """The keypoints file ``path`` as a ``K x 3`` (or ``K x 2``) array; an InputError
        naming the file, the keypoint and what is wrong."""
        size = path.stat().st_size
        if size > MAX_KEYPOINTS_FILE_BYTES:
            raise rk.errors.InputError(
                f"is {size} bytes, more than a keypoints file may be ({MAX_KEYPOINTS_FILE_BYTES})",
                file=str(path),
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, RecursionError):
            raise rk.errors.InputError("is not UTF-8 JSON of a sane depth", file=str(path)) from None
        except json.JSONDecodeError as error:
            raise rk.errors.InputError(
                f"is not JSON: {error.msg}", file=str(path), line=error.lineno
            ) from None
        points = data.get("keypoints") if isinstance(data, dict) else None
        if not isinstance(points, list):
            raise rk.errors.InputError(
                'must be an object with a "keypoints" list', file=str(path), field="keypoints"
            )
        width = 3 if self.visibility else 2
        for index, point in enumerate(points):
            problem = _point_problem(point, width)
            if problem is not None:
                raise rk.errors.InputError(
                    problem, file=str(path), entry=f"keypoint {index}", field="keypoints"
                )
        if self.names and len(points) != len(self.names):
            raise rk.errors.InputError(
                f"holds {len(points)} keypoints, but {len(self.names)} names are given",
                file=str(path),
                field="keypoints",
            )
        return np.array(points, dtype=np.float64).reshape(len(points), width)

    # --8<-- [end:read_keypoints]


# --8<-- [start:point_problem]
def _point_problem(point: object, width: int) -> str | None:
    """What is wrong with one keypoint of a file, or None."""
    layout = "x, y, visibility" if width == 3 else "x, y"
    if not isinstance(point, list) or len(point) != width:
        return f"must be a list of {width} numbers ({layout}), not {point!r:.60}"
    for value in point:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must hold numbers, not {value!r:.60}"
        if (isinstance(value, int) and abs(value) > 2**53) or not math.isfinite(value):
            return f"holds {value!r:.60}, not a finite coordinate"
    if width == 3 and point[2] not in (0, 1, 2):
        return f"has the visibility flag {point[2]!r}; COCO's flags are 0, 1 and 2"
    return None


# --8<-- [end:point_problem]


# --8<-- [start:hook]
@rk.hookimpl
def recordkit_register_sources(registry: sources.SourceRegistry) -> None:
    """Register the ``pose_folder`` source (``recordkit ingest pose_folder ROOT OUT``)."""
    registry.register("pose_folder", PoseFolderSource)


# --8<-- [end:hook]
