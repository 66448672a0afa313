"""No tracked file carries a merge's conflict markers: a page with them still builds
(Markdown shows the markers as text), and one reached users for a session unseen."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(rb"^(<{7}|>{7})( |$)", re.MULTILINE)


def test_no_tracked_file_holds_conflict_markers() -> None:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    names = [name for name in listed.decode().split("\0") if name]
    assert len(names) > 100  # the listing worked: the repo has hundreds of files
    leftovers = [
        name for name in names if (ROOT / name).is_file() and MARKER.search((ROOT / name).read_bytes())
    ]
    assert leftovers == []
