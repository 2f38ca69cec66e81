"""Entry filters in SQL: one compiler for the list statement and the search statement.

Adding a filter is a field of EntryFilters, one fragment here, and the surfaces' parameters.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from pgrecall.domain.entries import EntryFilters
from pgrecall.store.current_sql import not_expired, not_superseded

# Fixed fragments over the entries alias e, each bound to %(f_<name>)s; only those asked for are
# joined in (fewer `x IS NULL OR …` guards: better plans, also generic ones). `|@>` and `|&&` are
# @> and && for text[] only, LEAKPROOF, so the tag GIN index serves them under row-level security
# (migration 0006). Tags, kind and source match folded to lower case (migration 0008: tags_folded
# is the stored lower-case copy of tags); starts_with needs no LIKE escaping.
FILTER_SQL: dict[str, str] = {
    "kind": "lower(e.kind) = lower(%(f_kind)s)",
    "source": "lower(e.source) = lower(%(f_source)s)",
    "source_prefix": "starts_with(lower(e.source), lower(%(f_source_prefix)s))",
    "language": "e.language = %(f_language)s::regconfig",
    "tags_all": "e.tags_folded |@> pgrecall_fold_tags(%(f_tags_all)s::text[])",
    "tags_any": "e.tags_folded |&& pgrecall_fold_tags(%(f_tags_any)s::text[])",
    "created_after": "e.created_at >= %(f_created_after)s",
    "created_before": "e.created_at < %(f_created_before)s",
    "updated_after": "e.updated_at >= %(f_updated_after)s",
    "updated_before": "e.updated_at < %(f_updated_before)s",
    "document": "e.document_id = %(f_document)s::uuid",
    "version": "e.document_id IN (SELECT d.id FROM documents d WHERE d.owner = %(owner)s "
    "AND d.version_label = %(f_version)s)",
}

# What is current (migration 0009), joined in unless the caller includes such entries. Not
# counted as filters for the HNSW knobs: they leave out few entries.
CURRENT_SQL: dict[str, str] = {
    "include_expired": not_expired("e"),
    "include_superseded": not_superseded("e"),
}


def _value(filters: EntryFilters, name: str) -> Any:
    value = getattr(filters, name)
    if isinstance(value, (list, tuple)) and not value:
        return None
    return list(value) if isinstance(value, (list, tuple)) else value


def has_filters(filters: EntryFilters) -> bool:
    """True when any filter of FILTER_SQL is set."""
    return any(_value(filters, name) is not None for name in FILTER_SQL)


def compile_filters(filters: EntryFilters) -> tuple[sql.Composable, dict[str, Any]]:
    """` AND …` over alias e for the filters set (and what is current), and their bound parameters.

    The statement also binds %(owner)s (the superseded fragment asks for it).
    """
    params = {f"f_{name}": _value(filters, name) for name in FILTER_SQL}
    parts = [FILTER_SQL[name] for name in FILTER_SQL if params[f"f_{name}"] is not None]
    parts += [CURRENT_SQL[flag] for flag in CURRENT_SQL if not getattr(filters, flag)]
    return sql.SQL("").join(sql.SQL(" AND " + part) for part in parts), params


# How many current live entries each filter keeps alone, and all of them together (an empty
# search says which filter left nothing).
FILTER_COUNTS_SQL = (
    "SELECT count(*) AS current, count(*) FILTER (WHERE true{all}) AS all_filters{columns} "
    "FROM entries e WHERE e.owner = %(owner)s AND e.deleted_at IS NULL{current}"
)


def filter_counts_statement(filters: EntryFilters) -> tuple[sql.Composed, dict[str, Any]]:
    """FILTER_COUNTS_SQL for the filters set, and its bound parameters (also %(owner)s)."""
    params = {f"f_{name}": _value(filters, name) for name in FILTER_SQL}
    names = [name for name in FILTER_SQL if params[f"f_{name}"] is not None]
    columns = [
        sql.SQL(", count(*) FILTER (WHERE {}) AS {}").format(sql.SQL(FILTER_SQL[n]), sql.Identifier(n))
        for n in names
    ]
    current = [CURRENT_SQL[flag] for flag in CURRENT_SQL if not getattr(filters, flag)]
    statement = sql.SQL(FILTER_COUNTS_SQL).format(
        all=sql.SQL("").join(sql.SQL(" AND " + FILTER_SQL[n]) for n in names),
        columns=sql.SQL("").join(columns),
        current=sql.SQL("").join(sql.SQL(" AND " + part) for part in current),
    )
    return statement, params
