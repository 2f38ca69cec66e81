"""Cited context assembly: ranked entries as labelled blocks within a token budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pgrecall.domain.entries import Status
from pgrecall.domain.ranking import Candidate, estimate_tokens, pack
from pgrecall.domain.relevance import DEFAULT_CONTEXT_MIN_RELEVANCE
from pgrecall.domain.text import snippet
from pgrecall.domain.validation import MAX_QUERY_CHARS, check_budget, check_sections
from pgrecall.services.retrieval import Ranked, RetrievalRequest, RetrievalService

SEPARATOR = "\n\n"


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


def render_block(label: str, ranked: Ranked) -> str:
    """`[S1] Title — source` then the stored text, unmodified."""
    entry = ranked.entry
    head = f"[{label}] {entry.title or '(untitled)'}"
    if entry.source:
        head += f" — {entry.source}"
    return f"{head}\n{entry.body}"


def _section_query(section: str, query: str | None) -> str:
    """The section name, then the query, within the search text limit (the section survives a cut)."""
    if not query or not query.strip():
        return section
    text = f"{section}: {' '.join(query.split())}"
    if len(text) > MAX_QUERY_CHARS:
        text = text[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]
    return text


def build_context(
    retrieval: RetrievalService,
    owner: str,
    request: RetrievalRequest,
    *,
    token_budget: int = 4000,
    sections: Sequence[str] | None = None,
) -> BuiltContext:
    """Retrieve (pins first), then fit whole entries, best first, into the budget.

    With sections, each section name is searched as a sub-topic of the query ("name: query"),
    gets an equal share of the budget, and lists its labels in `by_section`; an entry used by
    an earlier section is not repeated. Pins go to the first section.
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
    blocks: list[str] = []
    citations: list[Citation] = []
    dropped: list[Dropped] = []
    by_section: dict[str, list[str]] = {}
    missing: list[str] = []
    degraded, statuses = False, list[Status]()
    below = 0
    used_ids: set[str] = set()
    for index, (section, text) in enumerate(groups):
        result = retrieval.retrieve(
            owner,
            replace(request, query=text, pinned_hashes=request.pinned_hashes if index == 0 else None),
        )
        if index == 0:
            missing = result.missing_pins
        degraded = degraded or result.degraded
        below += result.below_relevance
        statuses.append(result.status)
        fresh = [r for r in result.items if str(r.entry.id) not in used_ids]
        header = f"## {section}" if section is not None else None
        budget = share - (estimate_tokens(header) + 1 if header else 0)
        first_label = len(citations) + 1

        def render(i: int, cand: Candidate[Ranked], start: int = first_label) -> str:
            return render_block(f"S{start + i - 1}", cand.item)

        packed = pack(
            [Candidate(str(r.entry.id), r.entry.content_hash, r.entry.body, r.score, r) for r in fresh],
            max(budget, 0),
            render,
            SEPARATOR,
        )
        labels: list[str] = []
        for cand, block, _ in packed.included:
            ranked = cand.item
            label = f"S{len(citations) + 1}"
            labels.append(label)
            used_ids.add(cand.key)
            blocks.append(block)
            hit = ranked.hit
            citations.append(
                Citation(
                    label=label,
                    id=cand.key,
                    content_hash=ranked.entry.content_hash,
                    source=ranked.entry.source,
                    title=ranked.entry.title,
                    snippet=hit.snippet if hit is not None else snippet(ranked.entry.body),
                    section=section,
                    pinned=ranked.pinned,
                )
            )
        for cand, tokens, reason in packed.dropped:
            dropped.append(
                Dropped(cand.key, cand.content_hash, cand.item.entry.title, tokens, reason, section)
            )
        if section is not None:
            by_section[section] = labels
            if labels:
                blocks.insert(len(blocks) - len(labels), header or "")
    context = SEPARATOR.join(blocks)
    # Section headers and separators are counted per section; the whole may still round a
    # token over. The budget is a promise: take whole blocks off the end until it holds.
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
    status: Status = (
        "ok" if citations else ("empty_store" if all(s == "empty_store" for s in statuses) else "no_matches")
    )
    return BuiltContext(
        context=context,
        citations=citations,
        by_section=by_section if names is not None else None,
        total_tokens=estimate_tokens(context) if context else 0,
        dropped=dropped,
        missing_pins=missing,
        degraded=degraded,
        status=status,
        below_relevance=below,
    )
