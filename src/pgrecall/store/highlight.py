"""Matched terms marked in snippets, by PostgreSQL's own parser and stemmer (ts_headline)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.domain.text import split_dotted

# Marks around each matched word; never in stored text (the caller strips them from the input).
MARK_START, MARK_END = "\x02", "\x03"
_TERM_SEPARATOR = "\x1f"

# Each row: a text, the regconfig that matched it, and its matched lexemes joined by \x1f. The
# lexemes are already stemmed: each one becomes a quoted operand of an OR query (plainto_tsquery
# over 'simple' quotes it safely, whatever characters it holds), and ts_headline stems the text
# with the row's own config to find them. HighlightAll keeps the whole text, not a fragment.
SQL_HIGHLIGHT = """
SELECT CASE WHEN q.query IS NULL THEN h.txt
            ELSE ts_headline(h.cfg::regconfig, h.txt, q.query,
                             'HighlightAll=true, StartSel=' || chr(2) || ', StopSel=' || chr(3))
       END AS marked
FROM unnest(%(texts)s::text[], %(configs)s::text[], %(terms)s::text[])
     WITH ORDINALITY AS h(txt, cfg, terms, ord)
CROSS JOIN LATERAL (
    SELECT nullif(array_to_string(ARRAY(
        SELECT '(' || p.operand || ')'
        FROM unnest(string_to_array(h.terms, chr(31))) AS l(lexeme),
             LATERAL (SELECT plainto_tsquery('simple', l.lexeme)::text AS operand) AS p
        WHERE p.operand <> ''
    ), ' | '), '')::tsquery AS query
) AS q
ORDER BY h.ord
"""


def highlight(
    pool: ConnectionPool[psycopg.Connection[dict[str, Any]]],
    rows: Sequence[tuple[str, str, Sequence[str]]],
) -> list[str]:
    """(text, regconfig, lexemes) → the text with MARK_START/MARK_END around each matched word."""
    if not rows:
        return []
    clean = [text.replace(MARK_START, " ").replace(MARK_END, " ") for text, _, _ in rows]
    # ts_headline reads smtplib.SMTP.ehlo as one word where the index also holds its parts
    # (migration 0019): it marks the text with those dots as spaces, and the dots are put back.
    params = {
        "texts": [split_dotted(text) for text in clean],
        "configs": [config for _, config, _ in rows],
        "terms": [_TERM_SEPARATOR.join(t for t in terms if _TERM_SEPARATOR not in t) for _, _, terms in rows],
    }
    with pool.connection() as conn:
        marked = [str(row["marked"]) for row in conn.execute(SQL_HIGHLIGHT, params).fetchall()]
    return [_restore(text, original) for text, original in zip(marked, clean, strict=True)]


def _restore(marked: str, original: str) -> str:
    """marked's marks around original's characters (marked holds original's text, dots as spaces)."""
    out: list[str] = []
    at = 0
    for char in marked:
        if char in (MARK_START, MARK_END):
            out.append(char)
            continue
        if at >= len(original):
            return original  # ts_headline changed the text: no marks rather than wrong text
        out.append(original[at])
        at += 1
    return "".join(out) if at == len(original) else original
