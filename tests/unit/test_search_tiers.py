"""The shipped HNSW candidate lists: longer as the owner's store grows, passed to the knobs function."""

from __future__ import annotations

from pgrecall.store import search as store


def test_the_shipped_tiers_grow_with_the_store() -> None:
    shipped = store.Tuning()
    assert shipped.large_store < shipped.huge_store
    assert shipped.ef_search_small < shipped.ef_search < shipped.ef_search_huge
    values = store.knobs(shipped, False)
    assert (values["huge_store"], values["ef_search_huge"]) == (shipped.huge_store, shipped.ef_search_huge)
