"""The embedded server's shared_buffers: configured, or a share of the machine within bounds."""

from __future__ import annotations

import pytest

from pgrecall.db import server_memory


def test_a_configured_size_is_taken_as_given() -> None:
    assert server_memory.shared_buffers_mb(64) == 64


@pytest.mark.parametrize(
    ("memory_mb", "expected"),
    [(None, 256), (1024, 256), (4096, 512), (8192, 1024), (65536, 1024)],
)
def test_an_eighth_of_memory_between_the_bounds(
    monkeypatch: pytest.MonkeyPatch, memory_mb: int | None, expected: int
) -> None:
    monkeypatch.setattr(server_memory, "machine_memory_mb", lambda: memory_mb)
    assert server_memory.shared_buffers_mb() == expected


def test_a_container_limit_below_the_machine_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_memory, "_cgroup_limit_bytes", lambda: 2 * 1024**3)
    physical = server_memory.machine_memory_mb()
    assert physical is not None and physical <= 2048


def test_this_machine_has_a_size() -> None:
    memory = server_memory.machine_memory_mb()
    assert memory is not None and memory > 0
    assert server_memory.MIN_MB <= server_memory.shared_buffers_mb() <= server_memory.MAX_MB
