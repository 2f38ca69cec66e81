"""Filter fragments of the search statement: what callers ask for and what is current."""

from __future__ import annotations

from pgrecall.store.current_sql import not_expired, not_superseded

# Optional filters, fixed fragments over alias e; only those asked for are joined in
# (fewer `x IS NULL OR …` guards: better plans, also generic ones). `|@>` and `|&&` are
# @> and && for text[] only, LEAKPROOF, so the tag GIN index serves them under row-level
# security (migration 0006). Tags, kind and source match folded to lower case (migration 0008:
# tags_folded is the stored lower-case copy of tags); starts_with needs no LIKE escaping.
FILTER_SQL: dict[str, str] = {
    "kind": "lower(e.kind) = lower(%(f_kind)s)",
    "source": "lower(e.source) = lower(%(f_source)s)",
    "source_prefix": "starts_with(lower(e.source), lower(%(f_source_prefix)s))",
    "language": "e.language = %(language)s::regconfig",
    "tags_all": "e.tags_folded |@> pgrecall_fold_tags(%(f_tags_all)s::text[])",
    "tags_any": "e.tags_folded |&& pgrecall_fold_tags(%(f_tags_any)s::text[])",
    "created_after": "e.created_at >= %(f_created_after)s",
    "created_before": "e.created_at < %(f_created_before)s",
    "updated_after": "e.updated_at >= %(f_updated_after)s",
    "updated_before": "e.updated_at < %(f_updated_before)s",
}

# What is current (migration 0009), joined in unless the caller includes such entries. Not
# counted as filters for the HNSW knobs: they leave out few entries.
CURRENT_SQL: dict[str, str] = {
    "include_expired": not_expired("e"),
    "include_superseded": not_superseded("e"),
}
