"""One writer at a time per dataset folder: an OS file lock, released if the process dies.

Every writer (a fresh write, a resume, an append) holds an exclusive ``flock`` on
``<dataset>/.recordkit.lock`` from the moment it opens the dataset until it closes or
aborts. The operating system drops the lock when the process ends, however it ends
(SIGKILL included), so a stale lock never blocks anybody and there is nothing to clean
up. The lock file itself stays (removing it would let two writers lock two different
files); it holds the pid of the last holder, for the error message.

A second writer fails at once with a :class:`~recordkit.errors.DatasetLockedError`
naming the folder and the holder's pid, or, with ``wait=True`` (or a number of
seconds), waits for the lock. Because the holder is the only writer, whatever
temporary file of a writer it finds in the folder belongs to a writer that died, and
may be removed.

Readers take no lock: the manifest is replaced atomically, so a reader sees one
manifest or the next, never half of one. The lock is advisory: programs that do not
use recordkit are not stopped by it.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from types import TracebackType

from recordkit.errors import DatasetLockedError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILE", "DatasetLock", "Wait"]

#: The lock file's name inside the dataset folder (hidden, never listed in a manifest).
LOCK_FILE = ".recordkit.lock"
#: ``wait=`` of a writer: False (fail at once), True (wait as long as it takes) or seconds.
Wait = bool | float
_POLL_SECONDS = 0.05
#: How long a refused writer waits for a new holder's pid to appear in the lock file.
_HOLDER_WAIT_SECONDS = 0.5


class DatasetLock:
    """The exclusive lock on one dataset folder (which must exist)."""

    def __init__(self, root: Path, *, wait: Wait = False) -> None:
        self._fd: int | None = None
        if isinstance(wait, bool):
            timeout = None if wait else 0.0
        elif isinstance(wait, (int, float)) and wait >= 0:
            timeout = float(wait)
        else:
            raise ValueError(f"wait must be True, False or a number of seconds >= 0, not {wait!r}")
        self.path = root / LOCK_FILE
        # O_NOFOLLOW: a symlink planted as the lock file is not followed (ELOOP).
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            self._fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise DatasetLockedError(
                f"cannot open the lock file {LOCK_FILE}: {exc.strerror or exc}", file=str(root)
            ) from None
        try:
            self._acquire(root, timeout)
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise
        # The pid goes in before the old one is cut off, so a writer refused meanwhile
        # reads a whole pid (this one, or the last holder's), never an empty file.
        pid = f"{os.getpid()}\n".encode()
        os.pwrite(self._fd, pid, 0)
        os.ftruncate(self._fd, len(pid))

    def _acquire(self, root: Path, timeout: float | None) -> None:
        assert self._fd is not None
        if fcntl is None:  # pragma: no cover - no flock: nothing to lock with
            return
        if timeout is None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(_POLL_SECONDS)
        holder = _holder(self._fd)
        waited = f" (waited {timeout:g} s)" if timeout else ""
        raise DatasetLockedError(
            f"another writer (pid {holder}) is writing to this dataset{waited}; wait for it to finish, "
            "or pass wait=True to wait for the lock",
            file=str(root),
        )

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Release the lock (idempotent); the lock file stays."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> DatasetLock:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()


def _holder(fd: int) -> str:
    """The pid the holder wrote into the lock file ("unknown" if it has not within a
    moment: a holder that has just taken the lock writes its pid right after)."""
    deadline = time.monotonic() + _HOLDER_WAIT_SECONDS
    while True:
        try:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").split("\n", 1)[0].strip()
        except OSError:
            return "unknown"
        if text.isdigit() or time.monotonic() >= deadline:
            return text if text.isdigit() else "unknown"
        time.sleep(_POLL_SECONDS / 5)
