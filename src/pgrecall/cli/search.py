"""`pgrecall search`: the search tool's retrieval (pins, dedup, diversity) from the command line."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pgrecall.cli import filters as f
from pgrecall.cli import output
from pgrecall.cli.common import fail, open_app
from pgrecall.cli.filters import upto
from pgrecall.cli.output import JsonFlag
from pgrecall.domain.validation import MAX_TOP_K

if TYPE_CHECKING:
    from pgrecall.services.retrieval import Ranked, Retrieved

_WHEN = "ISO 8601 date or time, e.g. 2026-01-31 or 2026-01-31T12:00+02:00; no offset means UTC"


def _moment(option: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        fail(f"{option}: {value!r} is not an {_WHEN}", 2)


def _hit_json(rank: int, ranked: Ranked, explain: bool, more: list[Ranked] | None) -> dict[str, Any]:
    from pgrecall.domain.text import snippet

    entry, hit = ranked.entry, ranked.hit
    out: dict[str, Any] = {
        "rank": rank,
        "id": str(entry.id),
        "title": entry.title,
        "snippet": hit.snippet if hit is not None else snippet(entry.body),
        "tags": entry.tags,
        "kind": entry.kind,
        "source": entry.source,
        "language": entry.language,
        "content_hash": entry.content_hash,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "score": ranked.score,
        "pinned": ranked.pinned,
        "document_id": str(entry.document_id) if entry.document_id else None,
        "section_path": entry.section_path,
    }
    if more is not None:
        out["more_chunks"] = [str(r.entry.id) for r in more]
    if explain:
        out["breakdown"] = asdict(hit.breakdown) if hit is not None else None
    return out


def _result_json(result: Retrieved, explain: bool, documents: int | None) -> dict[str, Any]:
    """The result as JSON; `documents`: grouped into at most this many documents (--by-document)."""
    from pgrecall.services.retrieval import group_by_document

    slots: list[tuple[Ranked, list[Ranked] | None]] = (
        [(r, None) for r in result.items]
        if documents is None
        else [(best, more) for best, more in group_by_document(result.items, documents)]
    )
    return {
        "status": result.status,
        "reason": result.scope_reason,
        "degraded": result.degraded,
        "degraded_reason": result.degraded_reason,
        "used": result.used,
        "selection_ignored": result.selection_ignored,
        "hits": [_hit_json(i, r, explain, more) for i, (r, more) in enumerate(slots, start=1)],
        "missing_pins": result.missing_pins,
        "fusion": result.fusion,
        "fusion_weights": result.fusion_weights,
        "fusion_scale": result.fusion_scale,
        "fusion_evidence": asdict(result.fusion_evidence) if result.fusion_evidence else None,
        "embedder_wait_ms": result.embedder_wait_ms,
        "applied": result.applied,
        "total_candidates": result.total_candidates,
        "timings": result.timings,
    }


def _render(data: dict[str, Any]) -> str:
    lines = []
    if data["hits"]:
        lines.append(output.hits_table(data["hits"]))
    else:
        empty = {"empty_store": "no entries stored yet", "out_of_scope": "out of scope"}
        why = f" ({data['reason']})" if data.get("reason") and data["status"] != "empty_store" else ""
        lines.append(empty.get(data["status"], "no matches") + why)
    if data["embedder_wait_ms"] is not None:
        waited = data["embedder_wait_ms"] / 1000
        lines.append(f"note: waited {waited:.1f} s for the embedding model to load")
    if data["degraded"]:
        lines.append(f"note: degraded search ({data['degraded_reason']})")
    if data["selection_ignored"]:
        lines.append(f"note: selection ignored ({data['selection_ignored']})")
    if data["missing_pins"]:
        lines.append("note: pinned hashes not found: " + ", ".join(data["missing_pins"]))
    explained = [h for h in data["hits"] if h.get("breakdown")]
    if explained:
        lines.append("")
        lines.extend(output.breakdown_line(h) for h in explained)
    return "\n".join(lines)


def search(
    query: Annotated[
        str | None,
        typer.Argument(metavar="QUERY", help="What you are looking for, in plain words, any language."),
    ] = None,
    top_k: Annotated[
        int, typer.Option("--top-k", "-k", metavar="N", help=f"Results wanted {upto(MAX_TOP_K)}.")
    ] = 5,
    mode: Annotated[str, typer.Option(metavar="MODE", help="hybrid, vector or lexical.")] = "hybrid",
    language: f.Language = None,
    kind: f.Kind = None,
    source: f.Source = None,
    source_prefix: f.SourcePrefix = None,
    document: f.Document = None,
    version: f.Version = None,
    tag: f.TagsAll = None,
    any_tag: Annotated[
        list[str] | None,
        typer.Option("--any-tag", metavar="TAG", help="Only entries with at least one of these tags."),
    ] = None,
    created_after: Annotated[str | None, typer.Option(metavar="WHEN", help="Created at or after.")] = None,
    created_before: Annotated[str | None, typer.Option(metavar="WHEN", help="Created before.")] = None,
    updated_after: Annotated[str | None, typer.Option(metavar="WHEN", help="Updated at or after.")] = None,
    updated_before: Annotated[str | None, typer.Option(metavar="WHEN", help="Updated before.")] = None,
    min_score: Annotated[
        float | None,
        typer.Option(metavar="COS", help="Minimum cosine similarity of every hit (-1..1)."),
    ] = None,
    min_relevance: Annotated[
        float | None, typer.Option(metavar="R", help="Leave out hits less relevant than this (0..1).")
    ] = None,
    recency_days: Annotated[
        float | None, typer.Option(metavar="DAYS", help="Favour recent entries: the half-life in days.")
    ] = None,
    superseded: f.Superseded = False,
    expired: f.Expired = False,
    pin: Annotated[
        list[str] | None,
        typer.Option("--pin", metavar="HASH", help="A content_hash to put first (repeatable, in order)."),
    ] = None,
    selected_text: Annotated[
        str | None, typer.Option(metavar="TEXT", help="Also find entries related to this text.")
    ] = None,
    diversify: Annotated[bool, typer.Option("--diversify", help="Re-rank for variety (MMR).")] = False,
    by_document: Annotated[
        bool,
        typer.Option("--by-document", help="N documents, each its best chunk (more_chunks: up to 2 more)."),
    ] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show each hit's score breakdown.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Search entries by meaning and by words: a table on a terminal, else JSON.

    Dates (--created-after …) take an ISO 8601 date or time; no offset means UTC.
    """
    from pgrecall.errors import PgrecallError
    from pgrecall.services.retrieval import retrieval_request

    request = retrieval_request(
        query,
        selected_text=selected_text,
        top_k=top_k,
        pinned_hashes=pin,
        diversify=diversify,
        group_by_document=by_document,
        mode=mode,
        min_similarity=min_score,
        min_relevance=min_relevance,
        recency_half_life_days=recency_days,
        language=language,
        kind=kind,
        source=source,
        source_prefix=source_prefix,
        document=document,
        version=version,
        tags_all=tag,
        tags_any=any_tag,
        created_after=_moment("--created-after", created_after),
        created_before=_moment("--created-before", created_before),
        updated_after=_moment("--updated-after", updated_after),
        updated_before=_moment("--updated-before", updated_before),
        include_superseded=superseded,
        include_expired=expired,
    )
    with open_app() as opened:
        try:
            result = opened.retrieval.retrieve(opened.settings.owner, request)
        except PgrecallError as exc:
            fail(str(exc))
    output.emit(_result_json(result, explain, top_k if by_document else None), as_json, _render)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("search")(search)
