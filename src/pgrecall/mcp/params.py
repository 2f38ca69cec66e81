"""Tool parameters: types with the descriptions an assistant reads, built from the domain's limits."""

# No `from __future__ import annotations`: the SDK reads these Annotated types at run time.

from datetime import datetime
from typing import Annotated, Any, Literal

from mcp_types import ToolAnnotations
from pydantic import BeforeValidator, Field
from pydantic_core import PydanticUseDefault

from pgrecall.domain.ranking import MMR_LAMBDA
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

KIND_DOC = "note (default), fact, decision, preference, doc, … (letters, digits, _ . : -)."
LANGUAGE_DOC = "ISO 639-1 code (de, fr, ru, …) or 'simple' (no stemming); omit to detect."
MODE_DOC = "hybrid: meaning + words; vector: meaning (paraphrases, languages); lexical: exact words."

EntryId = Annotated[str, Field(description="Entry id: UUID, or 8+ hex digits from its start or end.")]
Title = Annotated[str | None, Field(description=f"Short title (≤ {MAX_TITLE_CHARS} characters).")]
Tags = Annotated[
    list[str] | None,
    Field(description=f"Tags, each ≤ {MAX_TAG_CHARS} chars.", max_length=MAX_TAGS),
]
ReplacementTags = Annotated[
    list[str] | None,
    Field(description="Replaces all tags; omit to keep them.", max_length=MAX_TAGS),
]
Source = Annotated[
    str | None,
    Field(description=f"Where it came from: URL, path, conversation id (≤ {MAX_SOURCE_CHARS} chars)."),
]
Kind = Annotated[str | None, Field(description=KIND_DOC)]
Metadata = Annotated[
    dict[str, Any] | None,
    Field(description=f"Free-form JSON (≤ {MAX_METADATA_BYTES // 1024} KiB, ≤ {MAX_METADATA_DEPTH} levels)."),
]
Language = Annotated[str | None, Field(description=LANGUAGE_DOC)]
IdempotencyKey = Annotated[
    str | None,
    Field(
        description=f"Unique string (≤ {MAX_IDEMPOTENCY_KEY_CHARS} chars): a retry with it returns the "
        "first entry, storing none."
    ),
]
ExpectedVersion = Annotated[
    int | None,
    Field(
        description="Update only if the entry is still at this version.",
        ge=1,
        le=MAX_VERSION,
    ),
]

# Filters shared by list_entries, search and build_context.
# kind, source and tags match whatever their case; entries keep them as written.
KindFilter = Annotated[str | None, Field(description="This kind (any case).")]
SourceFilter = Annotated[str | None, Field(description="This whole source (any case).")]
SourcePrefix = Annotated[
    str | None,
    Field(description="Sources starting with this (any case; % _ literal)."),
]
DocumentFilter = Annotated[str | None, Field(description="This document's chunks (its id).", max_length=64)]
VersionFilter = Annotated[str | None, Field(description="Document version label.", max_length=100)]
LanguageFilter = Annotated[str | None, Field(description="This language (ISO 639-1).")]
TagsAll = Annotated[
    list[str] | None,
    Field(description="All of these tags (any case).", max_length=MAX_TAGS),
]
TagsAny = Annotated[
    list[str] | None,
    Field(description="Any of these tags (any case).", max_length=MAX_TAGS),
]
After = Annotated[datetime | None, Field(description="inclusive; no offset = UTC.")]
Before = Annotated[datetime | None, Field(description="exclusive; no offset = UTC.")]
ListLimit = Annotated[
    int,
    Field(description="Page size.", ge=1, le=MAX_LIST_LIMIT, json_schema_extra=OR_NULL),
    NULL_IS_DEFAULT,
]
IncludeSuperseded = Annotated[
    bool,
    Field(
        description="Include superseded entries.",
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
IncludeExpired = Annotated[
    bool,
    Field(
        description="Include expired entries.",
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
ExpiresAt = Annotated[
    str | None,
    Field(
        description="When it stops being current: ISO 8601 time (no offset = UTC) or duration from now "
        "(30m, 24h, 7d, 2w; ≤ 100 years); then skipped unless include_expired, never deleted.",
        max_length=64,
    ),
]
Supersedes = Annotated[
    str | None,
    Field(
        description="Id of an earlier entry this one replaces: while this one is live, the old one is "
        "skipped unless include_superseded.",
        max_length=64,
    ),
]
IncludeDeleted = Annotated[
    bool, Field(description="Include soft-deleted ones.", json_schema_extra=OR_NULL), NULL_IS_DEFAULT
]

Query = Annotated[
    str | None,
    Field(
        description=f"What to find, in plain words, any language (≤ {MAX_QUERY_CHARS} chars); optional "
        "with selected_text."
    ),
]
Selected = Annotated[
    str | None,
    Field(
        description=f"Text the user selected (≤ {MAX_SELECTION_CHARS} chars), searched instead of query; "
        "nothing relevant: out_of_scope; empty or invalid: selection_ignored."
    ),
]
Pins = Annotated[
    list[str] | None,
    Field(
        description="content_hash values of an earlier answer, returned first in order; unknown ones "
        "in missing_pins.",
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
        description=f"Re-rank for variety (MMR, λ = {MMR_LAMBDA}): fewer hits saying the same.",
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
TopK = Annotated[
    int,
    Field(description="Hits wanted.", ge=1, le=MAX_TOP_K, json_schema_extra=OR_NULL),
    NULL_IS_DEFAULT,
]
TopKPerSection = Annotated[
    int,
    Field(
        description="Entries considered per section.",
        ge=1,
        le=MAX_TOP_K,
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
MinScore = Annotated[
    float | None,
    Field(
        description="Minimum cosine of every hit; model-specific (default model: related 0.74-0.94): "
        "prefer min_relevance.",
        ge=-1.0,
        le=1.0,
        # NaN passes ge/le (every comparison with it is false) and would empty the branch.
        allow_inf_nan=False,
    ),
]
_RELEVANCE_DOC = (
    "Skip less relevant hits: √ of standing vs the best hits, capped by cosine on the "
    "model's scale (0 ≈ unrelated, 1 ≈ an answer)."
)
MinRelevance = Annotated[
    float | None,
    Field(
        description=_RELEVANCE_DOC + " Unset: none (0.7 with selected_text).",
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
    ),
]
RecencyHalfLife = Annotated[
    float | None,
    Field(
        description="Recency boost half-life (days): adds 0.5^(age/half-life) × a first place's share "
        "(1/61 in rrf, smaller fusion weight in convex). Unset: none.",
        gt=0.0,
        le=36500.0,
        allow_inf_nan=False,
    ),
]
ContextMinRelevance = Annotated[
    float,
    Field(
        description=_RELEVANCE_DOC + " 0 cites whatever ranks.",
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
Trace = Annotated[
    bool,
    Field(description="Per-stage counts and ms in `trace`.", json_schema_extra=OR_NULL),
    NULL_IS_DEFAULT,
]
TokenBudget = Annotated[
    int,
    Field(
        description="Most tokens the context may take.",
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        json_schema_extra=OR_NULL,
    ),
    NULL_IS_DEFAULT,
]
Sections = Annotated[
    list[str] | None,
    Field(
        description="Sub-topics (e.g. ['background', 'decisions']), each searched with the query for an "
        "equal budget share; labels in by_section.",
        max_length=MAX_SECTIONS,
    ),
]
Citations = Annotated[
    list[CitationIn],
    Field(
        description="Citations from an earlier answer: content_hash, and id and label if known.",
        max_length=MAX_CITATIONS,
    ),
]
