"""lexical statistics for BM25: document frequencies and lengths per (owner, language)

Revision ID: 0002_lexical_stats
Revises: 0001_entries
Create Date: 2026-11-29

BM25 needs, per owner and language (regconfig): the number of live documents, their
total length and, per lexeme, how many live documents hold it. Keys lead with
(owner, lexeme) so that the search can also read a lexeme's frequency across all of
an owner's languages: the size of its posting list in the shared GIN index. Only live entries
(deleted_at IS NULL) count; a soft delete takes an entry out of the statistics and a
restore puts it back. A document's length is length(tsv), its number of distinct
lexemes, because that is what the search can read per candidate in O(1).

Writers never update shared rows. Statement-level AFTER triggers with transition
tables append one aggregated delta row per touched (owner, language, lexeme) to
insert-only tables; readers add base + deltas, so statistics are exact at every
snapshot. Merging deltas into the base tables (pgrecall_lexical_compact) takes a
transaction-level advisory lock with try-lock: one writer at a time merges, the
others skip rather than wait, so writers never queue on common lexemes like
'use' (a row-level trigger updating df directly serialised them and cost ~2.6 ms
per insert). Deltas are merged every 64th writing statement, after any statement
that touched 256+ rows, and only under READ COMMITTED (a REPEATABLE READ writer
could otherwise hit a serialization failure on rows another merger removed).
"""

from alembic import op

revision = "0002_lexical_stats"
down_revision = "0001_entries"
branch_labels = None
depends_on = None

_TABLES = """
CREATE TABLE lexical_df (
    owner    text      NOT NULL,
    language regconfig NOT NULL,
    lexeme   text      NOT NULL,
    df       bigint    NOT NULL,
    PRIMARY KEY (owner, lexeme, language)
);
CREATE TABLE lexical_df_delta (
    owner    text      NOT NULL,
    language regconfig NOT NULL,
    lexeme   text      NOT NULL,
    delta    integer   NOT NULL
);
CREATE INDEX lexical_df_delta_key ON lexical_df_delta (owner, lexeme, language);
CREATE TABLE lexical_docs (
    owner     text      NOT NULL,
    language  regconfig NOT NULL,
    n_docs    bigint    NOT NULL,
    total_len bigint    NOT NULL,
    PRIMARY KEY (owner, language)
);
CREATE TABLE lexical_docs_delta (
    owner     text      NOT NULL,
    language  regconfig NOT NULL,
    n_docs    integer   NOT NULL,
    total_len bigint    NOT NULL
);
CREATE INDEX lexical_docs_delta_owner ON lexical_docs_delta (owner);
CREATE SEQUENCE lexical_stats_tick;
"""

_COMPACT = """
CREATE FUNCTION pgrecall_lexical_compact() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    moved bigint;
BEGIN
    -- One merger at a time; the others skip instead of waiting for it.
    IF NOT pg_try_advisory_xact_lock(hashtextextended('pgrecall_lexical_compact', 0)) THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM lexical_df_delta RETURNING owner, language, lexeme, delta
    ), agg AS (
        SELECT owner, language, lexeme, sum(delta) AS delta FROM gone GROUP BY owner, language, lexeme
    )
    MERGE INTO lexical_df AS t
    USING agg AS s ON t.owner = s.owner AND t.lexeme = s.lexeme AND t.language = s.language
    WHEN MATCHED AND t.df + s.delta <= 0 THEN DELETE
    WHEN MATCHED THEN UPDATE SET df = t.df + s.delta
    WHEN NOT MATCHED AND s.delta > 0 THEN INSERT (owner, language, lexeme, df)
        VALUES (s.owner, s.language, s.lexeme, s.delta);
    GET DIAGNOSTICS moved = ROW_COUNT;
    WITH gone AS (
        DELETE FROM lexical_docs_delta RETURNING owner, language, n_docs, total_len
    ), agg AS (
        SELECT owner, language, sum(n_docs) AS n_docs, sum(total_len) AS total_len
        FROM gone GROUP BY owner, language
    )
    MERGE INTO lexical_docs AS t
    USING agg AS s ON t.owner = s.owner AND t.language = s.language
    WHEN MATCHED AND t.n_docs + s.n_docs <= 0 THEN DELETE
    WHEN MATCHED THEN UPDATE SET n_docs = t.n_docs + s.n_docs, total_len = t.total_len + s.total_len
    WHEN NOT MATCHED AND s.n_docs > 0 THEN INSERT VALUES (s.owner, s.language, s.n_docs, s.total_len);
    RETURN moved;
END
$$;
"""

# The two delta inserts, fed by a `changes` CTE of (owner, language, tsv, sign) rows.
_APPLY = """
    df AS (
        INSERT INTO lexical_df_delta (owner, language, lexeme, delta)
        SELECT c.owner, c.language, l.lexeme, sum(c.sign)
        FROM changes c CROSS JOIN LATERAL unnest(tsvector_to_array(c.tsv)) AS l(lexeme)
        GROUP BY c.owner, c.language, l.lexeme
        HAVING sum(c.sign) <> 0
    ), docs AS (
        INSERT INTO lexical_docs_delta (owner, language, n_docs, total_len)
        SELECT owner, language, sum(sign), sum(sign * length(tsv))
        FROM changes
        GROUP BY owner, language
        HAVING sum(sign) <> 0 OR sum(sign * length(tsv)) <> 0
    )
    SELECT count(*) INTO touched FROM changes;
"""

# One function for the three events: each trigger names only the transition tables
# its event has, and each branch reads only those. An UPDATE row whose language,
# text and liveness did not change (tags, metadata, a new vector) costs nothing.
_TRIGGER_FN = f"""
CREATE FUNCTION pgrecall_lexical_stats() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    touched bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        WITH changes AS MATERIALIZED (
            SELECT owner, language, tsv, 1 AS sign FROM new_rows WHERE deleted_at IS NULL
        ), {_APPLY}
    ELSIF TG_OP = 'DELETE' THEN
        WITH changes AS MATERIALIZED (
            SELECT owner, language, tsv, -1 AS sign FROM old_rows WHERE deleted_at IS NULL
        ), {_APPLY}
    ELSE
        WITH changes AS MATERIALIZED (
            SELECT o.owner, o.language, o.tsv, -1 AS sign FROM old_rows o
            WHERE o.deleted_at IS NULL AND NOT EXISTS (
                SELECT FROM new_rows n
                WHERE n.owner = o.owner AND n.id = o.id AND n.deleted_at IS NULL
                  AND n.language = o.language AND n.tsv = o.tsv)
            UNION ALL
            SELECT n.owner, n.language, n.tsv, 1 FROM new_rows n
            WHERE n.deleted_at IS NULL AND NOT EXISTS (
                SELECT FROM old_rows o
                WHERE o.owner = n.owner AND o.id = n.id AND o.deleted_at IS NULL
                  AND o.language = n.language AND o.tsv = n.tsv)
        ), {_APPLY}
    END IF;
    IF touched > 0 AND current_setting('transaction_isolation') = 'read committed'
       AND (touched >= 256 OR nextval('lexical_stats_tick') % 64 = 0) THEN
        PERFORM pgrecall_lexical_compact();
    END IF;
    RETURN NULL;
END
$$;
"""

_TRIGGERS = """
CREATE TRIGGER entries_lexical_stats_ins AFTER INSERT ON entries
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION pgrecall_lexical_stats();
CREATE TRIGGER entries_lexical_stats_upd AFTER UPDATE ON entries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pgrecall_lexical_stats();
CREATE TRIGGER entries_lexical_stats_del AFTER DELETE ON entries
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION pgrecall_lexical_stats();
CREATE FUNCTION pgrecall_lexical_stats_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE lexical_df, lexical_df_delta, lexical_docs, lexical_docs_delta;
    RETURN NULL;
END
$$;
CREATE TRIGGER entries_lexical_stats_truncate AFTER TRUNCATE ON entries
    FOR EACH STATEMENT EXECUTE FUNCTION pgrecall_lexical_stats_truncate();
"""

# Rows that existed before this revision: counted under the lock the triggers'
# creation already holds, so no write can slip between the backfill and the triggers.
_BACKFILL = """
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
    op.execute("LOCK TABLE entries IN SHARE ROW EXCLUSIVE MODE")
    # Keep tsv in the heap row (compressed if need be): the search reads it for every
    # lexical candidate, and a TOAST fetch costs ~2 µs each time. The vector, read
    # only for the few vector hits, is moved out of line first. Rows written from now
    # on; older rows move when rewritten.
    op.execute("ALTER TABLE entries ALTER COLUMN tsv SET STORAGE MAIN")
    op.execute(_TABLES)
    op.execute(_COMPACT)
    op.execute(_TRIGGER_FN)
    op.execute(_TRIGGERS)
    op.execute(_BACKFILL)


def downgrade() -> None:
    op.execute("ALTER TABLE entries ALTER COLUMN tsv SET STORAGE EXTENDED")
    op.execute("DROP TRIGGER entries_lexical_stats_truncate ON entries")
    op.execute("DROP TRIGGER entries_lexical_stats_del ON entries")
    op.execute("DROP TRIGGER entries_lexical_stats_upd ON entries")
    op.execute("DROP TRIGGER entries_lexical_stats_ins ON entries")
    op.execute("DROP FUNCTION pgrecall_lexical_stats_truncate()")
    op.execute("DROP FUNCTION pgrecall_lexical_stats()")
    op.execute("DROP FUNCTION pgrecall_lexical_compact()")
    op.execute("DROP SEQUENCE lexical_stats_tick")
    op.execute("DROP TABLE lexical_docs_delta, lexical_docs, lexical_df_delta, lexical_df")
