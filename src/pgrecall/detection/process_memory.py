"""This process's memory as lingua's models come and go: glibc's heap and lingua's library pages.

Loading a language's models fills large buffers and tables; glibc would keep them, and the freed
models, in its heap, so large allocations are kept out of it and, after a load or an unload, it is
asked to give memory back. After a load, the pages of lingua's library that it read are dropped from
the process too. And the process's resident size, which a load must fit under. Linux and glibc; a
no-op (or 0) elsewhere.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import os
from functools import cache
from typing import Any

# glibc's mallopt parameter for the size from which an allocation gets its own mapping.
_M_MMAP_THRESHOLD = -3
# lingua's loading buffers and model tables are far larger than this: they get mappings of their own,
# which go back to the system when freed. glibc's default threshold rises to the size of the first
# such mapping freed, after which both land in the heap and stay there as fragments once freed.
MMAP_THRESHOLD_BYTES = 128 * 1024


@cache
def _libc() -> Any:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def release_freed_memory() -> None:
    """Return memory freed by unloaded models to the system (glibc only; a no-op elsewhere)."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)


# madvise advice: drop these pages from the process. A private file mapping's page that was never
# written is read again from the file (the page cache) on next access; one written since (a copy of its
# own, "Anonymous" in smaps) would lose its content, so a mapping holding any is left alone.
# MADV_PAGEOUT, which never loses content, skips pages another process maps too: with two detection
# processes on a machine (two homes, a test run) most of lingua's pages stayed.
_MADV_DONTNEED = 4


@cache
def _lingua_library() -> str | None:
    try:
        path = importlib.import_module("lingua.lingua").__file__
    except ImportError:
        return None
    return os.path.realpath(path) if path else None


@cache
def _unwritten_data_mappings(library: str) -> tuple[tuple[int, int], ...]:
    """Address ranges of `library`'s read-only, non-executable mappings holding no page of their own.

    Read once: reading smaps walks the page tables of the whole process, models included, and a
    read-only mapping gets no page of its own after the library was loaded and relocated.
    """
    ranges: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    with open("/proc/self/smaps", encoding="utf-8", errors="replace") as smaps:
        for line in smaps:
            fields = line.split(maxsplit=5)
            if not fields:
                continue
            if not fields[0].endswith(":"):  # a mapping's first line: range, permissions, …, path
                current = None
                # Its code is left alone too: the next text runs it again at once.
                if len(fields) == 6 and fields[5].rstrip("\n") == library and fields[1].startswith("r--"):
                    start, end = (int(bound, 16) for bound in fields[0].split("-"))
                    current = (start, end)
            elif current is not None and fields[0] == "Anonymous:":
                if fields[1] == "0":
                    ranges.append(current)
                current = None
    return tuple(ranges)


def release_model_file_pages() -> None:
    """Drop the pages of lingua's library that loading models read from this process's resident set.

    lingua's models are compressed inside its library file; every load reads a language's part of
    it, and those pages would stay resident though they are needed only while a model loads. They
    stay in the page cache, where the next load finds them. Linux only; a no-op elsewhere.
    """
    library, madvise = _lingua_library(), getattr(_libc(), "madvise", None)
    if library is None or madvise is None:
        return
    try:
        ranges = _unwritten_data_mappings(library)
    except (OSError, ValueError):
        return
    for start, end in ranges:
        madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), _MADV_DONTNEED)


@cache
def keep_large_allocations_out_of_the_heap() -> None:
    """Fix glibc's mmap threshold for this process, once (a no-op elsewhere)."""
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def resident_mb() -> float:
    """This process's resident memory in MB (Linux; elsewhere 0, and models count as unmeasured)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0
