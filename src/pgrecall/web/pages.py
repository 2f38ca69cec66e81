"""The pages that show: dashboard, list, search with explained scores, one entry, documents."""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from pgrecall.domain.documents import SECTION_SEPARATOR, place_parts
from pgrecall.domain.entries import Entry
from pgrecall.domain.language import SEGMENTED, SIMPLE
from pgrecall.domain.text import snippet
from pgrecall.services.highlight import Piece
from pgrecall.services.retrieval import Ranked, RetrievalRequest, group_by_document
from pgrecall.services.search import DocumentPlace, ScoreBreakdown, SearchOptions
from pgrecall.web.forms import (
    LIST_PAGE_SIZE,
    MODES,
    SEARCH_TOP_K,
    EntryEdit,
    document_list_query,
    list_query,
    search_query,
)
from pgrecall.web.sessions import Session
from pgrecall.web.ui import Ui, signed_in

CHART_WIDTH = 240  # px of the widest fused score's bar
RECENT_ON_DASHBOARD = 15


@dataclass(frozen=True)
class ShownHit:
    """One search result as the page draws it: pieces of its snippet and its bar lengths."""

    rank: int
    ranked: Ranked
    pieces: list[Piece]
    breakdown: ScoreBreakdown | None
    vector_px: int
    lexical_px: int
    recency_px: int
    place: DocumentPlace | None  # the document chunk's place, for a hit that is one
    trail: str  # the sections after the document's title, each after a separator
    more_chunks: int = 0  # one hit per document: its other passages among the results


def section_trail(document_title: str | None, section_path: list[str]) -> str:
    """The sections shown after a document's title (linked apart), each after the separator."""
    parts = place_parts(document_title, section_path)
    sections = parts[1:] if document_title else parts
    return "".join(SECTION_SEPARATOR + part for part in sections)


def _shown_hits(items: list[Ranked], highlighted: list[list[Piece]], more: list[int]) -> list[ShownHit]:
    bars = [r.hit.breakdown for r in items if r.hit is not None]
    sums = [max(b.vector_share, 0.0) + max(b.lexical_share, 0.0) + b.recency for b in bars]
    widest = max(sums, default=0.0) or 1.0

    def px(value: float) -> int:
        # A convex cosine part below the model's unrelated level is negative: no bar for it.
        return max(0, round(CHART_WIDTH * value / widest))

    shown = []
    for rank, (ranked, pieces, more_chunks) in enumerate(zip(items, highlighted, more, strict=True), start=1):
        b = ranked.hit.breakdown if ranked.hit is not None else None
        place = ranked.hit.document if ranked.hit is not None else None
        shown.append(
            ShownHit(
                rank=rank,
                ranked=ranked,
                pieces=pieces,
                breakdown=b,
                vector_px=px(b.vector_share) if b else 0,
                lexical_px=px(b.lexical_share) if b else 0,
                recency_px=px(b.recency) if b else 0,
                place=place,
                trail=section_trail(place.title, place.section_path) if place else "",
                more_chunks=more_chunks,
            )
        )
    return shown


def language_how(entry: Entry) -> str:
    """How an entry's stemming language was chosen, in words (from what the write recorded)."""
    confidence = (
        f" (confidence {entry.language_confidence:.2f})" if entry.language_confidence is not None else ""
    )
    if entry.language == SIMPLE and entry.detected_language in SEGMENTED:
        by = "given by the writer" if entry.language_how == "explicit" else "recognised by its script"
        return f"{entry.detected_language}, {by}: unstemmed, searched by character bigrams"
    return {
        "explicit": "given by the writer",
        "detected": f"detected from the text{confidence}",
        "default": "not stemmed: the text was too short or its language unsure",
        "unsupported": f"recognised as {entry.detected_language}, which this server cannot stem: unstemmed",
    }.get(entry.language_how or "", "not recorded (written before pgrecall recorded it, or imported)")


@signed_in
async def dashboard(ui: Ui, request: Request, session: Session) -> Response:
    """Entries by language and kind, pending vectors, and what changed lately."""
    stats = await ui.call(ui.app.entries.stats, session.owner)
    recent = await ui.call(ui.app.activity.recent, session.owner, RECENT_ON_DASHBOARD)
    widest = max([*stats.by_language.values(), *stats.by_kind.values(), 1])
    return ui.render(
        "dashboard.html",
        request,
        session,
        stats=stats,
        recent=recent,
        bar=lambda n: max(2, round(CHART_WIDTH * n / widest)),
    )


@signed_in
async def entry_list(ui: Ui, request: Request, session: Session) -> Response:
    """Entries newest first, with filters and keyset paging."""
    asked = list_query(request.query_params)
    page = await ui.call(
        ui.app.entries.list, session.owner, asked.filters, limit=LIST_PAGE_SIZE, cursor=asked.cursor
    )
    next_url = (
        f"/ui/entries?{urlencode(asked.echo | {'cursor': page.next_cursor})}" if page.next_cursor else None
    )
    return ui.render(
        "list.html",
        request,
        session,
        entries=page.entries,
        asked=asked.echo,
        next_url=next_url,
        first_url=f"/ui/entries?{urlencode(asked.echo)}" if asked.cursor else None,
        languages=ui.app.catalog.supported_codes(),
        snippet=snippet,
    )


@signed_in
async def search_page(ui: Ui, request: Request, session: Session) -> Response:
    """The search form and, with a question, its ranked hits with their score breakdowns."""
    asked = search_query(request.query_params)
    hits: list[ShownHit] = []
    degraded_reason = None
    fusion = None
    fusion_weights = None
    fusion_scale = None
    fusion_evidence = None
    embedder_wait_ms = None
    if asked.query is not None:
        retrieval = RetrievalRequest(
            query=asked.query,
            top_k=SEARCH_TOP_K,
            options=SearchOptions(mode=asked.mode, filters=asked.filters),
            group_by_document=asked.by_document,
        )
        result = await ui.call(ui.app.retrieval.retrieve, session.owner, retrieval)
        items, more = list(result.items), [0] * len(result.items)
        if asked.by_document:
            grouped = group_by_document(result.items, SEARCH_TOP_K)
            items, more = [best for best, _ in grouped], [len(others) for _, others in grouped]
        degraded_reason = result.degraded_reason
        fusion = result.fusion
        fusion_weights = result.fusion_weights
        fusion_scale = result.fusion_scale
        fusion_evidence = result.fusion_evidence
        embedder_wait_ms = result.embedder_wait_ms
        rows = [
            (
                r.hit.snippet if r.hit is not None else snippet(r.entry.body),
                (r.hit.breakdown.regconfig if r.hit is not None else None) or r.entry.language,
                r.hit.breakdown.matched_terms if r.hit is not None else [],
            )
            for r in items
        ]
        highlighted = await ui.call(ui.app.highlighter.pieces, rows)
        hits = _shown_hits(items, highlighted, more)
    return ui.render(
        "search.html",
        request,
        session,
        asked=asked.echo,
        searched=asked.query is not None,
        hits=hits,
        modes=MODES,
        degraded_reason=degraded_reason,
        embedder_wait_ms=embedder_wait_ms,
        fusion=fusion,
        fusion_weights=fusion_weights,
        fusion_scale=fusion_scale,
        fusion_evidence=fusion_evidence,
        any_imputed=any(h.breakdown is not None and h.breakdown.lexical_imputed for h in hits),
        languages=ui.app.catalog.supported_codes(),
        chart_width=CHART_WIDTH,
    )


async def show_entry(
    ui: Ui,
    request: Request,
    session: Session,
    *,
    status: int = 200,
    message: str | None = None,
    draft: EntryEdit | None = None,
) -> Response:
    """One entry: full text, metadata, language, hash, versions, links, supersede chain, edit form.

    After a refused edit the form keeps what was typed (`draft`), set to the version now stored:
    the editor sees the current text above it and decides, nothing typed is lost.
    """
    entry = await ui.call(
        ui.app.entries.get, session.owner, request.path_params["entry_id"], include_deleted=True
    )
    older, newer = await ui.call(ui.app.entries.chain, session.owner, entry.id)
    related = [] if entry.deleted else await ui.call(ui.app.links.related, session.owner, entry.id)
    kept = ui.app.entries.as_kept(entry)
    document = (
        await ui.call(ui.app.documents.get, session.owner, entry.document_id, include_deleted=True)
        if entry.document_id is not None
        else None
    )
    return ui.render(
        "entry.html",
        request,
        session,
        status=status,
        message=message,
        entry=entry,
        language=kept.language,
        language_how=language_how(entry),
        metadata=json.dumps(entry.metadata, ensure_ascii=False, indent=2, sort_keys=True),
        older=older,
        newer=newer,
        related=related,
        languages=ui.app.catalog.supported_codes(),
        vector_pending=kept.vector_pending,
        draft=draft,
        document=document,
        trail=section_trail(document.title, entry.section_path or []) if document else "",
    )


entry_page = signed_in(show_entry)


@signed_in
async def document_list(ui: Ui, request: Request, session: Session) -> Response:
    """Documents by source and version, with filters and paging."""
    asked = document_list_query(request.query_params)
    # One more than a page: whether a next page exists without counting them all.
    found = await ui.call(
        ui.app.documents.list,
        session.owner,
        source_prefix=asked.source_prefix,
        version=asked.version,
        include_deleted=asked.include_deleted,
        limit=LIST_PAGE_SIZE + 1,
        offset=asked.offset,
    )
    next_offset = str(asked.offset + LIST_PAGE_SIZE)
    return ui.render(
        "documents.html",
        request,
        session,
        documents=found[:LIST_PAGE_SIZE],
        asked=asked.echo,
        next_url=f"/ui/documents?{urlencode(asked.echo | {'offset': next_offset})}"
        if len(found) > LIST_PAGE_SIZE
        else None,
        first_url=f"/ui/documents?{urlencode(asked.echo)}" if asked.offset else None,
    )


async def show_document(
    ui: Ui, request: Request, session: Session, *, status: int = 200, message: str | None = None
) -> Response:
    """One document: its metadata and its outline (sections in order, each with its chunks)."""
    owner = session.owner
    document = await ui.call(
        ui.app.documents.get, owner, request.path_params["document_id"], include_deleted=True
    )
    # A deleted document's chunks went with it: there is no outline to show until it is restored.
    sections = [] if document.deleted else (await ui.call(ui.app.documents.outline, owner, document.id))[1]
    return ui.render(
        "document.html",
        request,
        session,
        status=status,
        message=message,
        document=document,
        sections=sections,
        metadata=json.dumps(document.metadata, ensure_ascii=False, indent=2, sort_keys=True),
        separator=SECTION_SEPARATOR,
        snippet=snippet,
    )


document_page = signed_in(show_document)
