"""Reproducible benchmark texts: BEIR collections (see data_dir) and Debian man pages.

Where the BEIR collections live: `set_data_dir()` (the `--data-dir` option of the benchmark
commands), else $PGRECALL_BENCH_DATA, else the copies of Cranfield and CISI shipped in this
package (`evaluation/data/`, each with its README: origin, conversion and licence), so the
benchmarks run from any directory with nothing beside the installation.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA_DIR = Path(__file__).resolve().parent / "data"
_chosen_data_dir: Path | None = None
MAN_DIR = Path("/usr/share/man")
# Man page directory → ISO 639-1 code; pages in languages Postgres cannot stem go to 'simple'.
_MAN_LANG = {
    "da": "da", "de": "de", "es": "es", "fi": "fi", "fr": "fr", "hu": "hu", "id": "id", "it": "it",
    "nl": "nl", "pt": "pt", "pt_BR": "pt", "ro": "ro", "ru": "ru", "sr": "sr", "sv": "sv", "tr": "tr",
}  # fmt: skip
_ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\s[+-]?\d"), ""),  # size changes
    (re.compile(r"\\\*(\[[^\]]*\]|\(..|.)"), ""),  # string registers
    (re.compile(r"\\\((em|en|hy)"), "-"),
    (re.compile(r"\\\((lq|rq|dq)"), '"'),
    (re.compile(r"\\\(..|\\\[[^\]]*\]"), ""),  # other special characters
    (re.compile(r"\\[-e]"), "-"),
    (re.compile(r"\\[&,/|^%:]"), ""),
    (re.compile(r"\\(.)"), r"\1"),
]
COPY_MARK = "#"  # key of a numbered copy: the original's key, COPY_MARK, the copy's number
_TEXT_MACROS = {"B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB", "IP", "TP", "Nm", "Nd", "Ar"}


@dataclass(frozen=True)
class Doc:
    """One benchmark text: a stable key, a title, a body and its ISO language (None = detect/simple)."""

    key: str
    title: str
    body: str
    language: str | None


def set_data_dir(path: Path | None) -> None:
    """Use BEIR collections from `path` (None: back to the environment or the default)."""
    global _chosen_data_dir
    _chosen_data_dir = path


def data_dir() -> Path:
    """The folder holding the BEIR collections (one sub-folder each)."""
    if _chosen_data_dir is not None:
        return _chosen_data_dir
    return Path(os.environ.get("PGRECALL_BENCH_DATA") or DEFAULT_DATA_DIR)


def read_beir(name: str) -> list[Doc]:
    """Documents of a BEIR collection under data_dir() (empty texts skipped)."""
    out = []
    with (data_dir() / name / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if (row.get("text") or "").strip() or (row.get("title") or "").strip():
                out.append(Doc(f"{name}:{row['_id']}", row.get("title") or "", row.get("text") or "", "en"))
    return out


def read_queries(name: str) -> dict[str, str]:
    """Query id → text of a BEIR collection."""
    with (data_dir() / name / "queries.jsonl").open(encoding="utf-8") as fh:
        return {row["_id"]: row["text"] for row in map(json.loads, fh)}


def read_qrels(name: str) -> dict[str, dict[str, int]]:
    """Query id → {doc id: relevance} of a BEIR collection's test split."""
    qrels: dict[str, dict[str, int]] = {}
    with (data_dir() / name / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    return qrels


def roff_to_text(source: str) -> list[tuple[str, str]]:
    """(section heading, paragraph text) pairs of a roff man page, markup crudely stripped."""
    # Crude on purpose: groff takes ~0.1 s a page, this takes ~1 ms, and the
    # benchmark needs words, not typography.
    heading = ""
    para: list[str] = []
    out: list[tuple[str, str]] = []

    def flush() -> None:
        text = " ".join(para).strip()
        if text:
            out.append((heading, text))
        para.clear()

    for raw in source.splitlines():
        line = raw
        for pattern, repl in _ESCAPES:
            line = pattern.sub(repl, line)
        if raw.startswith((".", "'")):
            parts = line[1:].strip().split(None, 1)
            macro = parts[0] if parts else ""
            arg = parts[1].replace('"', "").strip() if len(parts) > 1 else ""
            if macro in ("SH", "SS", "Sh", "Ss"):
                flush()
                heading = arg.title()
            elif macro in ("PP", "P", "LP", "Pp", "sp", "br"):
                flush()
            elif macro in _TEXT_MACROS and arg:
                para.append(arg)
            continue
        if line.strip():
            para.append(line.strip())
    flush()
    return out


def _man_files() -> Iterator[tuple[Path, str | None]]:
    # gcloud's ~16k generated pages come last so that smaller stores hold the varied pages.
    english = sorted(MAN_DIR.glob("man[1-8]/*.gz"), key=lambda p: (p.name.startswith("gcloud"), str(p)))
    yield from ((path, "en") for path in english if not path.name.startswith("gcloud"))
    for lang_dir in sorted(p for p in MAN_DIR.iterdir() if p.is_dir() and not p.name.startswith("man")):
        for path in sorted(lang_dir.glob("man[1-8]/*.gz")):
            yield path, _MAN_LANG.get(lang_dir.name)
    yield from ((path, "en") for path in english if path.name.startswith("gcloud"))


def man_chunks(min_words: int = 15, max_words: int = 120) -> Iterator[Doc]:
    """Distinct man page paragraphs merged into chunks of min..max words, titled 'page: heading'."""
    seen: set[bytes] = set()
    for doc in _raw_man_chunks(min_words, max_words):
        # Boilerplate sections repeat verbatim across generated pages; keep the first copy.
        digest = hashlib.blake2b(doc.body.encode(), digest_size=16).digest()
        if digest not in seen:
            seen.add(digest)
            yield doc


def _raw_man_chunks(min_words: int, max_words: int) -> Iterator[Doc]:
    for path, lang in _man_files():
        try:
            source = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        except (OSError, EOFError):
            continue
        page = path.name.removesuffix(".gz")
        rel = path.relative_to(MAN_DIR)
        buf: list[str] = []
        head = ""
        n = 0
        for heading, text in roff_to_text(source):
            if heading != head and buf:
                if len(" ".join(buf).split()) >= min_words:
                    yield Doc(f"man:{rel}:{n}", f"{page}: {head}", " ".join(buf), lang)
                    n += 1
                buf = []
            head = heading
            buf.append(text)
            if len(" ".join(buf).split()) >= max_words:
                body = " ".join(" ".join(buf).split()[: max_words * 2])
                yield Doc(f"man:{rel}:{n}", f"{page}: {head}", body, lang)
                n += 1
                buf = []
        if buf and len(" ".join(buf).split()) >= min_words:
            yield Doc(f"man:{rel}:{n}", f"{page}: {head}", " ".join(buf), lang)


def benchmark_docs(n: int, seed: int = 7) -> list[Doc]:
    """n distinct texts: every Cranfield and CISI document, then man page chunks in a seeded order.

    The BEIR documents come first so that every store holds both collections (their queries
    then measure quality among distractors). Beyond the available texts, documents repeat
    with a numbered suffix so that every body stays distinct.
    """
    beir = read_beir("cranfield") + read_beir("cisi")
    man = list(man_chunks()) if n > len(beir) else []
    random.Random(seed).shuffle(man)  # noqa: S311 - reproducible sampling, not security
    pool = beir + man
    out = pool[:n]
    i = 0
    while len(out) < n:
        base = pool[i % len(pool)]
        copy = i // len(pool) + 1
        key = f"{base.key}{COPY_MARK}{copy}"
        out.append(Doc(key, base.title, f"{base.body} (copy {copy})", base.language))
        i += 1
    return out


def is_copy(doc: Doc) -> bool:
    """Whether `doc` is a numbered copy that benchmark_docs made beyond the available texts."""
    return COPY_MARK in doc.key
