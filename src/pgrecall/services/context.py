"""Cited context assembly: ranked entries as labelled blocks within a token budget."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pgrecall.domain.documents import Document
from pgrecall.domain.entries import Entry, Status
from pgrecall.domain.ranking import Candidate, Packed, estimate_tokens, pack
from pgrecall.domain.relevance import DEFAULT_CONTEXT_MIN_RELEVANCE
from pgrecall.domain.text import snippet
from pgrecall.domain.validation import MAX_QUERY_CHARS, check_budget, check_sections
from pgrecall.services.retrieval import Ranked, RetrievalRequest, RetrievalService, Retrieved
from pgrecall.services.search import DocumentPlace
from pgrecall.store.documents import DocumentStore
from pgrecall.store.entries import EntryStore
from pgrecall.store.links import LinkStore

SEPARATOR = "\n\n"
# expand_related: neighbours of the first few citations only, and a bounded number of them.
RELATED_FROM_TOP = 3
RELATED_MAX = 20


@dataclass(frozen=True)
class Citation:
    """What the answer cites for one label."""

    label: str
    id: str
    content_hash: str
    source: str | None
    title: str | None
    snippet: str
    section: str | None
    pinned: bool
    # expand_related: the cited entry this one is linked to (its label), how, and which way.
    linked: dict[str, str] | None = None
    # A document's chunk: its document (id, title, source, version), section path and place.
    document: DocumentPlace | None = None
    # expand_neighbours: added as the neighbour of a cited chunk, not found by the search.
    neighbour: bool = False
    # The fused score the ranking gave it (0 for a pin the search did not find, a link, a neighbour).
    weight: float = 0.0
    tags: list[str] | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class Dropped:
    """A ranked entry that did not fit."""

    id: str
    content_hash: str
    title: str | None
    tokens: int
    reason: str
    section: str | None


@dataclass(frozen=True)
class BuiltContext:
    """What build_context returns."""

    context: str
    citations: list[Citation]
    by_section: dict[str, list[str]] | None
    total_tokens: int
    dropped: list[Dropped]
    missing_pins: list[str]
    degraded: bool
    status: Status
    below_relevance: int = 0
    # e.g. two versions of one source both cited: the answer may mix them (status 'warning').
    warnings: list[str] | None = None
    # Why nothing (or only pins) came back, in one line.
    reason: str | None = None
    # Distinct candidates of the search(es), the sources cited, what ran, and each search's stages.
    total_candidates: int = 0
    used: str = "query"
    degraded_reason: str | None = None
    sources: list[str] = field(default_factory=list)
    applied: dict[str, Any] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)


def render_block(label: str, ranked: Ranked, *, after: Ranked | None = None) -> str:
    """`[S1] Title — source · chunk hash` then the stored text, unmodified.

    A chunk right after `after`, the previous chunk of its document, is `[S2] (continued) · chunk
    hash`: the run reads as one passage, each chunk still cited by its own label and hash; one that
    starts another section names it, `(continued: Guide › Networking)`.
    """
    entry = ranked.entry
    if after is not None and _continues(after, ranked):
        path = entry.section_path or []
        moved = f": {' › '.join(path)}" if path and path != (after.entry.section_path or []) else ""
        return f"[{label}] (continued{moved}) · chunk {entry.content_hash[:15]}\n{entry.body}"
    head = f"[{label}] {entry.title or '(untitled)'}"
    if entry.source:
        head += f" — {entry.source}"
    if entry.document_id is not None:
        head += f" · chunk {entry.content_hash[:15]}"
    return f"{head}\n{entry.body}"


def _continues(previous: Ranked | None, ranked: Ranked) -> bool:
    """The chunk follows `previous` in the same document (its ordinal is the next one)."""
    a, b = (previous.entry if previous else None), ranked.entry
    return (
        a is not None
        and b.document_id is not None
        and a.document_id == b.document_id
        and a.ordinal is not None
        and b.ordinal == a.ordinal + 1
    )


def document_order(chosen: Sequence[Ranked]) -> list[Ranked]:
    """Chunks of one document together, in document order, where its best chunk ranked; notes stay."""
    groups: dict[object, list[Ranked]] = {}
    for ranked in chosen:
        key = ranked.entry.document_id or ranked.entry.id
        groups.setdefault(key, []).append(ranked)
    out: list[Ranked] = []
    for members in groups.values():  # dicts keep insertion order: a group sits where it first ranked
        out.extend(sorted(members, key=lambda r: (r.entry.ordinal or 0, str(r.entry.id))))
    return out


def _with_neighbours(
    documents: DocumentStore, owner: str, chosen: list[Ranked], used_ids: set[str], budget: int
) -> list[Ranked]:
    """Each cited chunk's neighbours (before, after), best-ranked chunk first, while the budget has room."""
    wanted: list[tuple[Entry, int]] = []
    for ranked in chosen:
        entry = ranked.entry
        if entry.document_id is not None and entry.ordinal is not None:
            wanted += [(entry, entry.ordinal - 1), (entry, entry.ordinal + 1)]
    if not wanted:
        return chosen
    found = documents.chunks_at(owner, [(e.document_id, n) for e, n in wanted if e.document_id and n >= 0])
    out = list(chosen)
    taken = {str(r.entry.id) for r in out} | used_ids
    for entry, ordinal in wanted:
        near = found.get((entry.document_id, ordinal)) if entry.document_id else None
        if near is None or str(near.id) in taken:
            continue
        trial = [*out, Ranked(near, None, 0.0, False)]
        blocks = [render_block(f"S{i + 1}", r) for i, r in enumerate(document_order(trial))]
        if estimate_tokens(SEPARATOR.join(blocks)) > budget:
            continue
        out = trial
        taken.add(str(near.id))
    return out


def _place(document: Document | None, entry: Entry) -> DocumentPlace | None:
    """Where a cited chunk sits, as search hits say it; None for a note."""
    if document is None or entry.ordinal is None:
        return None
    return DocumentPlace(
        id=str(document.id),
        title=document.title,
        source=document.source,
        version=document.version_label,
        section_path=list(entry.section_path or []),
        ordinal=entry.ordinal,
    )


def _version_warnings(citations: Sequence[Citation], near_copies: Sequence[Document] = ()) -> list[str]:
    """One line per source that answers in more than one version.

    `near_copies`: documents of hits dropped as near-copies of cited chunks. Another version's
    chunk that differs from the cited one by a detail (a time, a number) is such a copy: it
    answers too, and the detail may be the difference, so it counts and is named as not quoted.
    """
    versions: dict[str, dict[str, str]] = {}
    for c in citations:
        if c.document is not None and c.document.source:
            versions.setdefault(c.document.source, {})[c.document.version or "(no version)"] = c.document.id
    unquoted: dict[str, set[str]] = {}
    for d in near_copies:
        found = versions.get(d.source)
        version = d.version_label or "(no version)"
        if found is not None and version not in found:
            found[version] = str(d.id)
            unquoted.setdefault(d.source, set()).add(version)
    return [
        f"{source}: {len(found)} versions answer ("
        + ", ".join(f"{v} = document {d}" for v, d in sorted(found.items()))
        + "); they may disagree"
        + (
            f"; {', '.join(sorted(unquoted[source]))} not quoted (a near-copy of a cited chunk)"
            if source in unquoted
            else ""
        )
        for source, found in versions.items()
        if len(found) > 1
    ]


def _link_note(label: str, other: str, relation: str, direction: str) -> str:
    """How a linked block relates to the cited one: `S1 depends_on S4` reads as the link does."""
    return f"{other} {relation} {label}" if direction == "out" else f"{label} {relation} {other}"


def _expand_related(
    links: LinkStore,
    entries: EntryStore,
    owner: str,
    request: RetrievalRequest,
    citations: list[Citation],
    blocks: list[str],
    used_ids: set[str],
    token_budget: int,
) -> list[Dropped]:
    """Add live entries linked to the top citations while the budget has room (labelled as linked)."""
    top = {c.id: c.label for c in citations[:RELATED_FROM_TOP]}
    if not top:
        return []
    filters = request.options.filters
    rows = links.neighbours(
        owner,
        [uuid.UUID(ident) for ident in top],
        direction="both",
        relation=None,
        limit=RELATED_MAX,
        current_only=not (filters.include_superseded or filters.include_expired),
    )
    dropped: list[Dropped] = []
    for row in rows:
        ident = str(row.id)
        if ident in used_ids:
            continue
        used_ids.add(ident)
        entry = entries.get(owner, row.id)
        label = f"S{len(citations) + 1}"
        note = _link_note(label, top[str(row.via)], row.relation, row.direction)
        head = f"[{label}] {entry.title or '(untitled)'}" + (f" — {entry.source}" if entry.source else "")
        block = f"{head} (linked: {note})\n{entry.body}"
        tokens = estimate_tokens(block)
        used = estimate_tokens(SEPARATOR.join(blocks)) if blocks else 0
        if used + estimate_tokens(SEPARATOR) + tokens > token_budget:
            dropped.append(
                Dropped(ident, entry.content_hash, entry.title, tokens, "linked: budget exhausted", None)
            )
            continue
        blocks.append(block)
        link = {"label": top[str(row.via)], "relation": row.relation, "direction": row.direction}
        citations.append(
            Citation(
                label,
                ident,
                entry.content_hash,
                entry.source,
                entry.title,
                snippet(entry.body),
                None,
                False,
                link,
                tags=list(entry.tags),
                kind=entry.kind,
                metadata=entry.metadata,
            )
        )
    return dropped


def _section_query(section: str, query: str | None) -> str:
    """The section name, then the query, within the search text limit (the section survives a cut)."""
    if not query or not query.strip():
        return section
    text = f"{section}: {' '.join(query.split())}"
    if len(text) > MAX_QUERY_CHARS:
        text = text[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]
    return text


def _citation(label: str, ranked: Ranked, section: str | None, document: Document | None) -> Citation:
    """The citation of one block: the entry, where it sits, and the score it ranked by."""
    entry, hit = ranked.entry, ranked.hit
    return Citation(
        label=label,
        id=str(entry.id),
        content_hash=entry.content_hash,
        source=entry.source,
        title=entry.title,
        snippet=hit.snippet if hit is not None else snippet(entry.body),
        section=section,
        pinned=ranked.pinned,
        document=_place(document, entry),
        neighbour=hit is None and not ranked.pinned,
        weight=ranked.score,
        tags=list(entry.tags),
        kind=entry.kind,
        metadata=entry.metadata,
    )


def _fit_budget(
    blocks: list[str],
    citations: list[Citation],
    by_section: dict[str, list[str]],
    dropped: list[Dropped],
    token_budget: int,
) -> str:
    """The context text within the budget, taking whole blocks off the end while it is over.

    Section headers and separators are counted per section, so the whole may still round a token
    over: the budget is a promise.
    """
    context = SEPARATOR.join(blocks)
    while context and estimate_tokens(context) > token_budget and citations:
        last = citations.pop()
        block = next(b for b in reversed(blocks) if b.startswith(f"[{last.label}] "))
        blocks.remove(block)
        if last.section is not None:
            by_section[last.section].remove(last.label)
            if not by_section[last.section]:
                blocks.remove(f"## {last.section}")
        dropped.append(
            Dropped(
                last.id,
                last.content_hash,
                last.title,
                estimate_tokens(block),
                "budget exhausted",
                last.section,
            )
        )
        context = SEPARATOR.join(blocks)
    return context


def _status(citations: Sequence[Citation], statuses: Sequence[Status], warnings: Sequence[str]) -> Status:
    if statuses and all(s == "out_of_scope" for s in statuses):
        # The selection's topic is not in the store: pins (asked for by hash) may still be cited.
        return "out_of_scope"
    if citations:
        return "warning" if warnings else "ok"
    return "empty_store" if all(s == "empty_store" for s in statuses) else "no_matches"


@dataclass
class _Searches:
    """What the searches of one build_context call said, over all its sections."""

    token_budget: int
    missing: list[str] = field(default_factory=list)
    degraded: bool = False
    statuses: list[Status] = field(default_factory=list)
    below: int = 0
    why: str | None = None
    total_candidates: int = 0
    used: str = "query"
    degraded_reason: str | None = None
    applied: dict[str, Any] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)

    def add(self, result: Retrieved, section: str | None, *, first: bool) -> None:
        """Count one section's search (pins are asked for by the first only)."""
        if first:
            self.missing = result.missing_pins
        self.degraded = self.degraded or result.degraded
        self.below += result.below_relevance
        self.statuses.append(result.status)
        self.why = self.why or result.scope_reason
        self.total_candidates += result.total_candidates
        self.used, self.degraded_reason = result.used, self.degraded_reason or result.degraded_reason
        self.applied = self.applied or {**result.applied, "token_budget": self.token_budget}
        self.trace += [{**stage, "section": section} if section else stage for stage in result.trace]


@dataclass
class _Assembly:
    """The context as it grows section by section: blocks, their citations, what did not fit."""

    blocks: list[str] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    by_section: dict[str, list[str]] = field(default_factory=dict)
    used_ids: set[str] = field(default_factory=set)

    def pack(self, result: Retrieved, budget: int) -> Packed[Ranked]:
        """The section's hits not cited by an earlier section, best first, as many as fit `budget`."""
        first_label = len(self.citations) + 1

        def render(i: int, cand: Candidate[Ranked]) -> str:
            return render_block(f"S{first_label + i - 1}", cand.item)

        fresh = [r for r in result.items if str(r.entry.id) not in self.used_ids]
        return pack(
            [Candidate(str(r.entry.id), r.entry.content_hash, r.entry.body, r.score, r) for r in fresh],
            budget,
            render,
            SEPARATOR,
        )

    def place(
        self,
        section: str | None,
        header: str | None,
        chosen: Sequence[Ranked],
        places: dict[uuid.UUID, Document],
        dropped: Sequence[tuple[Candidate[Ranked], int, str]],
    ) -> None:
        """Label and render the chosen hits (a chunk following its neighbour reads as a continuation)."""
        labels: list[str] = []
        previous: Ranked | None = None
        for ranked in chosen:
            label = f"S{len(self.citations) + 1}"
            labels.append(label)
            entry = ranked.entry
            self.used_ids.add(str(entry.id))
            self.blocks.append(render_block(label, ranked, after=previous))
            previous = ranked
            document = places.get(entry.document_id) if entry.document_id else None
            self.citations.append(_citation(label, ranked, section, document))
        for cand, tokens, reason in dropped:
            self.dropped.append(
                Dropped(cand.key, cand.content_hash, cand.item.entry.title, tokens, reason, section)
            )
        if section is not None:
            self.by_section[section] = labels
            if labels:
                self.blocks.insert(len(self.blocks) - len(labels), header or "")


def build_context(
    retrieval: RetrievalService,
    owner: str,
    request: RetrievalRequest,
    *,
    token_budget: int = 4000,
    sections: Sequence[str] | None = None,
    links: LinkStore | None = None,
    documents: DocumentStore | None = None,
    expand_neighbours: bool = False,
) -> BuiltContext:
    """Retrieve (pins first), then fit whole entries, best first, into the budget.

    With sections, each section name is searched as a sub-topic of the query ("name: query"),
    gets an equal share of the budget, and lists its labels in `by_section`; an entry used by
    an earlier section is not repeated. Pins go to the first section. With `links`
    (expand_related), entries linked to the top citations follow them while the budget has
    room, each labelled with its link to the cited entry. With `documents`, chunks of one document
    sit together in document order (a run of adjacent chunks reads as one passage), each labelled
    with its document, section and hash; `expand_neighbours` adds the chunks before and after a
    cited chunk while the budget has room; two versions of one source cited together give a warning.
    """
    check_budget(token_budget)
    names = check_sections(sections)
    if request.options.min_relevance is None:
        # Cite only what is relevant enough by default: a budget with room is no reason to cite more.
        request = replace(
            request, options=replace(request.options, min_relevance=DEFAULT_CONTEXT_MIN_RELEVANCE)
        )
    query = request.query
    groups: list[tuple[str | None, str | None]] = (
        [(None, query)] if names is None else [(name, _section_query(name, query)) for name in names]
    )
    share = token_budget // len(groups)
    searches = _Searches(token_budget)
    out = _Assembly()
    copy_documents: set[uuid.UUID] = set()
    for index, (section, text) in enumerate(groups):
        result = retrieval.retrieve(
            owner,
            replace(request, query=text, pinned_hashes=request.pinned_hashes if index == 0 else None),
        )
        searches.add(result, section, first=index == 0)
        header = f"## {section}" if section is not None else None
        budget = max(share - (estimate_tokens(header) + 1 if header else 0), 0)
        packed = out.pack(result, budget)
        chosen = [cand.item for cand, _, _ in packed.included]
        copy_documents.update(
            copy.document_id
            for r in chosen
            for copy in result.near_copies.get(str(r.entry.id), ())
            if copy.document_id is not None
        )
        if documents is not None:
            if expand_neighbours:
                chosen = _with_neighbours(documents, owner, chosen, out.used_ids, budget)
            chosen = document_order(chosen)
        places = (
            documents.by_ids(owner, [r.entry.document_id for r in chosen if r.entry.document_id])
            if documents is not None
            else {}
        )
        out.place(section, header, chosen, places, packed.dropped)
        searches.trace.append(
            {"stage": "pack", "candidates": len(packed.included), "dropped": len(packed.dropped)}
            | ({"section": section} if section else {})
        )
    blocks, citations, dropped, by_section = out.blocks, out.citations, out.dropped, out.by_section
    if links is not None:
        dropped += _expand_related(
            links, retrieval.store, owner, request, citations, blocks, out.used_ids, token_budget
        )
    context = _fit_budget(blocks, citations, by_section, dropped, token_budget)
    copies = documents.by_ids(owner, list(copy_documents)).values() if documents is not None else ()
    warnings = _version_warnings(citations, list(copies))
    status = _status(citations, searches.statuses, warnings)
    return BuiltContext(
        context=context,
        citations=citations,
        by_section=by_section if names is not None else None,
        total_tokens=estimate_tokens(context) if context else 0,
        dropped=dropped,
        missing_pins=searches.missing,
        degraded=searches.degraded,
        status=status,
        below_relevance=searches.below,
        warnings=warnings or None,
        reason=searches.why if not citations or status == "out_of_scope" else None,
        total_candidates=searches.total_candidates,
        used=searches.used,
        degraded_reason=searches.degraded_reason,
        sources=list(dict.fromkeys(c.source for c in citations if c.source)),
        applied=searches.applied,
        trace=searches.trace,
    )
