"""How much shared memory the embedded PostgreSQL takes: a share of the machine, within bounds.

A search reads the HNSW index, the entries it ranks and their vectors; a block outside shared
buffers costs ~10 µs to bring in from the page cache. At 100 000 entries the database is ~630 MB:
with the 256 MB the embedded server used to take, every hybrid search read 200–600 blocks and
its p95 was ~4 ms higher than with them all in memory. Shared buffers are only touched as they
fill, so a small store costs no more than before.
"""

from __future__ import annotations

import os
from pathlib import Path

MIN_MB = 256
MAX_MB = 1024
# An eighth of the machine: PostgreSQL's own guide is a quarter on a dedicated server, and this one
# shares a desktop with its users' programs.
FRACTION = 8
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def _cgroup_limit_bytes() -> int | None:
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            return int(text)
    return None


def machine_memory_mb() -> int | None:
    """Memory this process may use, in MB: physical memory, or a container's limit if lower."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None
    limit = _cgroup_limit_bytes()
    if limit is not None:
        total = min(total, limit)
    return total // (1024 * 1024) if total > 0 else None


def shared_buffers_mb(configured: int | None = None) -> int:
    """The embedded server's shared_buffers in MB: `configured`, else 1/8 of memory in [256, 1024]."""
    if configured is not None:
        return configured
    memory = machine_memory_mb()
    if memory is None:
        return MIN_MB
    return max(MIN_MB, min(MAX_MB, memory // FRACTION))
