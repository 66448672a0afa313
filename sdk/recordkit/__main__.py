"""``python -m recordkit``: the same as the ``recordkit`` command."""

from __future__ import annotations

from recordkit.cli import main

if __name__ == "__main__":
    main(prog_name="recordkit")
