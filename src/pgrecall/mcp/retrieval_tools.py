"""The retrieval tools: search, build_context and verify_citations."""

# No `from __future__ import annotations`: the SDK evaluates tool signatures.

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from pgrecall.domain.relevance import DEFAULT_CONTEXT_MIN_RELEVANCE
from pgrecall.mcp import params as p
from pgrecall.mcp.errors import run_blocking
from pgrecall.mcp.observability import observe
from pgrecall.mcp.retrieval_schemas import (
    CitationCheckOut,
    CitationOut,
    ContextOut,
    DroppedOut,
    SearchOut,
    VerifyOut,
    hit_out,
    timings_out,
)
from pgrecall.mcp.runtime import Runtime, runtime_tool

if TYPE_CHECKING:
    from pgrecall.services.retrieval import Ranked


def retrieval_log_fields(
    *,
    status: str,
    used: str,
    applied: dict[str, Any],
    ids: list[str],
    pinned: int,
    missing: int,
    degraded_reason: str | None,
    trace: list[dict[str, Any]],
    timings: dict[str, float],
) -> dict[str, Any]:
    """A retrieval's log fields: what ran (filter names and values, thresholds), the hit ids, pins,
    and per stage its candidates and ms. Never the question, the selection or an entry's text."""
    stages: dict[str, Any] = {}
    # Sections are the caller's words: the log names them by position (section 1, 2, …).
    sections = list(dict.fromkeys(stage["section"] for stage in trace if stage.get("section")))
    for stage in trace:
        section = stage.get("section")
        name = f"{stage['stage']}:{sections.index(section) + 1}" if section else stage["stage"]
        kept = {k: v for k, v in stage.items() if k in ("candidates", "ms", "removed", "dropped")}
        if stage.get("collapsed"):
            kept["collapsed"] = len(stage["collapsed"])
        stages[name] = kept
    return {
        "mode": applied.get("mode"),
        "used": used,
        "status": status,
        "filters": applied.get("filters", {}),
        "top_k": applied.get("top_k"),
        "min_relevance": applied.get("min_relevance"),
        "min_score": applied.get("min_score"),
        "recency_half_life_days": applied.get("recency_half_life_days"),
        "fusion": applied.get("fusion"),
        "hits": len(ids),
        "hit_ids": ids,
        "pinned": pinned,
        "missing_pins": missing,
        "degraded": degraded_reason is not None,
        "degraded_reason": degraded_reason,
        "stages": stages,
        "stage_ms": {k: v for k, v in timings.items() if k.endswith("_ms")},
    }


def register_retrieval_tools(server: MCPServer, runtime: Runtime, current_owner: Callable[[], str]) -> None:
    """Register search, build_context and verify_citations on `server`.

    The services are imported inside the tools, not here: they pull in the database stack, which a
    stdio server loads beside the protocol (see mcp.runtime), not before answering it.
    """
    metrics = runtime.metrics

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def search(
        query: p.Query = None,
        top_k: p.TopK = 5,
        mode: p.Mode = "hybrid",
        language: p.LanguageFilter = None,
        kind: p.KindFilter = None,
        source: p.SourceFilter = None,
        source_prefix: p.SourcePrefix = None,
        document: p.DocumentFilter = None,
        version: p.VersionFilter = None,
        tags_all: p.TagsAll = None,
        tags_any: p.TagsAny = None,
        include_superseded: p.IncludeSuperseded = False,
        include_expired: p.IncludeExpired = False,
        created_after: p.After = None,
        created_before: p.Before = None,
        updated_after: p.After = None,
        updated_before: p.Before = None,
        min_score: p.MinScore = None,
        min_relevance: p.MinRelevance = None,
        recency_half_life_days: p.RecencyHalfLife = None,
        explain: p.Explain = False,
        trace: p.Trace = False,
        pinned_hashes: p.Pins = None,
        diversify: p.Diversify = False,
        selected_text: p.Selected = None,
        group_by: Annotated[
            Literal["document"] | None,
            Field(description="document: one hit per document (best chunk), other chunks' ids with it."),
        ] = None,
    ) -> SearchOut:
        """Find entries by meaning and words; ask in plain sentences, any language.

        Hits carry id, snippet, content_hash: get_entry gives the full text, build_context cited
        blocks. Near-duplicates (> 80% word overlap) collapse to the best.
        """
        from pgrecall.services.retrieval import group_by_document, retrieval_request

        with observe(metrics, "search") as call:
            request = retrieval_request(
                query,
                selected_text=selected_text,
                top_k=top_k,
                pinned_hashes=pinned_hashes,
                diversify=diversify,
                group_by_document=group_by is not None,
                mode=mode,
                min_similarity=min_score,
                min_relevance=min_relevance,
                recency_half_life_days=recency_half_life_days,
                language=language,
                kind=kind,
                source=source,
                source_prefix=source_prefix,
                document=document,
                version=version,
                tags_all=tags_all,
                tags_any=tags_any,
                include_superseded=include_superseded,
                include_expired=include_expired,
                created_after=created_after,
                created_before=created_before,
                updated_after=updated_after,
                updated_before=updated_before,
            )
            result = await run_blocking(runtime.app.retrieval.retrieve, current_owner(), request)
            metrics.searches.labels(mode, str(result.degraded).lower()).inc()
            metrics.search_stage.labels(mode, "embed").observe(result.timings["embed_ms"] / 1000)
            metrics.search_stage.labels(mode, "sql").observe(result.timings["sql_ms"] / 1000)
            if not result.items:
                metrics.empty_searches.labels(mode).inc()
            call.fields.update(
                retrieval_log_fields(
                    status=result.status,
                    used=result.used,
                    applied=result.applied,
                    ids=[str(r.entry.id) for r in result.items],
                    pinned=sum(r.pinned for r in result.items),
                    missing=len(result.missing_pins),
                    degraded_reason=result.degraded_reason,
                    trace=result.trace,
                    timings=result.timings,
                )
            )
            timings = timings_out(result.timings, call.elapsed_ms())

            def slots(items: "list[Ranked]") -> "list[tuple[Ranked, list[Ranked] | None]]":
                if group_by is None:
                    return [(r, None) for r in items]
                return [(best, list(more)) for best, more in group_by_document(items, top_k)]

            return SearchOut(
                status=result.status,
                reason=result.scope_reason,
                request_id=call.request_id,
                degraded=result.degraded,
                degraded_reason=result.degraded_reason,
                used=result.used,
                selection_ignored=result.selection_ignored,
                hits=[
                    hit_out(i, r, explain, more) for i, (r, more) in enumerate(slots(result.items), start=1)
                ],
                below_relevance=result.below_relevance,
                fusion=result.fusion,
                fusion_weights=result.fusion_weights,
                fusion_scale=result.fusion_scale,
                fusion_evidence=asdict(result.fusion_evidence) if result.fusion_evidence else None,
                embedder_wait_ms=result.embedder_wait_ms,
                missing_pins=result.missing_pins,
                applied=result.applied,
                total_candidates=result.total_candidates,
                sources=list(dict.fromkeys(r.entry.source for r in result.items if r.entry.source)),
                trace=result.trace if trace else None,
                timings=timings,
            )

    @runtime_tool(server, runtime, name="build_context", annotations=p.READ_ONLY)
    async def build_context_tool(
        query: p.Query = None,
        selected_text: p.Selected = None,
        token_budget: p.TokenBudget = 4000,
        top_k: p.TopKPerSection = 10,
        mode: p.Mode = "hybrid",
        language: p.LanguageFilter = None,
        kind: p.KindFilter = None,
        source: p.SourceFilter = None,
        source_prefix: p.SourcePrefix = None,
        document: p.DocumentFilter = None,
        version: p.VersionFilter = None,
        tags_all: p.TagsAll = None,
        tags_any: p.TagsAny = None,
        include_superseded: p.IncludeSuperseded = False,
        include_expired: p.IncludeExpired = False,
        pinned_hashes: p.Pins = None,
        sections: p.Sections = None,
        diversify: p.Diversify = False,
        min_relevance: p.ContextMinRelevance = DEFAULT_CONTEXT_MIN_RELEVANCE,
        recency_half_life_days: p.RecencyHalfLife = None,
        trace: p.Trace = False,
        expand_related: Annotated[
            bool,
            Field(
                description="Also cite entries linked to the top 3 citations while the budget has room "
                "(see `linked`).",
                json_schema_extra=p.OR_NULL,
            ),
            p.NULL_IS_DEFAULT,
        ] = False,
        expand_neighbours: Annotated[
            bool,
            Field(
                description="Also cite the chunks around a cited chunk while the budget has room.",
                json_schema_extra=p.OR_NULL,
            ),
            p.NULL_IS_DEFAULT,
        ] = False,
    ) -> ContextOut:
        """The best entries as cited blocks ([S1], [S2], …) within token_budget, to answer from.

        Whole entries, best first (a document's chunks in document order); what did not fit is in
        `dropped`. Keep id + content_hash: verify_citations checks them later.
        """
        from pgrecall.services.context import build_context
        from pgrecall.services.retrieval import retrieval_request

        with observe(metrics, "build_context") as call:
            request = retrieval_request(
                query,
                selected_text=selected_text,
                top_k=top_k,
                pinned_hashes=pinned_hashes,
                diversify=diversify,
                mode=mode,
                min_relevance=min_relevance,
                recency_half_life_days=recency_half_life_days,
                language=language,
                kind=kind,
                source=source,
                source_prefix=source_prefix,
                document=document,
                version=version,
                tags_all=tags_all,
                tags_any=tags_any,
                include_superseded=include_superseded,
                include_expired=include_expired,
            )
            built = await run_blocking(
                build_context,
                runtime.app.retrieval,
                current_owner(),
                request,
                token_budget=token_budget,
                sections=sections,
                links=runtime.app.links.store if expand_related else None,
                documents=runtime.app.documents.store,
                expand_neighbours=expand_neighbours,
            )
            call.fields.update(
                retrieval_log_fields(
                    status=built.status,
                    used=built.used,
                    applied=built.applied,
                    ids=[c.id for c in built.citations],
                    pinned=sum(c.pinned for c in built.citations),
                    missing=len(built.missing_pins),
                    degraded_reason=built.degraded_reason,
                    trace=built.trace,
                    timings={},
                ),
                tokens=built.total_tokens,
                dropped=len(built.dropped),
            )
            return ContextOut(
                status=built.status,
                reason=built.reason,
                request_id=call.request_id,
                context=built.context,
                citations=[CitationOut(**asdict(c)) for c in built.citations],
                by_section=built.by_section,
                total_tokens=built.total_tokens,
                dropped=[DroppedOut(**d.__dict__) for d in built.dropped],
                missing_pins=built.missing_pins,
                below_relevance=built.below_relevance,
                degraded=built.degraded,
                warnings=built.warnings,
                applied=built.applied,
                total_candidates=built.total_candidates,
                sources=built.sources,
                trace=built.trace if trace else None,
            )

    @runtime_tool(server, runtime, annotations=p.READ_ONLY)
    async def verify_citations(citations: p.Citations) -> VerifyOut:
        """Before reusing an answer: does each cited entry still say what was cited (re-hashed)?

        Each comes back valid, changed (with the current hash), deleted or missing.
        """
        with observe(metrics, "verify_citations") as call:
            triples = [(c.label, c.id, c.content_hash) for c in citations]
            checks = await run_blocking(runtime.app.citations.verify, current_owner(), triples)
            call.fields["count"] = len(checks)
            results = [CitationCheckOut(**c.__dict__) for c in checks]
            return VerifyOut(
                request_id=call.request_id,
                all_valid=all(r.status == "valid" for r in results),
                results=results,
            )
