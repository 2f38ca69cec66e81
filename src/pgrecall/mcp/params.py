"""Tool parameters: types with the descriptions an assistant reads, built from the domain's limits."""

# No `from __future__ import annotations`: the SDK reads these Annotated types at run time.

from datetime import datetime
from typing import Annotated, Any, Literal

from mcp_types import ToolAnnotations
from pydantic import BeforeValidator, Field
from pydantic_core import PydanticUseDefault

from pgrecall.domain.ranking import MMR_LAMBDA
from pgrecall.domain.relevance import DEFAULT_CONTEXT_MIN_RELEVANCE
from pgrecall.domain.validation import (
    MAX_BUDGET,
    MAX_CITATIONS,
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_LIST_LIMIT,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_PINS,
    MAX_QUERY_CHARS,
    MAX_SECTIONS,
    MAX_SELECTION_CHARS,
    MAX_SOURCE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TITLE_CHARS,
    MAX_TOP_K,
    MAX_VERSION,
    MIN_BUDGET,
)
from pgrecall.mcp.retrieval_schemas import CitationIn


def _default_on_null(value: object) -> object:
    if value is None:
        raise PydanticUseDefault()
    return value


def _or_null(schema: dict[str, Any]) -> None:
    # The schema says what is accepted: the value's own type, or null (which means the default).
    keep = {"description", "default", "title"}
    branch = {key: schema.pop(key) for key in list(schema) if key not in keep}
    schema["anyOf"] = [branch, {"type": "null"}]


# For a parameter with a non-null default: a client that sends null gets the default (many send
# null for "not given"), and the published schema admits null.
NULL_IS_DEFAULT = BeforeValidator(_default_on_null)
OR_NULL = _or_null


def annotations(*, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    """Hints for a writing tool; every tool works on this store alone (a closed world)."""
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=False
    )


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

KIND_DOC = "Kind token: note (default), fact, decision, preference, doc, … (letters, digits, _ . : -)."
LANGUAGE_DOC = (
    "ISO 639-1 code of the text's language (de, fr, es, ru, en, …) or 'simple' for no stemming. "
    "Omit it: the language is detected."
)
MODE_DOC = (
    "hybrid (default: meaning + keywords fused), vector (meaning only: paraphrases, other languages), "
    "lexical (exact words: names, codes, identifiers)."
)

EntryId = Annotated[
    str, Field(description="Entry id (UUID, or ≥ 8 hex digits of its start or end), e.g. from search.")
]
Title = Annotated[str | None, Field(description=f"Short title (≤ {MAX_TITLE_CHARS} characters).")]
Tags = Annotated[
    list[str] | None,
    Field(
        description=f"Tags for filtering (≤ {MAX_TAGS}, each ≤ {MAX_TAG_CHARS} chars).", max_length=MAX_TAGS
    ),
]
ReplacementTags = Annotated[
    list[str] | None,
    Field(description=f"Replaces all tags (≤ {MAX_TAGS}); omit to keep them.", max_length=MAX_TAGS),
]
Source = Annotated[
    str | None,
    Field(description=f"Where it came from: URL, file path, conversation id (≤ {MAX_SOURCE_CHARS})."),
]
Kind = Annotated[str | None, Field(description=KIND_DOC)]
Metadata = Annotated[
    dict[str, Any] | None,
    Field(
        description=f"Free-form JSON object (≤ {MAX_METADATA_BYTES // 1024} KiB, "
        f"≤ {MAX_METADATA_DEPTH} levels deep)."
    ),
]
Language = Annotated[str | None, Field(description=LANGUAGE_DOC)]
IdempotencyKey = Annotated[
    str | None,
    Field(
        description=f"Any unique string (≤ {MAX_IDEMPOTENCY_KEY_CHARS}) for this write. Retrying with the "
        "same key never stores a second entry; the first one is returned."
    ),
]
ExpectedVersion = Annotated[
    int | None,
    Field(
        description="Only update if the entry is still at this version (optimistic locking).",
        ge=1,
        le=MAX_VERSION,
    ),
]

# Filters shared by list_entries, search and build_context.
# kind, source and tags match whatever their case; entries keep them as written.
KindFilter = Annotated[str | None, Field(description="Only entries of this kind (any case).")]
SourceFilter = Annotated[
    str | None, Field(description="Only entries with this source, whole (any case; see source_prefix).")
]
SourcePrefix = Annotated[
    str | None,
    Field(
        description="Only entries whose source starts with this (any case), e.g. a folder path "
        '"docs/adr/" or a site "https://wiki.example.org/". Matched literally: % and _ are plain characters.'
    ),
]
DocumentFilter = Annotated[
    str | None, Field(description="Only chunks of this document (its id).", max_length=64)
]
VersionFilter = Annotated[
    str | None, Field(description="Only chunks of documents with this version label.", max_length=100)
]
LanguageFilter = Annotated[str | None, Field(description="Only entries in this language (ISO 639-1 code).")]
TagsAll = Annotated[
    list[str] | None,
    Field(description=f"Only entries having all these tags, any case (≤ {MAX_TAGS}).", max_length=MAX_TAGS),
]
TagsAny = Annotated[
    list[str] | None,
    Field(
        description=f"Only entries having at least one of these tags, any case (≤ {MAX_TAGS}).",
        max_length=MAX_TAGS,
    ),
]
After = Annotated[
    datetime | None, Field(description="At or after this time (ISO 8601, inclusive; no offset means UTC).")
]
Before = Annotated[
    datetime | None, Field(description="Before this time (ISO 8601, exclusive; no offset means UTC).")
]
ListLimit = Annotated[
    int,
    Field(description=f"Page size, 1-{MAX_LIST_LIMIT}.", ge=1, le=MAX_LIST_LIMIT, json_schema_extra=OR_NULL),
    NULL_IS_DEFAULT,
]
IncludeSuperseded = Annotated[
    bool,
    Field(
        description="Also return entries another live entry supersedes (left out by default).",
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
IncludeExpired = Annotated[
    bool,
    Field(
        description="Also return entries past their expires_at (left out by default).",
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
ExpiresAt = Annotated[
    str | None,
    Field(
        description="When the entry stops being current: an ISO 8601 time (no offset = UTC) or a duration "
        'from now ("30m", "24h", "7d", "2w"), at most 100 years ahead. After it, search, list_entries and '
        "build_context leave the entry out unless include_expired is true; it is never deleted.",
        max_length=64,
    ),
]
Supersedes = Annotated[
    str | None,
    Field(
        description="Id of an earlier entry of yours that this one replaces (an outdated decision, an old "
        "address). While this entry is live, search, list_entries and build_context leave the earlier one "
        "out unless include_superseded is true; get_entry shows the chain both ways.",
        max_length=64,
    ),
]
IncludeDeleted = Annotated[
    bool, Field(description="Also list soft-deleted entries.", json_schema_extra=OR_NULL), NULL_IS_DEFAULT
]

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
        description=f"Text the user selected (≤ {MAX_SELECTION_CHARS} characters): finds entries related "
        "to it. With a query too, both are searched and entries related to both come first. An empty or "
        "invalid selection is ignored (see selection_ignored) and the query alone is used."
    ),
]
Pins = Annotated[
    list[str] | None,
    Field(
        description=f"content_hash values from an earlier answer (≤ {MAX_PINS}): those entries come first, "
        "in this order, then the ranking fills the remaining slots. Unknown hashes go to missing_pins.",
        max_length=MAX_PINS,
    ),
]
Mode = Annotated[
    Literal["hybrid", "vector", "lexical"],
    Field(description=MODE_DOC, json_schema_extra=OR_NULL),
    NULL_IS_DEFAULT,
]
Diversify = Annotated[
    bool,
    Field(
        description=f"Re-rank for variety (MMR over stored vectors, λ = {MMR_LAMBDA}): fewer results "
        "saying the same thing.",
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
TopK = Annotated[
    int,
    Field(description=f"Results wanted, 1-{MAX_TOP_K}.", ge=1, le=MAX_TOP_K, json_schema_extra=OR_NULL),
    NULL_IS_DEFAULT,
]
TopKPerSection = Annotated[
    int,
    Field(
        description=f"Entries considered per section, 1-{MAX_TOP_K}.",
        ge=1,
        le=MAX_TOP_K,
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
MinScore = Annotated[
    float | None,
    Field(
        description="Minimum cosine similarity (-1..1) for every hit, also those found by words only "
        "(lexical-only hits are checked against their own vector; when the search is degraded to words, "
        "it cannot apply). Model-specific: the default model's related texts score 0.74-0.94, so prefer "
        "min_relevance unless you know the model.",
        ge=-1.0,
        le=1.0,
        # NaN passes ge/le (every comparison with it is false) and would empty the branch.
        allow_inf_nan=False,
    ),
]
_RELEVANCE_DOC = (
    "Leave out hits less relevant than this (0..1). A hit's relevance is the square root of its "
    "standing against the best hit of each branch in the same search (vector: cosine above the "
    "candidates' median as a share of the best's; words: BM25 as a share of the best's), at most its "
    "cosine on the model's own scale (0 = as similar as a typical unrelated text, 1 = as a typical "
    "answer), so it works with any model and a question nothing answers gets low relevance everywhere."
)
MinRelevance = Annotated[
    float | None,
    Field(description=_RELEVANCE_DOC + " Unset: no floor.", ge=0.0, le=1.0, allow_inf_nan=False),
]
RecencyHalfLife = Annotated[
    float | None,
    Field(
        description="Favour recently updated entries: each candidate gains 0.5^(age / half-life) / 61 "
        "on top of its fused score (a just-updated entry as much as a first place in one branch, one "
        "a half-life old half of that). Days, > 0 and ≤ 36500. Unset (default): no recency, rankings "
        "by relevance only. Reorders what the branches found; a strongly relevant old entry can "
        "still beat a weakly relevant new one.",
        gt=0.0,
        le=36500.0,
        allow_inf_nan=False,
    ),
]
ContextMinRelevance = Annotated[
    float,
    Field(
        description=_RELEVANCE_DOC + f" Default {DEFAULT_CONTEXT_MIN_RELEVANCE}; 0 cites whatever ranks.",
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
Explain = Annotated[
    bool, Field(description="Include each hit's score breakdown.", json_schema_extra=OR_NULL), NULL_IS_DEFAULT
]
TokenBudget = Annotated[
    int,
    Field(
        description=f"Most tokens the context may take ({MIN_BUDGET}-{MAX_BUDGET}).",
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
Sections = Annotated[
    list[str] | None,
    Field(
        description=f"Up to {MAX_SECTIONS} sub-topics (e.g. ['background', 'decisions']): each is "
        "searched together with the query, gets an equal share of the budget and its labels in "
        "by_section.",
        max_length=MAX_SECTIONS,
    ),
]
Citations = Annotated[
    list[CitationIn],
    Field(
        description=f"Citations from an earlier answer (≤ {MAX_CITATIONS}): content_hash, and id "
        "and label when you have them.",
        max_length=MAX_CITATIONS,
    ),
]
