"""The first search of a cold start waits, within a bound, for the embedder the worker is loading.

The worker's model load is slowed for real (PGRECALL_WORKER_TEST_LOAD_DELAY_S: the worker sleeps,
then loads the model): a paraphrase that shares no word with the entry it should find is found by
the first `pgrecall search` of a cold worker when the load fits in PGRECALL_EMBEDDER_WAIT_S, and
the result says how long it waited; past the bound the search answers lexically and says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrecall.config import Settings
from pgrecall.services.search import EMBEDDER_LOADING
from pgrecall.worker.__main__ import TEST_LOAD_DELAY_ENV
from tests.helpers.subprocess_server import run_pgrecall, server_env
from tests.helpers.worker import stop

BOUND_S = 300  # only so a hang fails the test; never asserted on
ENTRY = "The boiler and radiators in the office are serviced every October before the cold months."
PARAPHRASE = "when does someone look at the heating"


@pytest.fixture
def cold(settings: Settings, tmp_path: Path) -> Iterator[tuple[Settings, dict[str, str]]]:
    """A private home whose entry is stored (models in-process), and the env of a worker-mode CLI."""
    home = tmp_path / "home"
    chosen = settings.model_copy(update={"home": home, "models": "worker", "worker_idle_s": 1.0})
    env = server_env(chosen) | {"HOME": str(tmp_path)}
    added = run_pgrecall(env | {"PGRECALL_MODELS": "in-process"}, "add", ENTRY, "--json", timeout=BOUND_S)
    assert added.returncode == 0, added.stderr
    yield chosen, env
    stop(chosen)


def _search(env: dict[str, str]) -> dict[str, object]:
    done = run_pgrecall(env, "search", PARAPHRASE, "--json", timeout=BOUND_S)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_cold_search_waits_for_a_slow_load_and_finds_the_paraphrase(
    cold: tuple[Settings, dict[str, str]],
) -> None:
    _, env = cold
    result = _search(env | {TEST_LOAD_DELAY_ENV: "2", "PGRECALL_EMBEDDER_WAIT_S": "60"})
    assert result["degraded"] is False and result["status"] == "ok"
    hits = result["hits"]
    assert isinstance(hits, list) and len(hits) == 1  # by meaning: no word in common
    waited = result["embedder_wait_ms"]
    assert isinstance(waited, float) and waited > 0
    warm = _search(env)  # the worker is up and loaded now: no wait
    assert warm["embedder_wait_ms"] is None and warm["hits"] == hits


def test_past_the_bound_the_search_answers_lexically_and_says_how_long_it_waited(
    cold: tuple[Settings, dict[str, str]],
) -> None:
    _, env = cold
    result = _search(env | {TEST_LOAD_DELAY_ENV: "600", "PGRECALL_EMBEDDER_WAIT_S": "0.5"})
    assert result["degraded"] is True and result["degraded_reason"] == EMBEDDER_LOADING
    waited = result["embedder_wait_ms"]
    assert isinstance(waited, float) and waited > 0
