"""Long-document evaluation collections (benchmarks/collections/debian-manuals, postgresql-doc).

A collection folder holds:

- `documents/`: the source files as the package ships them (HTML), ids are paths relative to it;
- `documents.jsonl`: one record per document (`_id`, `format`, `language`, `title`, `bytes`, `sha256`);
- `queries.jsonl`: `_id`, `text`, `language`;
- `qrels/documents.tsv`: query-id, corpus-id (a document id), score;
- `qrels/passages.jsonl`: `query_id`, `doc_id`, `anchor`, `section_path` (headings, outermost
  first, without section numbers) and `answer`, a span of the judged section's running text.

A collection may hold further question sets over the same documents: set NAME is
`queries-NAME.jsonl`, `qrels/documents-NAME.tsv` and `qrels/passages-NAME.jsonl` beside the default
files (`question_files`), so the documents are stored once.

A chunk is relevant to a query when it holds the answer (compared on word characters only, so that
markup and whitespace a chunker adds or folds do not matter), or the leading or trailing half of a
long answer that a chunk border cut.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgrecall.errors import PgrecallError
from pgrecall.services.transfer.lines import LineError, read_jsonl

# An answer this long (normalized characters) is matched by either half when no chunk holds it
# whole; each half stays long enough not to match by chance.
SPLIT_ANSWER_CHARS = 160
NUMBER = re.compile(r"^\s*(?:[A-Z]|\d+)(?:\.\d+)*\.\s+")
QUESTION_SET = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class CollectionError(PgrecallError):
    """The collection folder is missing a file, holds a malformed line or a dangling judgement."""


def normalize(text: str) -> str:
    """Word characters only, NFKC and casefolded: the form answers and chunks are compared in."""
    return "".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def _heading(text: str) -> str:
    return normalize(NUMBER.sub("", text))


def question_files(questions: str | None = None) -> tuple[str, str, str]:
    """Queries, document judgements and passage judgements of a question set, relative to the
    collection folder; None is the default set."""
    if questions is None:
        suffix = ""
    elif QUESTION_SET.match(questions):
        suffix = f"-{questions}"
    else:
        raise CollectionError(f"question set {questions!r}: use lower-case letters, digits, - and _")
    return f"queries{suffix}.jsonl", f"qrels/documents{suffix}.tsv", f"qrels/passages{suffix}.jsonl"


@dataclass(frozen=True)
class Document:
    """One source file of the collection."""

    id: str  # path relative to documents/
    path: Path
    format: str
    language: str
    title: str
    data: bytes

    @property
    def text(self) -> str:
        """The file decoded as UTF-8 (the manuals' pages all are)."""
        return self.data.decode("utf-8")


@dataclass(frozen=True)
class Query:
    """A known-item question."""

    id: str
    text: str
    language: str


@dataclass(frozen=True)
class Passage:
    """Where a query's answer is: the document, the section and a span of its text."""

    query_id: str
    doc_id: str
    anchor: str
    section_path: tuple[str, ...]
    answer: str

    @property
    def key(self) -> str:
        """The normalized answer."""
        return normalize(self.answer)


@dataclass(frozen=True)
class DocumentCollection:
    """A loaded collection: documents in id order, queries, document and passage judgements."""

    path: Path
    documents: list[Document]
    queries: dict[str, Query]
    qrels: dict[str, dict[str, int]]
    passages: dict[str, list[Passage]]
    questions: str | None = None  # the question set; None for the default one
    _by_id: dict[str, Document] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        """The folder name."""
        return self.path.name

    def document(self, doc_id: str) -> Document:
        """The document with this id."""
        if not self._by_id:
            self._by_id.update({d.id: d for d in self.documents})
        return self._by_id[doc_id]

    def passage_relevant(
        self, query_id: str, doc_id: str, chunk_text: str, section_path: Sequence[str] = ()
    ) -> int:
        """1 when the chunk holds a judged answer of the query, else 0.

        The answer decides; `section_path` (headings outermost first, numbers ignored), when given,
        must end with the judged section's heading, so that a chunk from another section that
        happens to repeat the sentence does not count.
        """
        chunk = normalize(chunk_text)
        for p in self.passages.get(query_id, []):
            if p.doc_id != doc_id:
                continue
            if section_path and _heading(section_path[-1]) != _heading(p.section_path[-1]):
                continue
            key = p.key
            if key in chunk:
                return 1
            half = len(key) // 2
            if len(key) >= SPLIT_ANSWER_CHARS and (key[:half] in chunk or key[half:] in chunk):
                return 1
        return 0

    def passage_ndcg_at_10(self, query_id: str, ranked: Sequence[tuple[str, str, Sequence[str]]]) -> float:
        """Known-item nDCG@10 of a ranked list of (doc_id, chunk_text, section_path): 1/log2(rank+1)
        at the first relevant chunk, 0 when none of the first 10 is (one answer per query, so the
        ideal ranking holds one relevant chunk)."""
        for rank, (doc_id, text, path) in enumerate(ranked[:10], start=1):
            if self.passage_relevant(query_id, doc_id, text, path):
                return 1.0 / math.log2(rank + 1)
        return 0.0


def _records(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    if not path.is_file():
        problems.append(f"{path}: missing")
        return []
    out = []
    for number, obj in read_jsonl(path):
        if isinstance(obj, LineError):
            problems.append(f"{path.name}:{number}: {obj.message}")
        elif not isinstance(obj, dict):
            problems.append(f"{path.name}:{number}: expected a JSON object")
        else:
            out.append(obj)
    return out


def _field(obj: dict[str, Any], name: str, where: str, problems: list[str]) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value:
        problems.append(f"{where}: '{name}' must be a non-empty string")
        return ""
    return value


def load_document_collection(
    path: Path | str, *, verify_hashes: bool = True, questions: str | None = None
) -> DocumentCollection:
    """Read and check a collection folder with one of its question sets (`question_files`); every
    problem found is listed in one CollectionError."""
    root = Path(path)
    queries_file, documents_file, passages_file = question_files(questions)
    problems: list[str] = []
    documents: list[Document] = []
    for obj in _records(root / "documents.jsonl", problems):
        doc_id = _field(obj, "_id", "documents.jsonl", problems)
        file = root / "documents" / doc_id
        if not doc_id or not file.is_file() or ".." in Path(doc_id).parts:
            problems.append(f"documents.jsonl: {doc_id!r} is not a file under documents/")
            continue
        data = file.read_bytes()
        if verify_hashes and hashlib.sha256(data).hexdigest() != obj.get("sha256"):
            problems.append(f"documents/{doc_id}: sha256 differs from documents.jsonl")
        documents.append(
            Document(
                id=doc_id,
                path=file,
                format=_field(obj, "format", doc_id, problems),
                language=_field(obj, "language", doc_id, problems),
                title=str(obj.get("title") or ""),
                data=data,
            )
        )
    documents.sort(key=lambda d: d.id)
    doc_ids = {d.id for d in documents}
    queries: dict[str, Query] = {}
    for obj in _records(root / queries_file, problems):
        qid = _field(obj, "_id", queries_file, problems)
        queries[qid] = Query(qid, _field(obj, "text", qid, problems), _field(obj, "language", qid, problems))
    qrels: dict[str, dict[str, int]] = {}
    tsv = root / documents_file
    if tsv.is_file():
        for number, line in enumerate(tsv.read_text(encoding="utf-8").splitlines(), start=1):
            cells = line.split("\t")
            if number == 1 and cells[0] == "query-id":
                continue
            if len(cells) != 3 or not cells[2].lstrip("-").isdigit():
                problems.append(f"{tsv.name}:{number}: expected query-id, corpus-id, integer score")
                continue
            qid, did, score = cells[0], cells[1], int(cells[2])
            if qid not in queries or did not in doc_ids:
                problems.append(f"{tsv.name}:{number}: unknown query {qid!r} or document {did!r}")
                continue
            qrels.setdefault(qid, {})[did] = score
    else:
        problems.append(f"{tsv}: missing")
    passages: dict[str, list[Passage]] = {}
    where = Path(passages_file).name
    for obj in _records(root / passages_file, problems):
        qid = _field(obj, "query_id", where, problems)
        did = _field(obj, "doc_id", where, problems)
        section = obj.get("section_path")
        if qid not in queries or did not in doc_ids:
            problems.append(f"{where}: unknown query {qid!r} or document {did!r}")
            continue
        if not isinstance(section, list) or not section or not all(isinstance(s, str) for s in section):
            problems.append(f"{where}: {qid}: 'section_path' must be a non-empty list of headings")
            continue
        passage = Passage(
            qid,
            did,
            _field(obj, "anchor", qid, problems),
            tuple(section),
            _field(obj, "answer", qid, problems),
        )
        passages.setdefault(qid, []).append(passage)
    if problems:
        raise CollectionError(f"{root} is not a valid document collection:\n  " + "\n  ".join(problems[:20]))
    return DocumentCollection(root, documents, queries, qrels, passages, questions)
