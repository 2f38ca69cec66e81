"""The long-document collections committed under benchmarks/collections load, and every judgement
points at a real document, section and answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from pgrecall.evaluation.documents_dataset import (
    CollectionError,
    DocumentCollection,
    load_document_collection,
    normalize,
)

COLLECTIONS = Path(__file__).resolve().parents[2] / "benchmarks" / "collections"
EXPECTED = {
    # name: (documents, queries, query languages)
    "debian-devguides": (19, 232, {"en", "de", "fr", "es", "it", "ja"}),
    "debian-manuals": (118, 500, {"en", "de", "fr", "es", "ja"}),
    "postgresql-doc": (400, 400, {"en"}),
    "python-doc": (150, 300, {"en"}),
}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def collection(request: pytest.FixtureRequest) -> DocumentCollection:
    return load_document_collection(COLLECTIONS / request.param)


def test_counts(collection: DocumentCollection) -> None:
    documents, queries, languages = EXPECTED[collection.name]
    assert len(collection.documents) == documents
    assert len(collection.queries) == queries
    assert {q.language for q in collection.queries.values()} == languages
    assert all(d.format == "html" and d.path.is_file() for d in collection.documents)


def test_every_query_is_judged_once_at_both_levels(collection: DocumentCollection) -> None:
    assert set(collection.qrels) == set(collection.queries) == set(collection.passages)
    for qid, docs in collection.qrels.items():
        assert list(docs.values()) == [1]
        assert [p.doc_id for p in collection.passages[qid]] == list(docs)


@pytest.mark.filterwarnings("ignore::bs4.XMLParsedAsHTMLWarning")
@pytest.mark.slow  # parses every HTML document of the collection
def test_passages_point_at_a_section_holding_the_answer(collection: DocumentCollection) -> None:
    soups: dict[str, BeautifulSoup] = {}
    for passages in collection.passages.values():
        for p in passages:
            if p.doc_id not in soups:
                soups[p.doc_id] = BeautifulSoup(collection.document(p.doc_id).data, "lxml")
            soup = soups[p.doc_id]
            assert soup.find(id=p.anchor) is not None, (p.doc_id, p.anchor)
            headings = {normalize(h.get_text()) for h in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6"])}
            assert any(h.endswith(normalize(p.section_path[-1])) for h in headings), p
            assert p.key in normalize(soup.get_text()), p


def test_passage_relevance_follows_the_answer(collection: DocumentCollection) -> None:
    qid, [p] = next(iter(collection.passages.items()))
    words = p.answer
    assert collection.passage_relevant(qid, p.doc_id, f"before. {words} after.", p.section_path) == 1
    # Numbered headings and Markdown markup do not change the judgement.
    numbered = ["1.2. " + h for h in p.section_path]
    assert collection.passage_relevant(qid, p.doc_id, f"`{words}`", numbered) == 1
    assert collection.passage_relevant(qid, p.doc_id, "something else entirely", p.section_path) == 0
    assert collection.passage_relevant(qid, "elsewhere.html", words, p.section_path) == 0
    assert collection.passage_relevant(qid, p.doc_id, words, ["Another heading"]) == 0
    other = next(d.id for d in collection.documents if d.id != p.doc_id)
    ranked = [(other, "nothing", ()), (p.doc_id, words, p.section_path)]
    assert collection.passage_ndcg_at_10(qid, ranked) == pytest.approx(1 / 1.584962500721156)


def test_a_long_answer_cut_by_a_chunk_border_still_counts(collection: DocumentCollection) -> None:
    qid, p = next(
        (q, ps[0]) for q, ps in collection.passages.items() if len(ps[0].key) >= 200 and " " in ps[0].answer
    )
    cut = len(p.answer) * 2 // 3
    assert collection.passage_relevant(qid, p.doc_id, p.answer[:cut]) == 1


def test_a_broken_collection_is_reported_with_its_problems(tmp_path: Path) -> None:
    (tmp_path / "documents").mkdir()
    (tmp_path / "qrels").mkdir()
    (tmp_path / "documents.jsonl").write_text(
        '{"_id": "a.html", "format": "html", "language": "en"}\n{oops\n'
    )
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "What?", "language": "en"}\n')
    (tmp_path / "qrels" / "documents.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tmissing.html\t1\n")
    (tmp_path / "qrels" / "passages.jsonl").write_text("")
    with pytest.raises(CollectionError) as err:
        load_document_collection(tmp_path)
    message = str(err.value)
    assert "'a.html' is not a file under documents/" in message
    assert "documents.jsonl:2: not valid JSON" in message
    assert "unknown query 'q1' or document 'missing.html'" in message
