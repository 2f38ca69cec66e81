"""Human output of the CLI: aligned tables, entries as text, key/value lines; JSON when piped.

Every formatter takes the JSON-ready dicts the commands print with --json, so the two outputs
cannot drift apart. Only the standard library: the table path stays as fast as the JSON one.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any

import typer

JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print JSON (the default when stdout is not a terminal).")
]
SHORT_ID = 8
_MIN_FLEX = 16  # the flexible column never gets narrower than this, even on a tiny terminal
_TAGS_WIDTH = 24


def short_id(ident: str) -> str:
    """The last 8 hex digits of an id: its random part (a UUIDv7 starts with its creation time)."""
    return ident[-SHORT_ID:]


def wants_json(forced: bool) -> bool:
    """JSON when asked for, or when stdout is not a terminal (pipes and scripts keep getting JSON)."""
    return forced or not sys.stdout.isatty()


def width() -> int:
    """The terminal's width in columns (COLUMNS wins, as for every other tool)."""
    return shutil.get_terminal_size((100, 24)).columns


def clip(text: str, limit: int) -> str:
    """One line of at most `limit` characters, an ellipsis marking a cut."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: max(limit - 1, 0)] + "…"


def day(value: Any) -> str:
    """A timestamp as YYYY-MM-DD (ISO strings and datetimes alike)."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d")
    return str(value or "")[:10]


def moment(value: Any) -> str:
    """A timestamp to the second, as YYYY-MM-DD HH:MM:SS+zone."""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return str(value or "")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], flex: int) -> str:
    """Columns aligned on the widest cell; column `flex` takes (and is cut to) the width left over."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    fixed = sum(w for i, w in enumerate(widths) if i != flex) + 2 * (len(headers) - 1)
    widths[flex] = max(min(widths[flex], width() - fixed), _MIN_FLEX)
    lines = []
    for cells in [list(headers), *[list(r) for r in rows]]:
        cells[flex] = clip(cells[flex], widths[flex])
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    return "\n".join(lines)


def _tags(tags: Sequence[str]) -> str:
    return clip(",".join(tags), _TAGS_WIDTH)


def _label(item: Mapping[str, Any], text_key: str) -> str:
    title, text = item.get("title"), " ".join(str(item.get(text_key) or "").split())
    if title and text:
        return f"{title} — {text}"
    return str(title or text)


def entries_table(entries: Sequence[Mapping[str, Any]]) -> str:
    """`list` on a terminal: short id, updated day, kind, language, tags, title (or the text's start)."""
    rows = [
        [
            short_id(e["id"]) + ("†" if e.get("deleted_at") else ""),
            day(e["updated_at"]),
            e["kind"],
            e["language"],
            _tags(e["tags"]),
            str(e.get("title") or " ".join(e.get("body", "").split())),
        ]
        for e in entries
    ]
    return table(["ID", "UPDATED", "KIND", "LANGUAGE", "TAGS", "TITLE / TEXT"], rows, flex=5)


def hits_table(hits: Sequence[Mapping[str, Any]]) -> str:
    """`search` on a terminal: rank, score, short id, kind, language, tags, updated, title — snippet."""
    rows = [
        [
            str(h["rank"]) + ("*" if h.get("pinned") else ""),
            f"{h['score']:.4f}",
            short_id(h["id"]),
            h["kind"],
            h["language"],
            _tags(h["tags"]),
            day(h["updated_at"]),
            _label(h, "snippet"),
        ]
        for h in hits
    ]
    return table(["#", "SCORE", "ID", "KIND", "LANGUAGE", "TAGS", "UPDATED", "TITLE — SNIPPET"], rows, flex=7)


def breakdown_line(hit: Mapping[str, Any]) -> str:
    """One hit's --explain breakdown: each branch's rank and score, the fused score, matched terms."""
    b = hit["breakdown"]
    vector, lexical = "vector -", "lexical -"
    if b["cosine_similarity"] is not None:
        vector = f"vector #{b['vector_rank']} cos {b['cosine_similarity']:.3f}"
    if b["lexical_score"] is not None:
        lexical = f"lexical #{b['lexical_rank']} bm25 {b['lexical_score']:.3f}"
    terms = f"  terms {', '.join(b['matched_terms'])}" if b["matched_terms"] else ""
    return f"{hit['rank']}. {short_id(hit['id'])}  {vector}  {lexical}  fused {b['fused']:.4f}{terms}"


def key_values(pairs: Sequence[tuple[str, Any]]) -> str:
    """`key  value` lines, values aligned; None values are left out."""
    shown = [(k, v) for k, v in pairs if v is not None]
    pad = max((len(k) for k, _ in shown), default=0) + 2
    return "\n".join(f"{(k + ':').ljust(pad)}{v}" for k, v in shown)


def entry_text(entry: Mapping[str, Any]) -> str:
    """`get` on a terminal: the header fields, a blank line, then the full text."""
    vector = "pending" if entry.get("vector_pending") else entry.get("embedding_model")
    header = key_values(
        [
            ("id", entry["id"]),
            ("title", entry.get("title")),
            ("kind", entry["kind"]),
            ("source", entry.get("source")),
            ("language", entry["language"]),
            ("tags", ", ".join(entry["tags"]) or None),
            ("version", entry["version"]),
            ("created", moment(entry["created_at"])),
            ("updated", moment(entry["updated_at"])),
            ("deleted", moment(entry["deleted_at"]) if entry.get("deleted_at") else None),
            ("hash", entry["content_hash"]),
            ("vector", vector),
            ("metadata", json.dumps(entry["metadata"], ensure_ascii=False) if entry["metadata"] else None),
        ]
    )
    return f"{header}\n\n{entry['body']}"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))) or "-"


def stats_text(stats: Mapping[str, Any]) -> str:
    """`stats` on a terminal: one figure per line."""
    model = stats.get("embedding_model")
    if model and stats.get("embedding_dim"):
        model = f"{model} ({stats['embedding_dim']}-d)"
    return key_values(
        [
            ("owner", stats["owner"]),
            ("entries", f"{stats['entries']} ({stats['deleted']} deleted)"),
            ("by language", _counts(stats["by_language"])),
            ("by kind", _counts(stats["by_kind"])),
            ("vectors", _counts(stats["vectors_by_model"])),
            ("pending vectors", stats["pending_vectors"]),
            ("embedding model", model or "none"),
            ("schema revision", stats.get("schema_revision") or "none"),
        ]
    )


def emit(data: Any, forced_json: bool, render: Callable[[Any], str]) -> None:
    """Print `render(data)` on a terminal, else `data` as indented JSON (also with --json)."""
    if wants_json(forced_json):
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        typer.echo(render(data))
