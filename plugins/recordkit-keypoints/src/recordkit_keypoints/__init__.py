"""recordkit-keypoints: a ``keypoints`` codec and a ``pose_folder`` source for
recordkit, shipped as a plugin.

recordkit finds this package through the entry points it declares (group
``recordkit``, names ``keypoints`` and ``poses``); importing it is only needed to use its
classes directly.
"""

from __future__ import annotations

import importlib.metadata

from recordkit_keypoints.keypoints import COCO_PERSON_KEYPOINTS, KeypointsCodec, KeypointsOptions
from recordkit_keypoints.poses import PoseFolderSource

__all__ = ["COCO_PERSON_KEYPOINTS", "KeypointsCodec", "KeypointsOptions", "PoseFolderSource", "__version__"]

try:
    __version__ = importlib.metadata.version("recordkit-keypoints")
except importlib.metadata.PackageNotFoundError:  # imported from a source tree
    __version__ = "0.0.0+unknown"
