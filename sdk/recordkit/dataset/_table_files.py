"""Which shard table files a local dataset keeps when a save lists a split by a new one.

A save that lists a split by a new shard table keeps the table it replaces, the previous
generation: a reader that read the previous ``dataset.json`` and reads its table after
(a process it starts, a rank that was handed the manifest) still finds it. The table
before that one is removed, so each split keeps at most its current table and the
previous one. The name of the previous one is noted in ``.<split>.shards.kept`` beside
them (a writer's note, not part of the dataset; readers never open it), so that the
next save, in this process or another, removes it without listing a folder of a million
shards. On an object store no table is removed (see ``Manifest.save``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["keep_previous_table"]


def _note(root: Path, split: str) -> Path:
    return root / f".{split}.shards.kept"


def keep_previous_table(root: Path, split: str, replaced: str, current: str | None) -> None:
    """After a save of the manifest in ``root`` that lists ``split`` by ``current`` (None:
    no table any more) instead of ``replaced``: remove the table kept from the save
    before, and note ``replaced`` as the one kept now."""
    note = _note(root, split)
    try:
        kept = note.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        kept = ""
    # Only a table name of this split, in the dataset's folder, is ever removed.
    table = re.compile(rf"{re.escape(split)}\.shards\.[0-9a-f]{{16}}")
    if kept not in (replaced, current) and table.fullmatch(kept):
        (root / kept).unlink(missing_ok=True)
    temp = note.with_name(f"{note.name}.{os.getpid():x}.tmp")
    temp.write_text(replaced + "\n", encoding="ascii")
    os.replace(temp, note)
