"""The writer's progress: a tqdm bar on a terminal, plain lines in logs.

``progress=None`` (the default) follows stderr: on a terminal, a tqdm bar with records,
records/s and bytes written; elsewhere (CI logs, batch jobs, files) one plain-text line
every :data:`LOG_EVERY_SECONDS` seconds, so a long write shows it is alive without
filling the log with bar redraws, and a short one prints nothing. ``True`` forces the
bar, ``False`` silences both. Progress is counted every few hundred records, not per
record, to keep the hot path lean.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from recordkit._units import human_bytes

__all__ = ["LOG_EVERY_SECONDS", "Progress"]

_EVERY = 256
#: Seconds between two plain-text progress lines when stderr is not a terminal.
LOG_EVERY_SECONDS = 10.0


class Progress:
    """Counts records and bytes; shows them with tqdm, or as plain lines in logs."""

    def __init__(
        self,
        enabled: bool | None,
        *,
        total: int | None = None,
        desc: str = "",
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log: TextIO | None = None
        if enabled is None:
            enabled = _stderr_is_tty()
            if not enabled:
                self._log = stream if stream is not None else sys.stderr
        self._bar: Any = None
        if enabled:
            from tqdm.auto import tqdm

            # Exact counts ("18/18", not "18.0/18.0"); sizes in the binary units of the CLI.
            self._bar = tqdm(total=total, desc=desc, unit=" rec", dynamic_ncols=True, file=stream)
        self._desc = desc or "writing"
        self._total = total
        self._clock = clock
        self._start = self._last_line = clock()
        self._lines = 0
        self.records = 0
        self.bytes = 0
        self._shown = 0

    def expect(self, total: int) -> None:
        """Show progress as a share of ``total`` records (when the input's size is known)."""
        self._total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    @property
    def enabled(self) -> bool:
        """Whether a tqdm bar is shown (plain log lines do not count)."""
        return self._bar is not None

    def advance(self, nbytes: int) -> None:
        """One more record handled (written or rejected) with ``nbytes`` bytes written."""
        self.records += 1
        self.bytes += nbytes
        if self.records - self._shown >= _EVERY:
            if self._bar is not None:
                self._refresh()
            elif self._log is not None:
                self._shown = self.records
                if self._clock() - self._last_line >= LOG_EVERY_SECONDS:
                    self._write_line()

    def _refresh(self) -> None:
        self._bar.update(self.records - self._shown)
        self._shown = self.records
        self._bar.set_postfix_str(f"{human_bytes(self.bytes)} written", refresh=False)

    def _write_line(self, final: bool = False) -> None:
        """``writing pets: 12,288 of 50,000 records, 1.2 GiB written, 410 records/s``."""
        assert self._log is not None
        now = self._clock()
        self._last_line = now
        self._lines += 1
        elapsed = max(now - self._start, 1e-9)
        of = f" of {self._total:,}" if self._total is not None else ""
        state = f" (done in {elapsed:.0f} s)" if final else ""
        self._log.write(
            f"{self._desc}: {self.records:,}{of} records, {human_bytes(self.bytes)} written, "
            f"{self.records / elapsed:,.0f} records/s{state}\n"
        )
        self._log.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._refresh()
            self._bar.close()
            self._bar = None
        if self._log is not None:
            if self._lines:  # a log that showed progress also shows the end
                self._write_line(final=True)
            self._log = None


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
