"""BEIR-format evaluation collections: corpus.jsonl, queries.jsonl, qrels/<split>.tsv, validated with
errors that name the file and line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgrecall.errors import PgrecallError
from pgrecall.services.transfer.lines import LineError, read_jsonl

# Enough to show what is wrong without flooding the terminal on a badly broken file.
MAX_REPORTED_PROBLEMS = 20


class DatasetError(PgrecallError):
    """The dataset directory is missing a file or holds malformed lines; the message lists them."""


@dataclass(frozen=True)
class BeirDoc:
    """One corpus document."""

    id: str
    title: str
    text: str
    # Optional "language" (ISO 639-1) of the record: what a per-language BM25 reference stems it as.
    language: str | None = None


@dataclass(frozen=True)
class BeirDataset:
    """A validated BEIR collection: documents in file order, queries, and graded judgements."""

    path: Path
    docs: list[BeirDoc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    split: str = "test"
    notes: list[str] = field(default_factory=list)
    # Queries' optional "language" fields (ISO 639-1), for the per-language BM25 reference.
    query_languages: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The directory name (cranfield, cisi, …)."""
        return self.path.name

    def evaluated_queries(self, limit: int | None = None) -> dict[str, str]:
        """Queries with at least one relevant (score > 0) judgement, in file order, the first `limit`."""
        # A query without a relevant document has no defined nDCG/recall; BEIR and TREC
        # tooling leave such queries out, and so do we.
        out = {q: t for q, t in self.queries.items() if any(s > 0 for s in self.qrels.get(q, {}).values())}
        if limit is not None:
            out = dict(list(out.items())[:limit])
        return out


class _Problems:
    """Collects `file:line: problem` messages and raises them together."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")

    def raise_if_any(self, path: Path) -> None:
        if not self.items:
            return
        shown = self.items[:MAX_REPORTED_PROBLEMS]
        more = len(self.items) - len(shown)
        tail = f"\n  … and {more} more" if more > 0 else ""
        raise DatasetError(
            f"{path} is not a valid BEIR dataset ({len(self.items)} problem(s)):\n  "
            + "\n  ".join(shown)
            + tail
        )


def _jsonl(path: Path, problems: _Problems) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, obj in read_jsonl(path):
        where = f"{path.name}:{number}"
        if isinstance(obj, LineError):
            problems.add(where, obj.message)
        elif not isinstance(obj, dict):
            problems.add(where, f"expected a JSON object, got {type(obj).__name__}")
        else:
            yield number, obj


def _ident(obj: dict[str, Any], where: str, problems: _Problems) -> str | None:
    raw = obj.get("_id")
    # BEIR writers emit string ids; some emit integers. Both name the same document.
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = str(raw)
    if not isinstance(raw, str) or not raw.strip():
        problems.add(where, "'_id' must be a non-empty string")
        return None
    return raw.strip()


def _string(obj: dict[str, Any], name: str, where: str, problems: _Problems, *, required: bool) -> str | None:
    value = obj.get(name)
    if value is None:
        if required:
            problems.add(where, f"'{name}' is missing")
            return None
        return ""
    if not isinstance(value, str):
        problems.add(where, f"'{name}' must be a string, got {type(value).__name__}")
        return None
    return value


def _read_corpus(path: Path, problems: _Problems) -> list[BeirDoc]:
    docs: list[BeirDoc] = []
    seen: dict[str, int] = {}
    for number, obj in _jsonl(path, problems):
        where = f"{path.name}:{number}"
        ident = _ident(obj, where, problems)
        text = _string(obj, "text", where, problems, required=True)
        title = _string(obj, "title", where, problems, required=False)
        language = _string(obj, "language", where, problems, required=False)
        if ident is None or text is None or title is None:
            continue
        if ident in seen:
            problems.add(where, f"duplicate _id {ident!r} (first on line {seen[ident]})")
            continue
        seen[ident] = number
        docs.append(BeirDoc(ident, title, text, language or None))
    if not docs and not problems.items:
        problems.add(path.name, "no documents")
    return docs


def _read_queries(path: Path, problems: _Problems, languages: dict[str, str]) -> dict[str, str]:
    queries: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, obj in _jsonl(path, problems):
        where = f"{path.name}:{number}"
        ident = _ident(obj, where, problems)
        text = _string(obj, "text", where, problems, required=True)
        language = _string(obj, "language", where, problems, required=False)
        if ident is None or text is None:
            continue
        if language:
            languages[ident] = language
        if ident in queries:
            problems.add(where, f"duplicate _id {ident!r} (first on line {lines[ident]})")
            continue
        if not text.strip():
            problems.add(where, f"query {ident!r} has an empty 'text'")
            continue
        queries[ident] = text
        lines[ident] = number
    if not queries and not problems.items:
        problems.add(path.name, "no queries")
    return queries


def _is_header(fields: list[str]) -> bool:
    try:
        int(fields[-1])
    except ValueError:
        return True
    return False


def _read_qrels(
    path: Path, docs: set[str], queries: set[str], problems: _Problems
) -> tuple[dict[str, dict[str, int]], list[str]]:
    qrels: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    label = f"qrels/{path.name}"
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            where = f"{label}:{number}"
            try:
                line = raw.decode("utf-8").removeprefix("\ufeff").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                problems.add(where, f"not UTF-8 ({exc.reason} at byte {exc.start})")
                continue
            if not line.strip():
                continue
            # BEIR writes tabs; a hand-made file with spaces is still unambiguous (ids hold no blanks).
            fields = line.split("\t") if "\t" in line else line.split()
            fields = [f.strip() for f in fields]
            if number == 1 and len(fields) >= 3 and _is_header(fields):
                continue
            if len(fields) == 4:
                # TREC layout (query-id, iteration, corpus-id, score): tolerated, the iteration is unused.
                fields = [fields[0], fields[2], fields[3]]
            if len(fields) != 3:
                problems.add(
                    where, f"expected 3 tab-separated fields (query-id, corpus-id, score), got {len(fields)}"
                )
                continue
            qid, did, raw_score = fields
            try:
                score = int(raw_score)
            except ValueError:
                problems.add(where, f"score {raw_score!r} is not an integer")
                continue
            if qid not in queries:
                problems.add(where, f"query-id {qid!r} is not in queries.jsonl")
                continue
            if did not in docs:
                problems.add(where, f"corpus-id {did!r} is not in corpus.jsonl")
                continue
            if did in qrels.get(qid, {}):
                notes.append(f"{where}: repeated judgement of ({qid}, {did}); the last one counts")
            qrels.setdefault(qid, {})[did] = score
    if not qrels and not problems.items:
        problems.add(label, "no judgements")
    return qrels, notes


def load_dataset(directory: Path | str, split: str = "test") -> BeirDataset:
    """Read and validate a BEIR directory; DatasetError lists every problem with its file and line."""
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise DatasetError(
            f"{path}: not a directory (expected corpus.jsonl, queries.jsonl, qrels/{split}.tsv)"
        )
    files = {
        "corpus": path / "corpus.jsonl",
        "queries": path / "queries.jsonl",
        "qrels": path / "qrels" / f"{split}.tsv",
    }
    missing = [str(p.relative_to(path)) for p in files.values() if not p.is_file()]
    if missing:
        raise DatasetError(f"{path}: missing {', '.join(missing)} (BEIR layout)")
    problems = _Problems()
    docs = _read_corpus(files["corpus"], problems)
    query_languages: dict[str, str] = {}
    queries = _read_queries(files["queries"], problems, query_languages)
    qrels, notes = _read_qrels(files["qrels"], {d.id for d in docs}, set(queries), problems)
    problems.raise_if_any(path)
    dataset = BeirDataset(path.resolve(), docs, queries, qrels, split, notes, query_languages)
    if not dataset.evaluated_queries():
        raise DatasetError(f"{path}: no query has a relevant (score > 0) judgement; nothing to evaluate")
    return dataset
