"""Near-duplicate lookup after a write: entries that already say nearly the same thing."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from pgrecall.domain.entries import Entry
from pgrecall.domain.text import overlap, snippet
from pgrecall.domain.validation import MAX_QUERY_CHARS
from pgrecall.errors import PgrecallError
from pgrecall.services.search import SearchOptions, SearchService
from pgrecall.store.entries import EntryStore

log = logging.getLogger(__name__)

NEAR_DUPLICATE_OVERLAP = 0.5


@dataclass(frozen=True)
class Similar:
    """An existing entry that looks like a near-duplicate of the one just written."""

    id: str
    title: str | None
    snippet: str
    content_hash: str
    overlap: float
    exact: bool


def _similar(entry: Entry, score: float, *, exact: bool) -> Similar:
    return Similar(
        id=str(entry.id),
        title=entry.title,
        snippet=snippet(entry.body),
        content_hash=entry.content_hash,
        overlap=round(score, 4),
        exact=exact,
    )


class NearDuplicates:
    """Finds entries whose text overlaps a given entry's (same hash, or shingle overlap ≥ 0.5)."""

    def __init__(self, search: SearchService, store: EntryStore) -> None:
        self.search = search
        self.store = store

    def candidates_like(self, entry: Entry, vector: Sequence[float] | None) -> list[Entry]:
        """Entries a search with this entry's text (and its stored vector, if any) ranks highest.

        Never embeds: with the entry's vector the search is hybrid, without one (pending) lexical.
        """
        query = " ".join(entry.body.split())[:MAX_QUERY_CHARS].strip()
        if not query:
            return []
        options = SearchOptions(mode="hybrid" if vector is not None else "lexical")
        try:
            result = self.search.search(entry.owner, query, top_k=5, options=options, query_vector=vector)
        except PgrecallError as exc:  # the notice is a courtesy; the write already succeeded
            log.warning("near-duplicate lookup failed: %s", exc)
            return []
        ids = [uuid.UUID(hit.id) for hit in result.hits if hit.id != str(entry.id)]
        found = self.store.many(entry.owner, ids)
        return [found[i] for i in ids if i in found]

    def similar_entries(
        self, entry: Entry, vector: Sequence[float] | None = None, limit: int = 3
    ) -> list[Similar]:
        """Existing entries that look like near-duplicates of `entry`, most overlapping first.

        Candidates come from the exact hash and from a hybrid search with the entry's own text;
        the verdict is text overlap, not a cosine threshold (cosine bands differ by model).
        """
        owner = entry.owner
        found: dict[str, Similar] = {}
        for other in self.store.by_hash(owner, entry.content_hash, limit + 1):
            if other.id != entry.id:
                found[str(other.id)] = _similar(other, 1.0, exact=True)
        for other in self.candidates_like(entry, vector):
            if str(other.id) in found or other.id == entry.id:
                continue
            score = overlap(entry.body, other.body)
            if score >= NEAR_DUPLICATE_OVERLAP:
                found[str(other.id)] = _similar(other, score, exact=other.content_hash == entry.content_hash)
        ranked = sorted(found.values(), key=lambda s: (-s.overlap, s.id))
        return ranked[:limit]
