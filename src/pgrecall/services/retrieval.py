"""Citable retrieval: selected text, pinned hashes, dedup, diversity, and cited context assembly.

It wraps the hybrid search (one SQL statement per search) with plain-Python steps:
1. what to search: a usable selection alone (the question is then ignored: the user pointed at
   what they mean), else the query; a selection search has a default relevance floor and, when
   nothing clears it, answers `out_of_scope` with no entries rather than unrelated ones;
2. pins: entries whose content_hash the caller pins come first, in the given order;
3. the rest of the slots: the ranking, minus pinned entries, minus exact and near duplicates
   (word 3-shingle Jaccard > 0.8), optionally re-ranked by MMR (λ = 0.7).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from pgrecall.domain.entries import Entry, EntryFilters, Status
from pgrecall.domain.ranking import Candidate, collapse, mmr
from pgrecall.domain.relevance import DEFAULT_SELECTION_MIN_RELEVANCE
from pgrecall.domain.text import normalize_text
from pgrecall.domain.validation import (
    MAX_QUERY_CHARS,
    MAX_SELECTION_CHARS,
    MAX_TOP_K,
    check_pins,
    check_top_k,
)
from pgrecall.errors import InvalidInputError
from pgrecall.services.search import SearchHit, SearchOptions, SearchResult, SearchService
from pgrecall.store.entries import EntryStore
from pgrecall.store.search import FusionEvidence

# Candidates fetched for the fill; dedup and MMR need some to spare beyond top_k.
POOL = MAX_TOP_K
# Grouped by document: the chunks one document's slot carries (its best and the next ones).
PER_DOCUMENT = 3


@dataclass(frozen=True)
class RetrievalRequest:
    """What to retrieve: a query and/or a selection, pins, how many, and how to search."""

    query: str | None = None
    selected_text: str | None = None
    top_k: int = 5
    pinned_hashes: Sequence[str] | None = None
    diversify: bool = False
    options: SearchOptions = field(default_factory=SearchOptions)
    # top_k documents (a note counts as its own), each with up to PER_DOCUMENT chunks.
    group_by_document: bool = False


def retrieval_request(
    query: str | None,
    *,
    selected_text: str | None = None,
    top_k: int = 5,
    pinned_hashes: Sequence[str] | None = None,
    diversify: bool = False,
    group_by_document: bool = False,
    mode: str = "hybrid",
    min_similarity: float | None = None,
    min_relevance: float | None = None,
    recency_half_life_days: float | None = None,
    **filters: Any,
) -> RetrievalRequest:
    """The request of a surface's flat parameters (MCP tools, CLI); `filters` are EntryFilters' fields."""
    return RetrievalRequest(
        query=query,
        selected_text=selected_text,
        top_k=top_k,
        pinned_hashes=pinned_hashes,
        diversify=diversify,
        group_by_document=group_by_document,
        options=SearchOptions(
            mode=mode,
            filters=EntryFilters(**filters),
            min_similarity=min_similarity,
            min_relevance=min_relevance,
            recency_half_life_days=recency_half_life_days,
        ),
    )


@dataclass(frozen=True)
class Ranked:
    """One result slot: a stored entry, its search hit (None for a pin the query did not match)."""

    entry: Entry
    hit: SearchHit | None
    score: float
    pinned: bool


def group_by_document(items: Sequence[Ranked], top_k: int) -> list[tuple[Ranked, list[Ranked]]]:
    """One slot per document (its best chunk first, then its other chunks in rank order); notes stay."""
    groups: dict[object, list[Ranked]] = {}
    for ranked in items:
        groups.setdefault(ranked.entry.document_id or ranked.entry.id, []).append(ranked)
    return [(members[0], members[1:]) for members in groups.values()][:top_k]


@dataclass
class Retrieved:
    """What retrieve() returns."""

    status: Status
    items: list[Ranked]
    missing_pins: list[str]
    degraded: bool
    degraded_reason: str | None
    used: str  # "query", "selection", "selection; query ignored"
    selection_ignored: str | None
    # Why nothing came back (out_of_scope, no_matches, empty_store): one line.
    scope_reason: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    below_relevance: int = 0  # hits the relevance floor left out (summed over the searches)
    fusion: str = "rrf"  # how the search(es) fused their branches ("convex+rrf" when they differed)
    fusion_weights: dict[str, float] | None = None
    fusion_scale: dict[str, float] | None = None  # the first search's lexical mean and sd (convex)
    fusion_evidence: FusionEvidence | None = None  # what set the first search's weights (convex)
    # How long the search(es) waited for a loading embedder (cold start); None: it was ready.
    embedder_wait_ms: float | None = None
    # Distinct candidates of both branches; what the retrieval ran with; its stages.
    total_candidates: int = 0
    applied: dict[str, Any] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)
    # A returned hit's id -> the entries dropped as its near-copies (build_context warns when one
    # is another version of the cited chunk's source: the versions may differ in a detail).
    near_copies: dict[str, list[Entry]] = field(default_factory=dict)


def selection_text(selected_text: str | None) -> tuple[str | None, str | None]:
    """The usable selection and, when it cannot be used, why (the query alone is used then)."""
    if selected_text is None:
        return None, None
    if "\x00" in selected_text:
        return None, "selected_text contains NUL characters"
    if len(selected_text) > MAX_SELECTION_CHARS:
        return None, f"selected_text is {len(selected_text)} characters; the limit is {MAX_SELECTION_CHARS}"
    flat = normalize_text(selected_text)
    if not flat:
        return None, "selected_text is empty"
    if len(flat) > MAX_QUERY_CHARS:
        # Search text is capped; the head of the selection carries its topic, and the lexical
        # branch keeps only the 32 rarest terms anyway.
        flat = flat[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]
    return flat, None


class RetrievalService:
    """Search with pins, dedup, diversity and selection; the base of search and build_context tools."""

    def __init__(self, search: SearchService, store: EntryStore) -> None:
        self.search_service = search
        self.store = store

    def retrieve(self, owner: str, request: RetrievalRequest) -> Retrieved:
        """Pinned entries first (given order), then the ranking without repeats or near-duplicates."""
        top_k = check_top_k(request.top_k)
        query, diversify = request.query, request.diversify
        pins = check_pins(request.pinned_hashes)
        selection, ignored = selection_text(request.selected_text)
        has_query = query is not None and query.strip() != ""
        if not has_query and selection is None:
            why = f" ({ignored}; it cannot stand in for the query)" if ignored else ""
            raise InvalidInputError("query", f"give a query or a non-empty selected_text{why}")
        options = self.search_service.check(request.options)
        if request.group_by_document:
            options = replace(options, per_document=PER_DOCUMENT)

        if selection is not None:
            # The selection is what the user points at: it alone is searched (the question, if
            # any, is ignored and said so), with a floor so that unrelated entries do not fill in.
            text, used = selection, "selection; query ignored" if has_query else "selection"
            if options.min_relevance is None:
                options = replace(options, min_relevance=DEFAULT_SELECTION_MIN_RELEVANCE)
        else:
            assert query is not None
            text, used = query, "query"
        first = self.search_service.search(owner, text, top_k=POOL, options=options, checked=True)
        fused = list(first.hits)

        pinned_entries = self.store.by_hashes(owner, pins) if pins else {}
        missing = [h for h in pins if h not in pinned_entries]
        hits_by_id = {hit.id: hit for hit in fused}
        entries = self.store.many(owner, [uuid.UUID(h.id) for h in fused])

        items: list[Ranked] = []
        taken: set[uuid.UUID] = set()
        for digest in pins:
            entry = pinned_entries.get(digest)
            if entry is not None and entry.id not in taken and len(items) < top_k:
                hit = hits_by_id.get(str(entry.id))
                items.append(Ranked(entry, hit, hit.score if hit else 0.0, True))
                taken.add(entry.id)

        fill: list[Candidate[SearchHit | None]] = [
            Candidate(hit.id, hit.content_hash, entries[uuid.UUID(hit.id)].body, hit.score, hit)
            for hit in fused
            if uuid.UUID(hit.id) in entries and uuid.UUID(hit.id) not in taken
        ]
        pinned_cands: list[Candidate[SearchHit | None]] = [
            Candidate(str(r.entry.id), r.entry.content_hash, r.entry.body, 1.0, r.hit) for r in items
        ]
        # Dedup against the pins too: a near-copy of a pinned entry adds nothing.
        started = time.perf_counter()
        kept, collapsed = collapse([*pinned_cands, *fill])
        fill = kept[len(pinned_cands) :]
        dedup_ms = (time.perf_counter() - started) * 1000
        near_copies: dict[str, list[Entry]] = {}
        for key, into in collapsed:
            if (copy := entries.get(uuid.UUID(key))) is not None:
                near_copies.setdefault(into, []).append(copy)
        room = top_k - len(items)
        mmr_ms: float | None = None
        if diversify and fill:
            started = time.perf_counter()
            embedder = self.search_service.embedder
            model = embedder.model if embedder is not None else None
            vectors: dict[str, Sequence[float]] = {}
            if model is not None:
                stored = self.store.vectors(owner, [uuid.UUID(c.key) for c in fill], model)
                vectors = {str(k): v for k, v in stored.items()}
            fill = mmr(fill, vectors, room * (PER_DOCUMENT if request.group_by_document else 1))
            mmr_ms = (time.perf_counter() - started) * 1000
        slots: set[uuid.UUID] = set()
        for cand in fill:
            hit = cand.item
            assert hit is not None
            entry = entries[uuid.UUID(hit.id)]
            slot = (entry.document_id or entry.id) if request.group_by_document else entry.id
            if slot not in slots and len(slots) == room:
                continue
            slots.add(slot)
            items.append(Ranked(entry, hit, hit.score, False))

        live = first.status != "empty_store" or bool(pinned_entries)
        status: Status = "ok" if items else ("no_matches" if live else "empty_store")
        reason = None
        if selection is not None and first.status != "empty_store" and not fused:
            # Nothing in the store is about the selection: say so, never fill with other entries.
            status = "out_of_scope"
            reason = (
                f"no entry reaches min_relevance {options.min_relevance} for the selected text"
                f" ({first.below_relevance} below it)"
            )
        elif status == "empty_store":
            reason = "the store has no live entries"
        elif status == "no_matches":
            reason = self._no_match_reason(owner, options, first)
        stages: list[dict[str, Any]] = [
            {"stage": "vector", "candidates": first.vector_candidates},
            {"stage": "lexical", "candidates": first.lexical_candidates},
            {"stage": "fusion", "candidates": first.total_candidates, "ms": first.timings.sql_ms},
            {"stage": "ranked", "candidates": first.ranked},
            {"stage": "relevance_floor", "candidates": len(fused), "removed": first.below_relevance},
            {
                "stage": "dedup",
                "candidates": len(kept),
                "ms": round(dedup_ms, 3),
                "collapsed": [{"id": key, "into": into} for key, into in collapsed],
            },
        ]
        if mmr_ms is not None:
            stages.append({"stage": "mmr", "candidates": len(fill), "ms": round(mmr_ms, 3)})
        stages.append({"stage": "top_k", "candidates": len(items), "pinned": sum(r.pinned for r in items)})
        return Retrieved(
            status=status,
            items=items,
            missing_pins=missing,
            degraded=first.degraded,
            degraded_reason=first.degraded_reason,
            used=used,
            selection_ignored=ignored,
            scope_reason=reason,
            below_relevance=first.below_relevance,
            fusion=first.fusion,
            fusion_weights=first.fusion_weights,
            fusion_scale=first.fusion_scale,
            fusion_evidence=first.fusion_evidence,
            embedder_wait_ms=first.timings.embedder_wait_ms,
            total_candidates=first.total_candidates,
            applied=applied(options, top_k, first, diversify),
            trace=stages,
            near_copies=near_copies,
            timings={
                "embed_ms": first.timings.embed_ms or 0.0,
                "sql_ms": first.timings.sql_ms,
                "search_ms": first.timings.total_ms,
                "query_terms": float(first.query_terms),
            },
        )

    def _no_match_reason(self, owner: str, options: SearchOptions, result: SearchResult) -> str:
        """Which filter or floor left nothing: per-filter counts when filters were set."""
        parts: list[str] = []
        filters = filter_values(options.filters)
        if filters:
            counts = self.store.filter_counts(owner, options.filters)
            each = ", ".join(f"{name} keeps {counts.get(name, 0)}" for name in filters if name in counts)
            parts.append(
                f"filters keep {counts.get('all_filters', 0)} of {counts.get('current', 0)} current entries"
                + (f" ({each})" if each else "")
            )
        if result.total_candidates == 0:
            parts.append(
                f"no candidate: vector branch {result.vector_candidates}, lexical {result.lexical_candidates}"
                + (f" (min_score {options.min_similarity})" if options.min_similarity is not None else "")
            )
        if result.below_relevance:
            parts.append(f"min_relevance {options.min_relevance} removed {result.below_relevance}")
        elif result.ranked == 0 and result.total_candidates and options.min_similarity is not None:
            parts.append(f"min_score {options.min_similarity} removed {result.total_candidates}")
        return "; ".join(parts) or "nothing matched"


def filter_values(filters: EntryFilters) -> dict[str, Any]:
    """The filters set (name → value; times as ISO text), for echoing and logging."""
    out: dict[str, Any] = {}
    for spec in fields(filters):
        value = getattr(filters, spec.name)
        if value is None or value is False or (isinstance(value, (list, tuple)) and not value):
            continue
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, (list, tuple)):
            value = list(value)
        out[spec.name] = value
    return out


def applied(options: SearchOptions, top_k: int, result: SearchResult, diversify: bool) -> dict[str, Any]:
    """What a retrieval ran with: mode, filters, top_k, thresholds and the fusion used."""
    return {
        "mode": options.mode,
        "top_k": top_k,
        "filters": filter_values(options.filters),
        "min_relevance": options.min_relevance,
        "min_score": options.min_similarity,
        "recency_half_life_days": options.recency_half_life_days,
        "fusion": result.fusion,
        "diversify": diversify,
    }
