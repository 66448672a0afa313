"""``add_fields`` that SIGKILLs itself at a chosen moment (run as a subprocess by the suite).

Usage: python _killed_add_fields.py ROOT KIND K

KIND is ``record`` (the K-th record added to a group shard), ``shard-rename`` (before the
K-th group shard's rename), ``manifest-rename`` (before the K-th save of dataset.json) or
``fsync`` (before the K-th fsync). The group's values are ``DOUBLED``: each record's id
times two, given as an iterable.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _fault_support import SCORES, doubled
from _kill_hooks import install

import recordkit as rk

root, kind, k = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
install(kind, k)
rk.add_fields(root, "train", SCORES, doubled(root))
