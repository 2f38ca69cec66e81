"""The search bench's store: real texts as chunks of documents, with their vectors and the HNSW index."""

from __future__ import annotations

import numpy as np
import psycopg
from psycopg.rows import dict_row

from pgrecall.evaluation import corpus
from pgrecall.evaluation.speed import CHUNKS_PER_DOCUMENT, PINS, load_store, load_texts, measure_pins


def test_the_bench_store_holds_chunks_of_documents(db_url: str) -> None:
    docs = corpus.read_beir("cranfield")[:45]
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(len(docs), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    load = load_store(db_url, docs, vectors, seed=7)
    assert load["table_bytes"] and load["hnsw_build_seconds"] >= 0
    with psycopg.connect(db_url) as conn:
        entries = conn.execute(
            "SELECT count(*), count(DISTINCT document_id), max(ordinal) FROM entries WHERE kind = 'chunk'"
        ).fetchone()
        documents = conn.execute("SELECT count(*), sum(chunk_count) FROM documents").fetchone()
        index = conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'entries_embedding_hnsw_384'")
        row = index.fetchone()
    expected_documents = -(-len(docs) // CHUNKS_PER_DOCUMENT)
    assert entries == (len(docs), expected_documents, CHUNKS_PER_DOCUMENT - 1)
    assert documents == (expected_documents, len(docs))
    assert row == (1,)


def test_the_pins_bench_reads_the_pinned_entries_as_the_server_does(db_url: str) -> None:
    docs = corpus.read_beir("cranfield")[:60]
    load_texts(db_url, docs)
    with psycopg.connect(db_url, row_factory=dict_row) as conn:
        pins = measure_pins(conn, runs=5)
    assert pins["pins"] == PINS and pins["runs"] == 5 and pins["entries"] == len({d.body for d in docs})
    assert set(pins["sql_ms"]) == {"p50", "p95", "p99", "mean"}
