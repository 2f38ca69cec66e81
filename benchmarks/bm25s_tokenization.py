"""Why the bm25s reference trails pgrecall's lexical branch on postgresql-doc (a finished study).

    python benchmarks/bm25s_tokenization.py [--json benchmarks/bm25s_tokenization.json]

`pgrecall eval --documents` ranks the stored chunks with bm25s (Lucene BM25, k1 1.5, b 0.75, the
Snowball stemmer and bm25s' stop words, words matched by `\\b\\w\\w+\\b`). On postgresql-doc that
reference reaches nDCG@10 0.56 at document level where the lexical branch reaches 0.87. This study
ranks the same chunks (parsed and cut at 1 200 characters as `pgrecall ingest` does, each indexed as
its title path + text, as the store reads them back) with bm25s under two changes, alone and
together: PostgreSQL's English stop words instead of bm25s' (Lucene's 33-word English set, which
keeps the "what", "should", "about" of every question), and identifiers split at underscores as
PostgreSQL's parser splits them (`max_connections` → max, connections) instead of one token.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pgrecall.chunking.chunker import chunk
from pgrecall.chunking.parsing import parse
from pgrecall.detection.stopwords import LATIN_STOPWORDS
from pgrecall.domain.documents import chunk_title
from pgrecall.evaluation import record, runner
from pgrecall.evaluation.documents_dataset import load_document_collection

HERE = Path(__file__).resolve().parent
CHUNK_CHARS = 1200
DEPTH = 1000
WHOLE_WORDS = r"(?u)\b\w\w+\b"  # bm25s' default, Lucene's rule: word characters include "_"
SPLIT_AT_UNDERSCORE = r"(?u)[^\W_]{2,}"


def chunks(name: str) -> tuple[list[str], list[str], list[str]]:
    """(chunk ids, owning document ids, indexed texts) of an English collection."""
    collection = load_document_collection(HERE / "collections" / name)
    ids, owners, texts = [], [], []
    for document in collection.documents:
        parsed = parse(document.data, document.format, name=document.id)
        for piece in chunk(parsed, max_chars=CHUNK_CHARS):
            title = chunk_title(parsed.title, piece.section_path)
            ids.append(f"{document.id}#{piece.ordinal}")
            owners.append(document.id)
            texts.append(f"{title}\n\n{piece.text}" if title else piece.text)
    return ids, owners, texts


def evaluate(name: str) -> dict[str, Any]:
    collection = load_document_collection(HERE / "collections" / name)
    ids, owners, texts = chunks(name)
    owner_of = dict(zip(ids, owners, strict=True))
    queries = {q.id: q.text for q in collection.queries.values()}
    variants: dict[str, Any] = {}
    for label, stopwords, pattern in [
        ("bm25s stop words, whole identifiers (the eval's reference)", "en", WHOLE_WORDS),
        ("PostgreSQL stop words, whole identifiers", tuple(sorted(LATIN_STOPWORDS["en"])), WHOLE_WORDS),
        ("bm25s stop words, split at underscores", "en", SPLIT_AT_UNDERSCORE),
        (
            "PostgreSQL stop words, split at underscores",
            tuple(sorted(LATIN_STOPWORDS["en"])),
            SPLIT_AT_UNDERSCORE,
        ),
    ]:
        settings = runner.Bm25Settings("english", "english", stopwords, token_pattern=pattern)
        ranked, _ = runner.bm25_run(ids, texts, queries, settings, depth=DEPTH)
        documents: dict[str, list[str]] = {}
        for qid, hits in ranked.items():
            documents[qid] = list(dict.fromkeys(owner_of[h] for h in hits))[:100]
        mean, _ = runner.score(documents, collection.qrels)
        variants[label] = {k: round(v, 4) for k, v in mean.items()}
    return {"collection": name, "chunks": len(ids), "queries": len(queries), "document_level": variants}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--collection", default="postgresql-doc")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    run = record.Run({"collection": args.collection, "chunk_chars": CHUNK_CHARS})
    result = run.finish(evaluate(args.collection))
    if args.json is not None:
        record.write(result, args.json)
    print(record.dumps(result))


if __name__ == "__main__":
    main()
