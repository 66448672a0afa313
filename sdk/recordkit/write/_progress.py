"""The writer's progress bar (tqdm): records, records/s and bytes written.

On by default only when stderr is a terminal, so logs of batch jobs stay clean. The bar
is updated every few hundred records, not per record, to keep the hot path lean.
"""

from __future__ import annotations

import sys
from typing import Any

from recordkit._units import human_bytes

__all__ = ["Progress"]

_EVERY = 256


class Progress:
    """Counts records and bytes; shows them with tqdm when enabled."""

    def __init__(self, enabled: bool | None, *, total: int | None = None, desc: str = "") -> None:
        if enabled is None:
            enabled = _stderr_is_tty()
        self._bar: Any = None
        if enabled:
            from tqdm.auto import tqdm

            # Exact counts ("18/18", not "18.0/18.0"); sizes in the binary units of the CLI.
            self._bar = tqdm(total=total, desc=desc, unit=" rec", dynamic_ncols=True)
        self.records = 0
        self.bytes = 0
        self._shown = 0

    @property
    def enabled(self) -> bool:
        return self._bar is not None

    def advance(self, nbytes: int) -> None:
        """One more record handled (written or rejected) with ``nbytes`` bytes written."""
        self.records += 1
        self.bytes += nbytes
        if self._bar is not None and self.records - self._shown >= _EVERY:
            self._refresh()

    def _refresh(self) -> None:
        self._bar.update(self.records - self._shown)
        self._shown = self.records
        self._bar.set_postfix_str(f"{human_bytes(self.bytes)} written", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._refresh()
            self._bar.close()
            self._bar = None


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
