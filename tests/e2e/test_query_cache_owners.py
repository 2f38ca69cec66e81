"""The query-vector cache is per owner, and search timings do not say when it was hit.

Shared by every owner of a server, a cache hit (microseconds instead of a model call) in
`timings.embed_ms` told one owner that another had searched the exact same text.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp import Client

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.embeddings import CachedQueryEmbedder, create_embedder
from pgrecall.mcp.runtime import Runtime
from pgrecall.mcp.server import create_server
from tests.helpers.mcp_calls import call

pytestmark = pytest.mark.anyio

QUERY = "when does Alice's secret launch happen"
SHOWN_TIMINGS = {"sql_ms", "search_ms", "total_ms"}


@pytest.fixture
def shared_cache(settings: Settings) -> CachedQueryEmbedder:
    """One query cache for both owners, as in one HTTP server with a token per owner."""
    return CachedQueryEmbedder(create_embedder(settings))


@pytest.fixture
def two_owners(settings: Settings, shared_cache: CachedQueryEmbedder) -> Iterator[tuple[Runtime, Runtime]]:
    with (
        App(settings.model_copy(update={"owner": "alice"}), embedder=shared_cache, restricted=True) as alice,
        App(settings.model_copy(update={"owner": "bob"}), embedder=shared_cache, restricted=True) as bob,
    ):
        yield Runtime(alice), Runtime(bob)


def _counters(cache: CachedQueryEmbedder) -> tuple[int, int, int]:
    return cache.hits, cache.misses, len(cache)


async def test_one_owners_search_is_no_cache_hit_for_another(
    two_owners: tuple[Runtime, Runtime], shared_cache: CachedQueryEmbedder
) -> None:
    alice_rt, bob_rt = two_owners
    async with Client(create_server(alice_rt)) as alice:
        await call(alice, "add_entry", text="The secret launch is on the third of May.", language="en")
        first = await call(alice, "search", query=QUERY)
        hits, misses, _ = _counters(shared_cache)
        again = await call(alice, "search", query=QUERY)
        assert shared_cache.hits == hits + 1, "the cache must still serve an owner's own repeats"
        assert shared_cache.misses == misses
    async with Client(create_server(bob_rt)) as bob:
        hits, misses, size = _counters(shared_cache)
        seen = await call(bob, "search", query=QUERY)
        assert shared_cache.hits == hits, "bob was served a vector cached for alice's query"
        assert (shared_cache.misses, len(shared_cache)) == (misses + 1, size + 1)
        # Bob's own repeat is his hit, in his own part of the cache.
        await call(bob, "search", query=QUERY)
        assert shared_cache.hits == hits + 1
    # No timing that isolates the embedding: a hit and a miss show the same fields.
    for result in (first, again, seen):
        assert set(result["timings"]) == SHOWN_TIMINGS, result["timings"]


async def test_near_duplicate_lookup_never_touches_the_query_cache(
    two_owners: tuple[Runtime, Runtime], shared_cache: CachedQueryEmbedder
) -> None:
    # add_entry's near-duplicate lookup searches with the entry's own text: through the query
    # cache it would confirm a guessed text of another owner's entry (or query). It reuses the
    # entry's stored vector instead, and an entry without one searches lexically.
    alice_rt, bob_rt = two_owners
    async with Client(create_server(alice_rt)) as alice:
        await call(alice, "search", query=QUERY)
    before = _counters(shared_cache)
    async with Client(create_server(bob_rt)) as bob:
        added = await call(bob, "add_entry", text=QUERY, language="en")
        again = await call(bob, "add_entry", text=QUERY + "?", language="en")
        assert [s["id"] for s in again["similar"]] == [added["id"]]
    assert _counters(shared_cache) == before
