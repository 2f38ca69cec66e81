"""Search with keyword filters, as tests like to write it, through the service's typed options."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pgrecall.app import App
from pgrecall.domain.entries import EntryFilters
from pgrecall.services.search import SearchOptions, SearchResult, SearchService


class KeywordSearch:
    """Wraps a SearchService: `search(owner, query, mode=…, kind=…, …)` builds its SearchOptions."""

    def __init__(self, service: SearchService) -> None:
        self.service = service

    @property
    def embedder(self) -> Any:
        """The wrapped service's embedder."""
        return self.service.embedder

    @embedder.setter
    def embedder(self, value: Any) -> None:
        self.service.embedder = value

    def search(
        self,
        owner: str,
        query: str,
        *,
        top_k: int = 10,
        mode: str = "hybrid",
        min_similarity: float | None = None,
        kind: str | None = None,
        source: str | None = None,
        language: str | None = None,
        tags_all: list[str] | None = None,
        tags_any: list[str] | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
        fusion: str | None = None,
    ) -> SearchResult:
        """The service's search with these options."""
        filters = EntryFilters(
            kind=kind,
            source=source,
            language=language,
            tags_all=tags_all,
            tags_any=tags_any,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            updated_before=updated_before,
        )
        options = SearchOptions(mode=mode, filters=filters, min_similarity=min_similarity, fusion=fusion)
        return self.service.search(owner, query, top_k=top_k, options=options)


def lexical_hits(app: App, query: str, owner: str = "default") -> list[str]:
    """The ids of the first five hits of a lexical search, best first."""
    result = app.search.search(owner, query, top_k=5, options=SearchOptions(mode="lexical"))
    return [str(hit.id) for hit in result.hits]
