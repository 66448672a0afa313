"""A writer that SIGKILLs itself at a chosen moment (run as a subprocess by the suite).

Usage: python _killed_writer.py ROOT MODE KIND K N START WORKERS

MODE is write, append or resume, or append+score and resume+score: records that carry the
field ``score`` (their id times two) of the split's field group ``score``. KIND the
moment: ``record`` (the K-th record added to a shard), ``shard-rename`` (before the K-th
shard rename), ``manifest-rename`` (before the K-th manifest rename: K=0 is the very
first save, which leaves its temp file), ``after-rename`` (right after the K-th rename
of any kind) or ``fsync`` (before the K-th fsync). With WORKERS > 1 encoding starts in
worker processes at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _fault_support import SCHEMA, SCORES, records
from _kill_hooks import install

import recordkit as rk
from recordkit.write import _parallel  # private: worker processes from the first batch

root, mode, kind = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
k, n, start, workers = (int(a) for a in sys.argv[4:8])
install(kind, k)
if workers > 1:
    _parallel.START_AFTER_SECONDS = 0  # worker processes from the first batch
mode, scored = mode.removesuffix("+score"), mode.endswith("+score")
schema = rk.Schema(name=SCHEMA.name, fields={**SCHEMA.fields, **SCORES.fields}) if scored else SCHEMA
rows = ({**r, "score": 2 * r["id"]} for r in records(n, start)) if scored else records(n, start)
rk.write_dataset(
    rows,
    schema,
    root,
    "train",
    shard_records=7,
    workers=workers,
    append=mode == "append",
    resume=mode == "resume",
    progress=False,
)
