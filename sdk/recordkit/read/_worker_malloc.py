"""glibc's malloc told to keep freed memory in a DataLoader worker.

A worker decodes every record into new arrays (a picture of 320 px is 300 KB) and frees
them once the batch is laid out. glibc hands blocks that large to the kernel on free
(``mmap``/``munmap`` above its mmap threshold, and heap tops above its trim threshold),
so the next batch's arrays fault their pages in again, zeroed: about 50 page faults a
record of the peer benchmark's workload, some 150 µs of a worker's CPU. With freed memory
kept (blocks up to 4 MB from the heap, the heap trimmed only above 64 MB free) a worker
reuses its own pages, batch after batch; its memory stays at its largest batch's, as a
long-lived worker's mostly does anyway. Only in a DataLoader worker (a process the
DataLoader made for the dataset), only where the C library is glibc; elsewhere nothing
changes.
"""

from __future__ import annotations

import ctypes
import platform

__all__ = ["keep_freed_memory"]

#: mallopt's parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap, and are kept when freed.
MMAP_THRESHOLD = 4 * 2**20
#: The heap gives memory back to the kernel only when this much at its top is free.
TRIM_THRESHOLD = 64 * 2**20


def keep_freed_memory() -> bool:
    """Tell this process's malloc to keep freed memory (see the module docstring);
    False where the C library is not glibc or refuses."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    heap: int = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)  # 1 on success
    kept: int = mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return heap == 1 and kept == 1
