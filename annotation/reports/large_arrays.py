"""glibc's malloc set for a computation over millions of rows, for as long as it runs.

By default glibc maps a fresh block for each allocation above its mmap threshold (128 KB, rising
to the largest size freed, up to 32 MB), unmaps it when freed and trims the heap's free top: a
report over 10 million ratings allocates and frees arrays of megabytes thousands of times, and
the kernel zeroes new pages each time (7 of the 39 s of the 10M report were system time).
Inside `large_arrays()` every allocation comes from the heap (no mmap: a column of ten million
values is 80 MB, above glibc's largest threshold of 32 MB), freed memory stays there for the next
array, and the heap grows in 256 MB steps (3.3 s of system time). On a virtual machine whose host
takes back the guest's free pages (virtio-balloon's free page reporting, after 2 s free), a page
given back costs a fault in the host on its next use: first-touched memory ran at about 0.5 GB/s
where reused memory runs at 8, and clearing pages was 45% of the 10M report's samples. On
leaving, the thresholds become those glibc's own rule reaches after freeing a large block (32 MB,
trim at 64 MB), mmap is allowed again and the free memory goes back to the system (`malloc_trim`),
so a long-lived worker does not keep its peak. Elsewhere than glibc (musl, macOS) nothing changes.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import platform
import threading
from typing import Iterator

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -2, -3, -4  # glibc's malloc.h
DEFAULT_MMAP_MAX = 65536
LARGEST_MMAP_THRESHOLD = 32 << 20  # HEAP_MAX_SIZE / 2 on 64-bit: mallopt refuses more
INSIDE = {M_MMAP_THRESHOLD: LARGEST_MMAP_THRESHOLD, M_MMAP_MAX: 0, M_TRIM_THRESHOLD: 4 << 30, M_TOP_PAD: 256 << 20}
AFTER = {M_MMAP_THRESHOLD: LARGEST_MMAP_THRESHOLD, M_MMAP_MAX: DEFAULT_MMAP_MAX,
         M_TRIM_THRESHOLD: 2 * LARGEST_MMAP_THRESHOLD, M_TOP_PAD: 128 << 10}

_lock = threading.Lock()
_inside = 0  # computations running now (threads of one web worker share the allocator)


def _libc():
    if platform.libc_ver()[0] != "glibc":
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


_LIBC = _libc()


def _set(params: dict[int, int]) -> None:
    for param, value in params.items():
        _LIBC.mallopt(param, value)


@contextlib.contextmanager
def large_arrays() -> Iterator[None]:
    global _inside
    if _LIBC is None:
        yield
        return
    with _lock:
        _inside += 1
        if _inside == 1:
            _set(INSIDE)
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                _set(AFTER)
                _LIBC.malloc_trim(0)
