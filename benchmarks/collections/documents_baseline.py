"""BM25 reference on the long-document collections, independent of pgrecall's store.

    python benchmarks/collections/documents_baseline.py [NAME ...]

For each collection (debian-manuals, postgresql-doc by default) bm25s (Lucene BM25, k1 1.5,
b 0.75; each text stemmed with its own language's Snowball stemmer and bm25s stop words, as
`pgrecall eval`'s per-language reference) ranks:

- whole documents: the text of the page's main content (its outermost DocBook section, so the
  navigation bars are left out);
- fixed-size section chunks: each section's own text (nested sections apart) cut into windows of
  at most CHUNK_CHARS characters at a space (anywhere for text without spaces), each window
  prefixed with its section's heading path. A document's rank is that of its best chunk.

Document level: nDCG@10, R@100, RR@10 (ir-measures) against qrels/documents.tsv. Passage level:
known-item nDCG@10 of the chunk ranking (DocumentCollection.passage_ndcg_at_10). Writes
<collection>/baseline.json.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

import docset_build as b
from bs4 import NavigableString, Tag, XMLParsedAsHTMLWarning

from pgrecall.evaluation import record, runner
from pgrecall.evaluation.documents_dataset import DocumentCollection, load_document_collection

HERE = Path(__file__).resolve().parent
CHUNK_CHARS = 1200
CHUNK_DEPTH = 1000  # chunks retrieved per query, enough to rank the documents behind the best ones
SETTINGS = runner.Bm25Settings("per-language", "per-language Snowball", "per-language bm25s")


def sections_text(top: Tag) -> list[tuple[tuple[str, ...], str]]:
    """(heading path, own text) for the section `top` and every section inside it, in order."""
    out: list[tuple[tuple[str, ...], str]] = []

    def walk(sec: Tag) -> None:
        path = b.heading_path(sec)
        own: list[str] = []
        nested: list[Tag] = []
        for node in sec.descendants:
            if isinstance(node, Tag) and b.is_section(node) and b.enclosing_section(node) is sec:
                nested.append(node)
            elif isinstance(node, NavigableString) and b.enclosing_section(node) is sec:  # type: ignore[arg-type]
                own.append(str(node))
        out.append((path, " ".join(" ".join(own).split())))
        for child in nested:
            walk(child)

    walk(top)
    return out


def windows(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """`text` cut into pieces of at most `size` characters, at the last space when there is one."""
    pieces = []
    while len(text) > size:
        cut = text.rfind(" ", 0, size)
        cut = cut if cut > size // 2 else size
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        pieces.append(text)
    return pieces


def units(collection: DocumentCollection) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(whole documents, chunks) with their text, language and (chunks) heading path."""
    docs, chunks = [], []
    for d in collection.documents:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
            top = b.top_section(b.parse(d.data))
        assert top is not None, d.id
        docs.append({"id": d.id, "text": b.text_of(top), "language": d.language})
        for path, text in sections_text(top):
            for i, piece in enumerate(windows(text)):
                chunks.append(
                    {
                        "id": f"{d.id}#{len(chunks)}",
                        "doc": d.id,
                        "path": path,
                        "text": piece,
                        "indexed": " › ".join(path) + "\n\n" + piece if i == 0 else piece,
                        "language": d.language,
                    }
                )
    return docs, chunks


def bm25(
    items: list[dict[str, Any]], collection: DocumentCollection, key: str, depth: int
) -> dict[str, list[str]]:
    queries = {q.id: q.text for q in collection.queries.values()}
    languages = {q.id: q.language for q in collection.queries.values()}
    run, _ = runner.bm25_by_language_run(
        [i["id"] for i in items],
        [i[key] for i in items],
        [i["language"] for i in items],
        queries,
        languages,
        SETTINGS,
        depth=depth,
    )
    return run


def by_language(per_query: dict[str, dict[str, float]], collection: DocumentCollection) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for qid, measures in per_query.items():
        sums.setdefault(collection.queries[qid].language, []).append(measures["nDCG@10"])
    return {lang: round(sum(v) / len(v), 4) for lang, v in sorted(sums.items())}


def evaluate(name: str) -> dict[str, Any]:
    collection = load_document_collection(HERE / name)
    docs, chunks = units(collection)
    whole_run = bm25(docs, collection, "text", 100)
    whole, whole_per_query = runner.score(whole_run, collection.qrels)
    chunk_run = bm25(chunks, collection, "indexed", CHUNK_DEPTH)
    by_id = {c["id"]: c for c in chunks}
    doc_run: dict[str, list[str]] = {}
    passage: dict[str, float] = {}
    for qid, ranked in chunk_run.items():
        seen: list[str] = []
        for cid in ranked:
            if by_id[cid]["doc"] not in seen:
                seen.append(by_id[cid]["doc"])
        doc_run[qid] = seen[:100]
        top = [(by_id[c]["doc"], by_id[c]["text"], by_id[c]["path"]) for c in ranked[:10]]
        passage[qid] = collection.passage_ndcg_at_10(qid, top)
    chunked, chunked_per_query = runner.score(doc_run, collection.qrels)
    passage_by_language: dict[str, list[float]] = {}
    for qid, value in passage.items():
        passage_by_language.setdefault(collection.queries[qid].language, []).append(value)
    return {
        "collection": name,
        "documents": len(docs),
        "chunks": len(chunks),
        "chunk_chars": CHUNK_CHARS,
        "queries": len(collection.queries),
        "bm25": "bm25s Lucene k1=1.5 b=0.75, each text with its language's Snowball stemmer and stop words",
        "whole_documents": {k: round(v, 4) for k, v in whole.items()}
        | {"nDCG@10 by language": by_language(whole_per_query, collection)},
        "section_chunks_document_level": {k: round(v, 4) for k, v in chunked.items()}
        | {"nDCG@10 by language": by_language(chunked_per_query, collection)},
        "section_chunks_passage_level": {
            "nDCG@10": round(sum(passage.values()) / len(passage), 4),
            "nDCG@10 by language": {
                lang: round(sum(v) / len(v), 4) for lang, v in sorted(passage_by_language.items())
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*", default=["debian-manuals", "postgresql-doc"])
    args = parser.parse_args()
    for name in args.names:
        run = record.Run({"name": name})
        result = run.finish(evaluate(name))
        record.write(result, HERE / name / "baseline.json")
        print(record.dumps(result))


if __name__ == "__main__":
    main()
