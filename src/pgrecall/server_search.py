"""The retrieval tools: search, build_context and verify_citations."""

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from pgrecall.citations import MAX_CITATIONS, verify
from pgrecall.context import MAX_BUDGET, MAX_SECTIONS, MIN_BUDGET, build_context
from pgrecall.models import Status, snippet
from pgrecall.observability import observe
from pgrecall.retrieval import MMR_LAMBDA
from pgrecall.retrieval_service import MAX_PINS, MAX_SELECTION_CHARS, Ranked
from pgrecall.runtime import Runtime
from pgrecall.search import MAX_QUERY_CHARS, MAX_TOP_K, ScoreBreakdown
from pgrecall.server_common import run_blocking
from pgrecall.validation import as_utc

_MODE_DOC = (
    "hybrid (default: meaning + keywords fused), vector (meaning only: paraphrases, other languages), "
    "lexical (exact words: names, codes, identifiers)."
)


class Hit(BaseModel):
    """One search result."""

    rank: int = Field(description="1-based position.")
    id: str = Field(description="Entry id; get_entry returns the full text.")
    title: str | None = Field(description="Title.")
    snippet: str = Field(description="A short excerpt around the matched words (or the start).")
    tags: list[str] = Field(description="Tags.")
    source: str | None = Field(description="Where the entry came from.")
    language: str = Field(description="Text-search config of the entry.")
    content_hash: str = Field(description="Cite it; pass it in pinned_hashes to get this exact entry back.")
    score: float = Field(
        description="Fused RRF score (only comparable within one result list; 0 for a pin "
        "the query did not match)."
    )
    pinned: bool = Field(description="True when it is here because its hash was pinned.")
    breakdown: ScoreBreakdown | None = Field(
        description="Per-branch ranks and scores (only with explain=true)."
    )


class SearchOut(BaseModel):
    """Result of search."""

    status: Status = Field(description="ok; no_matches; empty_store (no entries yet).")
    request_id: str = Field(description="Id of this call in the server logs.")
    degraded: bool = Field(description="True when only the lexical branch could run (embedder unavailable).")
    degraded_reason: str | None = Field(description="Why, when degraded.")
    used: str = Field(description="What was searched: query, selection or query+selection.")
    selection_ignored: str | None = Field(description="Why selected_text was not used, if it was given.")
    hits: list[Hit] = Field(description="Results, best first; never more than top_k.")
    missing_pins: list[str] = Field(description="Pinned hashes that match no live entry (not an error).")
    timings: dict[str, float] = Field(description="Milliseconds: embed_ms, sql_ms, search_ms, total_ms.")


class CitationOut(BaseModel):
    """A citation for one context block."""

    label: str = Field(description="The block label in the context, e.g. S1; cite it as [S1].")
    id: str = Field(description="Entry id.")
    content_hash: str = Field(description="Hash of the exact text used; verify_citations checks it later.")
    source: str | None = Field(description="Entry source.")
    title: str | None = Field(description="Entry title.")
    snippet: str = Field(description="Short excerpt.")
    section: str | None = Field(description="Section the block belongs to (when sections were asked for).")
    pinned: bool = Field(description="True when included because its hash was pinned.")


class DroppedOut(BaseModel):
    """A ranked entry left out of the context."""

    id: str = Field(description="Entry id (get_entry returns it whole).")
    content_hash: str = Field(description="Its hash.")
    title: str | None = Field(description="Its title.")
    tokens: int = Field(description="Estimated tokens of its block.")
    reason: str = Field(description="'larger than token_budget' or 'budget exhausted'.")
    section: str | None = Field(description="The section it was ranked for.")


class ContextOut(BaseModel):
    """Result of build_context."""

    status: Status = Field(description="ok; no_matches; empty_store.")
    request_id: str = Field(description="Id of this call in the server logs.")
    context: str = Field(
        description="Blocks '[S1] Title — source' + the stored text, unmodified, best first."
    )
    citations: list[CitationOut] = Field(description="One per block, in order.")
    by_section: dict[str, list[str]] | None = Field(
        description="Labels per section, when sections were given."
    )
    total_tokens: int = Field(
        description="Estimated tokens of `context` (max(words×1.33, chars/4)) ≤ budget."
    )
    dropped: list[DroppedOut] = Field(description="Ranked entries that did not fit (never cut mid-text).")
    missing_pins: list[str] = Field(description="Pinned hashes matching no live entry.")
    degraded: bool = Field(description="True when only the lexical branch could run.")


class CitationIn(BaseModel):
    """A citation to check."""

    content_hash: str = Field(description="The content_hash that was cited.")
    id: str | None = Field(default=None, description="The entry id, if known (else looked up by hash).")
    label: str | None = Field(default=None, description="Your label for it (echoed back).")


class CitationCheckOut(BaseModel):
    """The verdict on one citation."""

    label: str | None = Field(description="The label you gave.")
    id: str | None = Field(description="The entry checked.")
    content_hash: str = Field(description="The cited hash.")
    status: Literal["valid", "changed", "deleted", "missing"] = Field(
        description="valid: the stored text still hashes to it; changed: edited since (see current_hash); "
        "deleted: soft-deleted; missing: no such entry."
    )
    current_hash: str | None = Field(description="Hash of the stored text now, when not valid.")


class VerifyOut(BaseModel):
    """Result of verify_citations."""

    request_id: str = Field(description="Id of this call in the server logs.")
    all_valid: bool = Field(description="True when every citation still holds.")
    results: list[CitationCheckOut] = Field(description="One per citation, in the given order.")


def _hit(rank: int, ranked: Ranked, explain: bool) -> Hit:
    entry, hit = ranked.entry, ranked.hit
    return Hit(
        rank=rank,
        id=str(entry.id),
        title=entry.title,
        snippet=hit.snippet if hit is not None else snippet(entry.body),
        tags=entry.tags,
        source=entry.source,
        language=entry.language,
        content_hash=entry.content_hash,
        score=ranked.score,
        pinned=ranked.pinned,
        breakdown=hit.breakdown if (explain and hit is not None) else None,
    )


def register_search_tools(server: MCPServer, runtime: Runtime, current_owner: Callable[[], str]) -> None:
    """Register search, build_context and verify_citations on `server`."""
    app = runtime.app
    metrics = runtime.metrics

    Query = Annotated[
        str | None,
        Field(
            description=f"What you are looking for, in natural language, any language (≤ {MAX_QUERY_CHARS} "
            "characters). Optional when selected_text is given."
        ),
    ]
    Selected = Annotated[
        str | None,
        Field(
            description=f"Text the user selected (≤ {MAX_SELECTION_CHARS} characters): finds entries "
            "related to "
            "it. With a query too, both are searched and entries related to both come first. An empty or "
            "invalid selection is ignored (see selection_ignored) and the query alone is used."
        ),
    ]
    Pins = Annotated[
        list[str] | None,
        Field(
            description=f"content_hash values from an earlier answer (≤ {MAX_PINS}): those entries come "
            "first, "
            "in this order, then the ranking fills the remaining slots. Unknown hashes go to missing_pins."
        ),
    ]
    Mode = Annotated[Literal["hybrid", "vector", "lexical"], Field(description=_MODE_DOC)]
    Lang = Annotated[str | None, Field(description="Only entries in this language (ISO 639-1 code).")]
    Kind = Annotated[str | None, Field(description="Only entries of this kind.")]
    Source = Annotated[str | None, Field(description="Only entries with exactly this source.")]
    TagsAll = Annotated[list[str] | None, Field(description="Only entries having all these tags.")]
    TagsAny = Annotated[
        list[str] | None, Field(description="Only entries having at least one of these tags.")
    ]
    When = Annotated[
        datetime | None,
        Field(description="ISO 8601 timestamp bound (after: inclusive); no offset means UTC."),
    ]
    Diversify = Annotated[
        bool,
        Field(
            description=f"Re-rank for variety (MMR over stored vectors, λ = {MMR_LAMBDA}): fewer results "
            "saying the same thing."
        ),
    ]

    def filters(**kw: Any) -> dict[str, Any]:
        return {k: v for k, v in kw.items() if v is not None}

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def search(
        query: Query = None,
        top_k: Annotated[int, Field(description=f"Results wanted, 1-{MAX_TOP_K}.", ge=1, le=MAX_TOP_K)] = 5,
        mode: Mode = "hybrid",
        language: Lang = None,
        kind: Kind = None,
        source: Source = None,
        tags_all: TagsAll = None,
        tags_any: TagsAny = None,
        created_after: When = None,
        created_before: When = None,
        updated_after: When = None,
        updated_before: When = None,
        min_score: Annotated[
            float | None,
            Field(
                description="Minimum cosine similarity for the vector branch (-1..1). Model-specific: the "
                "default model's related texts score 0.74-0.94, so leave it unset unless you know the model.",
                ge=-1.0,
                le=1.0,
                # NaN passes ge/le (every comparison with it is false) and would empty the branch.
                allow_inf_nan=False,
            ),
        ] = None,
        explain: Annotated[bool, Field(description="Include each hit's score breakdown.")] = False,
        pinned_hashes: Pins = None,
        diversify: Diversify = False,
        selected_text: Selected = None,
    ) -> SearchOut:
        """Find stored entries relevant to a question, in any language, by meaning and by words.

        Ask in plain sentences; no language parameter is needed (each entry is matched in its own
        language). Results carry id, snippet and content_hash: call get_entry for full text, or
        build_context to get cited text blocks ready for an answer. Exact and near-duplicate
        entries (> 80% word overlap) are collapsed to the best-ranked one.
        """
        with observe(metrics, "search") as call:
            result = await run_blocking(
                app.retrieval.retrieve,
                current_owner(),
                query=query,
                selected_text=selected_text,
                top_k=top_k,
                pinned_hashes=pinned_hashes,
                diversify=diversify,
                mode=mode,
                **filters(
                    language=language,
                    kind=kind,
                    source=source,
                    tags_all=tags_all,
                    tags_any=tags_any,
                    created_after=as_utc(created_after),
                    created_before=as_utc(created_before),
                    updated_after=as_utc(updated_after),
                    updated_before=as_utc(updated_before),
                    min_similarity=min_score,
                ),
            )
            metrics.searches.labels(mode, str(result.degraded).lower()).inc()
            metrics.search_stage.labels(mode, "embed").observe(result.timings["embed_ms"] / 1000)
            metrics.search_stage.labels(mode, "sql").observe(result.timings["sql_ms"] / 1000)
            if not result.items:
                metrics.empty_searches.labels(mode).inc()
            call.fields.update(
                mode=mode, hits=len(result.items), degraded=result.degraded, status=result.status
            )
            timings = {k: v for k, v in result.timings.items() if k.endswith("_ms")}
            timings["total_ms"] = round(call.elapsed_ms(), 3)
            return SearchOut(
                status=result.status,
                request_id=call.request_id,
                degraded=result.degraded,
                degraded_reason=result.degraded_reason,
                used=result.used,
                selection_ignored=result.selection_ignored,
                hits=[_hit(i, r, explain) for i, r in enumerate(result.items, start=1)],
                missing_pins=result.missing_pins,
                timings=timings,
            )

    @server.tool(name="build_context", annotations=ToolAnnotations(read_only_hint=True))
    async def build_context_tool(
        query: Query = None,
        selected_text: Selected = None,
        token_budget: Annotated[
            int,
            Field(
                description=f"Most tokens the context may take ({MIN_BUDGET}-{MAX_BUDGET}).",
                ge=MIN_BUDGET,
                le=MAX_BUDGET,
            ),
        ] = 4000,
        top_k: Annotated[
            int, Field(description=f"Entries considered per section, 1-{MAX_TOP_K}.", ge=1, le=MAX_TOP_K)
        ] = 10,
        mode: Mode = "hybrid",
        language: Lang = None,
        kind: Kind = None,
        source: Source = None,
        tags_all: TagsAll = None,
        tags_any: TagsAny = None,
        pinned_hashes: Pins = None,
        sections: Annotated[
            list[str] | None,
            Field(
                description=f"Up to {MAX_SECTIONS} sub-topics (e.g. ['background', 'decisions']): each is "
                "searched together with the query, gets an equal share of the budget and its labels in "
                "by_section."
            ),
        ] = None,
        diversify: Diversify = False,
    ) -> ContextOut:
        """Assemble the best entries as cited text blocks ([S1], [S2], …) within a token budget.

        Use it right before answering from memory: quote or paraphrase the blocks and cite their
        labels. Whole entries only, highest ranked first; what did not fit is listed in `dropped`.
        Keep the citations (id + content_hash): verify_citations tells later if they still hold.
        """
        with observe(metrics, "build_context") as call:
            built = await run_blocking(
                build_context,
                app.retrieval,
                current_owner(),
                query=query,
                selected_text=selected_text,
                token_budget=token_budget,
                top_k=top_k,
                pinned_hashes=pinned_hashes,
                sections=sections,
                mode=mode,
                diversify=diversify,
                **filters(language=language, kind=kind, source=source, tags_all=tags_all, tags_any=tags_any),
            )
            call.fields.update(
                mode=mode,
                hits=len(built.citations),
                degraded=built.degraded,
                tokens=built.total_tokens,
                dropped=len(built.dropped),
            )
            return ContextOut(
                status=built.status,  # type: ignore[arg-type]
                request_id=call.request_id,
                context=built.context,
                citations=[CitationOut(**c.__dict__) for c in built.citations],
                by_section=built.by_section,
                total_tokens=built.total_tokens,
                dropped=[DroppedOut(**d.__dict__) for d in built.dropped],
                missing_pins=built.missing_pins,
                degraded=built.degraded,
            )

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def verify_citations(
        citations: Annotated[
            list[CitationIn],
            Field(
                description=f"Citations from an earlier answer (≤ {MAX_CITATIONS}): content_hash, and id "
                "and label when you have them."
            ),
        ],
    ) -> VerifyOut:
        """Check that cited entries still say what was cited: re-hashes each stored text.

        Use it before reusing an earlier answer. Each citation comes back valid, changed (with
        the current hash), deleted or missing.
        """
        with observe(metrics, "verify_citations") as call:
            triples = [(c.label, c.id, c.content_hash) for c in citations]
            checks = await run_blocking(verify, app.store, current_owner(), triples)
            call.fields["count"] = len(checks)
            results = [CitationCheckOut(**c.__dict__) for c in checks]
            return VerifyOut(
                request_id=call.request_id,
                all_valid=all(r.status == "valid" for r in results),
                results=results,
            )
