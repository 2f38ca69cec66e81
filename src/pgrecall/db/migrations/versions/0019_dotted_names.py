"""Dotted names (module.Class.method, schema.table, postgresql.conf) indexed whole and by parts

Revision ID: 0019_dotted_names
Revises: 0018_huge_store_ef_search
Create Date: 2026-12-07

PostgreSQL's parser reads a dotted name as one `host` token, cut where its host rules stop:
`smtplib.SMTP.ehlo_or_helo_if_needed()` becomes the lexeme `smtplib.smtp.ehlo`, the page's own
`SMTP.ehlo_or_helo_if_needed()` becomes `smtp.ehlo`, and `pg_catalog.pg_class` becomes
`pg_catalog.pg`; a question naming the function never matches the page that documents it. Every
dotted name whose parts are two characters or more is now indexed whole and by its parts: the parts
are appended to the text the parser reads (smtplib SMTP ehlo_or_helo_if_needed), so the page that
writes the name as asked still ranks first on the whole token and the others are found by the parts.
The search statement rewrites the query with the same function. Numbers, versions and abbreviations
(3.11, python3.11, e.g., U.S.) keep their dot: no part of two characters follows it. The parts
alone, without the whole, lost the exact page (python-doc passage nDCG@10 0.7025 -> 0.6769), and
single-letter parts cost CISI's lexical branch 0.016 (docs/fusion-code.md).

pgrecall_lexical_text() adds this to pgrecall_cjk_bigrams() (migration 0017), which is
kept for a server of the previous release still searching while the schema moves on. As in 0017,
changing the generated expression rewrites the table without firing triggers, so the lexical
statistics are rebuilt from the new tsv under the same lock.
"""

from alembic import op

revision = "0019_dotted_names"
down_revision = "0018_huge_store_ef_search"
branch_labels = None
depends_on = None

ROLE = "pgrecall_app"

_DOTTED = r"[A-Za-z0-9_]{2,}(?:\.[A-Za-z_][A-Za-z0-9_]+)+"
_FUNCTION = rf"""
CREATE FUNCTION pgrecall_lexical_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN t !~ '{_DOTTED}' THEN pgrecall_cjk_bigrams(t) ELSE
    pgrecall_cjk_bigrams(t) || ' ' || (
        SELECT translate(string_agg(m[1], ' '), '.', ' ') FROM regexp_matches(t, '{_DOTTED}', 'g') AS m
    ) END
"""

_TSV_PARTS = """
    setweight(to_tsvector(language, pgrecall_lexical_text(coalesce(title, ''))), 'A')
 || setweight(to_tsvector(language, pgrecall_lexical_text(body)), 'B')
 || setweight(to_tsvector(language, pgrecall_lexical_text(pgrecall_tags_text(tags))), 'C')
"""
_TSV_BEFORE = """
    setweight(to_tsvector(language, pgrecall_cjk_bigrams(coalesce(title, ''))), 'A')
 || setweight(to_tsvector(language, pgrecall_cjk_bigrams(body)), 'B')
 || setweight(to_tsvector(language, pgrecall_cjk_bigrams(pgrecall_tags_text(tags))), 'C')
"""

# Citus refuses ALTER COLUMN … SET EXPRESSION on its tables (citusdata/citus#7814): a distributed
# store is taken back to plain tables, upgraded and distributed again (docs/scaling.md). The inner
# IF is parsed only where Citus' catalog exists.
_REFUSE_ON_CITUS = """
DO $$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        IF EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = 'entries'::regclass) THEN
            RAISE EXCEPTION 'entries is distributed by Citus, which cannot change its generated tsv: run '
                'pgrecall migrate citus --undo, then this migration, then pgrecall migrate citus';
        END IF;
    END IF;
END $$
"""

# The statistics of migration 0002, recounted from the rewritten tsv (as in 0017).
_REBUILD_STATISTICS = """
TRUNCATE lexical_df, lexical_df_delta, lexical_docs, lexical_docs_delta;
INSERT INTO lexical_df (owner, language, lexeme, df)
SELECT e.owner, e.language, l.lexeme, count(*)
FROM entries e CROSS JOIN LATERAL unnest(tsvector_to_array(e.tsv)) AS l(lexeme)
WHERE e.deleted_at IS NULL
GROUP BY e.owner, e.language, l.lexeme;
INSERT INTO lexical_docs (owner, language, n_docs, total_len)
SELECT owner, language, count(*), sum(length(tsv))
FROM entries WHERE deleted_at IS NULL
GROUP BY owner, language;
"""


def upgrade() -> None:
    op.execute(_REFUSE_ON_CITUS)
    op.execute(_FUNCTION)
    # The server's role runs it on every write (the generated tsv) and search (the query).
    op.execute(f"GRANT EXECUTE ON FUNCTION pgrecall_lexical_text(text) TO {ROLE}")
    op.execute("LOCK TABLE entries IN ACCESS EXCLUSIVE MODE")
    op.execute(f"ALTER TABLE entries ALTER COLUMN tsv SET EXPRESSION AS ({_TSV_PARTS})")
    op.execute(_REBUILD_STATISTICS)


def downgrade() -> None:
    op.execute(_REFUSE_ON_CITUS)
    op.execute("LOCK TABLE entries IN ACCESS EXCLUSIVE MODE")
    op.execute(f"ALTER TABLE entries ALTER COLUMN tsv SET EXPRESSION AS ({_TSV_BEFORE})")
    op.execute(_REBUILD_STATISTICS)
    op.execute("DROP FUNCTION pgrecall_lexical_text(text)")
