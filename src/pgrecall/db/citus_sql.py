"""SQL of `pgrecall migrate citus`: the Citus-safe forms of the statistics functions, and the steps.

Citus plans every statement inside a function as a distributed query, so the single-node forms of
migration 0002 fail there: a statement that reads a transition table and writes a distributed table
("could not find named tuplestore"), a MERGE fed by a modifying CTE, a sequence only the
coordinator has, a TRUNCATE of distributed tables from each shard's trigger (deadlocks across
nodes). These forms read the transition tables into arrays first, then write from the arrays;
merge one owner's deltas at a time (every statement routes to that owner's shard); tick with
random() instead of a sequence; and truncate the statistics once, from the coordinator's table.
They are correct on a single server too (`migrate citus --undo` leaves them in place).
"""

# One owner's deltas merged into the base tables; the per-owner try-lock keeps one merger per owner.
COMPACT_OWNER = """
CREATE OR REPLACE FUNCTION pgrecall_lexical_compact_owner(p_owner text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    lexemes text[]; languages regconfig[]; deltas bigint[];
    doc_languages regconfig[]; doc_counts bigint[]; doc_lengths bigint[];
    moved bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended('pgrecall_lexical_compact:' || p_owner, 0)) THEN
        RETURN 0;
    END IF;
    WITH gone AS (
        DELETE FROM lexical_df_delta WHERE owner = p_owner RETURNING language, lexeme, delta
    )
    SELECT array_agg(a.lexeme), array_agg(a.language), array_agg(a.delta)
    INTO lexemes, languages, deltas
    FROM (SELECT language, lexeme, sum(delta)::bigint AS delta FROM gone GROUP BY language, lexeme) AS a;
    moved := coalesce(cardinality(lexemes), 0);
    IF moved > 0 THEN
        INSERT INTO lexical_df AS t (owner, language, lexeme, df)
        SELECT p_owner, u.language, u.lexeme, u.delta
        FROM unnest(languages, lexemes, deltas) AS u(language, lexeme, delta)
        WHERE u.delta <> 0
        ON CONFLICT (owner, lexeme, language) DO UPDATE SET df = t.df + EXCLUDED.df;
        DELETE FROM lexical_df WHERE owner = p_owner AND lexeme = ANY (lexemes) AND df <= 0;
    END IF;
    WITH gone AS (
        DELETE FROM lexical_docs_delta WHERE owner = p_owner RETURNING language, n_docs, total_len
    )
    SELECT array_agg(a.language), array_agg(a.n_docs), array_agg(a.total_len)
    INTO doc_languages, doc_counts, doc_lengths
    FROM (SELECT language, sum(n_docs)::bigint AS n_docs, sum(total_len)::bigint AS total_len
          FROM gone GROUP BY language) AS a;
    IF doc_languages IS NOT NULL THEN
        INSERT INTO lexical_docs AS t (owner, language, n_docs, total_len)
        SELECT p_owner, u.language, u.n_docs, u.total_len
        FROM unnest(doc_languages, doc_counts, doc_lengths) AS u(language, n_docs, total_len)
        ON CONFLICT (owner, language)
        DO UPDATE SET n_docs = t.n_docs + EXCLUDED.n_docs, total_len = t.total_len + EXCLUDED.total_len;
        DELETE FROM lexical_docs WHERE owner = p_owner AND language = ANY (doc_languages) AND n_docs <= 0;
    END IF;
    RETURN moved;
END
$$
"""

# Every owner's deltas (operators, tests): owner by owner.
COMPACT_ALL = """
CREATE OR REPLACE FUNCTION pgrecall_lexical_compact() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    moved bigint := 0;
    one text;
BEGIN
    FOR one IN SELECT owner FROM lexical_df_delta UNION SELECT owner FROM lexical_docs_delta LOOP
        moved := moved + pgrecall_lexical_compact_owner(one);
    END LOOP;
    RETURN moved;
END
$$
"""

# The statement trigger of 0002 in two steps: changes into arrays (a local read of the transition
# tables), then the delta inserts from the arrays. Every 64th writing statement on average
# (random, as a sequence exists on the coordinator only), or one of 256+ rows, merges the owners it touched.
STATS_TRIGGER = """
CREATE OR REPLACE FUNCTION pgrecall_lexical_stats() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    owners text[]; languages regconfig[]; tsvs tsvector[]; signs integer[];
    one text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(owner), array_agg(language), array_agg(tsv), array_agg(1)
        INTO owners, languages, tsvs, signs FROM new_rows WHERE deleted_at IS NULL;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(owner), array_agg(language), array_agg(tsv), array_agg(-1)
        INTO owners, languages, tsvs, signs FROM old_rows WHERE deleted_at IS NULL;
    ELSE
        SELECT array_agg(c.owner), array_agg(c.language), array_agg(c.tsv), array_agg(c.sign)
        INTO owners, languages, tsvs, signs
        FROM (
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
        ) AS c;
    END IF;
    IF owners IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO lexical_df_delta (owner, language, lexeme, delta)
    SELECT c.owner, c.language, l.lexeme, sum(c.sign)
    FROM unnest(owners, languages, tsvs, signs) AS c(owner, language, tsv, sign)
    CROSS JOIN LATERAL unnest(tsvector_to_array(c.tsv)) AS l(lexeme)
    GROUP BY c.owner, c.language, l.lexeme
    HAVING sum(c.sign) <> 0;
    INSERT INTO lexical_docs_delta (owner, language, n_docs, total_len)
    SELECT c.owner, c.language, sum(c.sign), sum(c.sign * length(c.tsv))
    FROM unnest(owners, languages, tsvs, signs) AS c(owner, language, tsv, sign)
    GROUP BY c.owner, c.language
    HAVING sum(c.sign) <> 0 OR sum(c.sign * length(c.tsv)) <> 0;
    IF current_setting('transaction_isolation') = 'read committed'
       AND (cardinality(owners) >= 256 OR random() < 1.0 / 64) THEN
        FOR one IN SELECT DISTINCT u FROM unnest(owners) AS u LOOP
            PERFORM pgrecall_lexical_compact_owner(one);
        END LOOP;
    END IF;
    RETURN NULL;
END
$$
"""

# Fires for the coordinator's table and for each shard on the workers: only the former truncates
# (the statistics of every shard at once), the shards' copies do nothing.
TRUNCATE_TRIGGER = """
CREATE OR REPLACE FUNCTION pgrecall_lexical_stats_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'entries' THEN
        TRUNCATE lexical_df, lexical_df_delta, lexical_docs, lexical_docs_delta;
    END IF;
    RETURN NULL;
END
$$
"""

# Migration 0012's pgrecall_set_local, carrying the setting that makes Citus forward its SET LOCAL
# to the workers. `migrate citus` also sets it for the database, but only sessions opened after
# that read it: a session of a server left running through the migration would SET LOCAL the owner
# on the coordinator alone, and the workers' row-level security would see no owner (silently empty
# results). Set per transaction here, it no longer depends on when the session was opened.
SET_LOCAL = """
CREATE OR REPLACE FUNCTION pgrecall_set_local(setting text, value text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF setting NOT IN ('pgrecall.owner', 'hnsw.ef_search', 'hnsw.iterative_scan', 'hnsw.max_scan_tuples',
                       'plan_cache_mode', 'statement_timeout') THEN
        RAISE EXCEPTION 'pgrecall_set_local: % is not a setting pgrecall sets', setting;
    END IF;
    IF current_setting('citus.propagate_set_commands', true) IS DISTINCT FROM 'local' THEN
        SET LOCAL citus.propagate_set_commands = 'local';
    END IF;
    EXECUTE format('SET LOCAL %s = %L', setting, value);
    RETURN value;
END
$$
"""

SQL_CITUS_VERSION = "SELECT citus_version() AS version"
SQL_HAS_CITUS = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') AS citus"
SQL_DISTRIBUTED = "SELECT logicalrelid::text AS name FROM pg_dist_partition"
SQL_WORKERS = "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 AND isactive ORDER BY nodeid"

# Every later session of this database forwards SET LOCAL (the owner, the HNSW knobs) to the
# workers of its transaction; this session too.
SQL_PROPAGATE_SET = """
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET citus.propagate_set_commands = %L', current_database(), 'local');
END
$$
"""
SQL_SESSION_SETTINGS = (
    "SET citus.propagate_set_commands = 'local'",
    # The statistics triggers on entries are statement triggers with transition tables.
    "SET citus.enable_unsafe_triggers = on",
)

# Run on each worker (run_command_on_workers, as the operator): what Citus does not copy there.
# Citus connects to the workers as the role of the session, and the server's role is
# pgrecall_app: it must be able to log in on the workers (not on the coordinator). The tag
# operator class of migration 0006 is a kind of object Citus cannot copy; ts_match_vq's
# LEAKPROOF mark (migration 0005) lets the workers' planner use the GIN index under the policy.
# Each step only where it is not done yet: a step done before (by a provider's superuser on a managed
# service) needs no privilege again.
WORKER_APP_LOGIN = """
DO $$
BEGIN
    SET LOCAL citus.enable_ddl_propagation TO off;
    IF NOT (SELECT rolcanlogin FROM pg_roles WHERE rolname = 'pgrecall_app') THEN
        ALTER ROLE pgrecall_app LOGIN;
    END IF;
END
$$
"""
WORKER_LEAKPROOF = """
DO $$
BEGIN
    SET LOCAL citus.enable_ddl_propagation TO off;
    IF NOT (SELECT proleakproof FROM pg_proc
            WHERE oid = 'pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure) THEN
        ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
    END IF;
END
$$
"""
WORKER_STATEMENTS = (WORKER_APP_LOGIN, WORKER_LEAKPROOF)
WORKER_TAG_OPERATORS = """
DO $$
BEGIN
    SET LOCAL citus.enable_ddl_propagation TO off;
    IF NOT EXISTS (SELECT FROM pg_proc WHERE proname = 'pgrecall_tags_contain') THEN
        CREATE FUNCTION pgrecall_tags_contain(text[], text[]) RETURNS boolean LANGUAGE internal
            IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF AS 'arraycontains';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_proc WHERE proname = 'pgrecall_tags_overlap') THEN
        CREATE FUNCTION pgrecall_tags_overlap(text[], text[]) RETURNS boolean LANGUAGE internal
            IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF AS 'arrayoverlap';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_operator WHERE oprname = '|@>') THEN
        CREATE OPERATOR |@> (LEFTARG = text[], RIGHTARG = text[], FUNCTION = pgrecall_tags_contain,
                             RESTRICT = matchingsel, JOIN = matchingjoinsel);
    END IF;
    IF NOT EXISTS (SELECT FROM pg_operator WHERE oprname = '|&&') THEN
        CREATE OPERATOR |&& (LEFTARG = text[], RIGHTARG = text[], FUNCTION = pgrecall_tags_overlap,
                             RESTRICT = matchingsel, JOIN = matchingjoinsel, COMMUTATOR = |&&);
    END IF;
    IF NOT has_function_privilege('pgrecall_app', 'pgrecall_tags_contain(text[], text[])', 'EXECUTE') THEN
        GRANT EXECUTE ON FUNCTION pgrecall_tags_contain(text[], text[]) TO pgrecall_app;
    END IF;
    IF NOT has_function_privilege('pgrecall_app', 'pgrecall_tags_overlap(text[], text[])', 'EXECUTE') THEN
        GRANT EXECUTE ON FUNCTION pgrecall_tags_overlap(text[], text[]) TO pgrecall_app;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_opclass WHERE opcname = 'pgrecall_tags_ops') THEN
        CREATE OPERATOR CLASS pgrecall_tags_ops FOR TYPE text[] USING gin AS
            OPERATOR 1 |&& (text[], text[]),
            OPERATOR 2 |@> (text[], text[]),
            OPERATOR 1 pg_catalog.&& (anyarray, anyarray),
            OPERATOR 2 pg_catalog.@> (anyarray, anyarray),
            FUNCTION 2 pg_catalog.ginarrayextract(anyarray, internal, internal),
            FUNCTION 3 pg_catalog.ginqueryarrayextract(anyarray, internal, smallint, internal, internal,
                                                       internal, internal),
            FUNCTION 4 pg_catalog.ginarrayconsistent(internal, smallint, anyarray, integer, internal,
                                                     internal, internal, internal),
            FUNCTION 6 pg_catalog.ginarraytriconsistent(internal, smallint, anyarray, integer, internal,
                                                        internal, internal),
            STORAGE text;
    END IF;
END
$$
"""
SQL_ON_WORKERS = "SELECT nodename, nodeport, success, result FROM run_command_on_workers(%s)"

# A node about to be added (`migrate citus --prepare-node URL`, run on the node itself): adding it
# copies every distributed table's definition there, and that of entries names the tag operator
# class, which must exist first. pgrecall_app comes over with the other roles when it is added.
PREPARE_NODE = (
    "CREATE EXTENSION IF NOT EXISTS citus",
    "CREATE EXTENSION IF NOT EXISTS vector",
    """
    DO $$
    BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'pgrecall_app') THEN
            SET LOCAL citus.enable_ddl_propagation TO off;
            CREATE ROLE pgrecall_app NOLOGIN;
        END IF;
    END
    $$
    """,
)

# Indexes that use the tag operator class: Citus refuses to distribute a table (or to create an
# index on one) that depends on an operator class, so they are dropped before and made again
# after, with the dependency check off (the class exists on every worker by then).
TAG_INDEXES = (
    ("entries_tags_gin", "tags"),
    ("entries_tags_folded_gin", "tags_folded"),
)
SQL_INDEX_EXISTS = "SELECT to_regclass(%s) IS NOT NULL AS present"
SQL_INDEX_OPCLASS = """
SELECT EXISTS (SELECT FROM pg_index i JOIN pg_opclass c ON c.oid = ANY (i.indclass)
               WHERE i.indexrelid = to_regclass(%s) AND c.opcname = 'pgrecall_tags_ops') AS ours
"""
SQL_TAGS_OPCLASS_EXISTS = (
    "SELECT EXISTS (SELECT FROM pg_opclass WHERE opcname = 'pgrecall_tags_ops') AS present"
)

# Owner-scoped tables in one co-location group by owner. The statistics tables go first: moving
# the rows of a populated `entries` into its shards fires the statistics triggers there, which
# write to the statistics tables (counted twice, so rebuilt after).
DISTRIBUTED_TABLES = ("lexical_df", "lexical_df_delta", "lexical_docs", "lexical_docs_delta", "documents",
                      "entries", "entry_links")  # fmt: skip
REFERENCE_TABLES = ("api_tokens",)
SQL_DISTRIBUTE_FIRST = "SELECT create_distributed_table('lexical_df', 'owner')"
SQL_DISTRIBUTE = "SELECT create_distributed_table(%s, 'owner', colocate_with => 'lexical_df')"
SQL_REFERENCE = "SELECT create_reference_table(%s)"
# Moving a shard (citus_rebalance_start) copies it by logical replication, which needs a replica
# identity; the insert-only delta tables have no key, so the whole row is their identity.
REPLICA_IDENTITY = (
    "ALTER TABLE lexical_df_delta REPLICA IDENTITY FULL",
    "ALTER TABLE lexical_docs_delta REPLICA IDENTITY FULL",
)
SQL_UNDISTRIBUTE = "SELECT undistribute_table(%s, cascade_via_foreign_keys => true)"

# Distributing a populated table copies its rows, which the statistics triggers count again:
# rebuilt from the entries themselves (the same counts as migration 0002's backfill), a batch of
# owners per transaction (one, from `migrate citus`) instead of under one lock over all of them.
# Each batch runs in REPEATABLE READ: its deletes and its recount read one snapshot, so a write
# committed after it keeps its delta rows (not deleted, not recounted) and one committed before
# is counted once; a merge that touches the same rows meanwhile makes the batch fail with a
# serialization error, and it is run again. Searches and writes of every owner go on throughout.
SQL_STATISTICS_OWNERS = """
SELECT owner FROM entries UNION SELECT owner FROM lexical_docs UNION SELECT owner FROM lexical_docs_delta
UNION SELECT owner FROM lexical_df UNION SELECT owner FROM lexical_df_delta
"""
REBUILD_OWNERS = (
    "DELETE FROM lexical_df WHERE owner = ANY (%(owners)s)",
    "DELETE FROM lexical_df_delta WHERE owner = ANY (%(owners)s)",
    "DELETE FROM lexical_docs WHERE owner = ANY (%(owners)s)",
    "DELETE FROM lexical_docs_delta WHERE owner = ANY (%(owners)s)",
    """
    INSERT INTO lexical_df (owner, language, lexeme, df)
    SELECT e.owner, e.language, l.lexeme, count(*)
    FROM entries e CROSS JOIN LATERAL unnest(tsvector_to_array(e.tsv)) AS l(lexeme)
    WHERE e.deleted_at IS NULL AND e.owner = ANY (%(owners)s)
    GROUP BY e.owner, e.language, l.lexeme
    """,
    """
    INSERT INTO lexical_docs (owner, language, n_docs, total_len)
    SELECT owner, language, count(*), sum(length(tsv))
    FROM entries WHERE deleted_at IS NULL AND owner = ANY (%(owners)s)
    GROUP BY owner, language
    """,
)

# The lexical statistics as kept (base + deltas) against a recount from the live entries: how many
# (owner, language, lexeme) and (owner, language) rows differ. Zero on a healthy store, single
# server or cluster (benchmarks/citus_check.py and tests/integration/test_citus.py read it).
SQL_STATISTICS_DRIFT = """
WITH truth AS (
    SELECT e.owner, e.language::text AS language, l.lexeme, count(*) AS df
    FROM entries e CROSS JOIN LATERAL unnest(tsvector_to_array(e.tsv)) AS l(lexeme)
    WHERE e.deleted_at IS NULL GROUP BY 1, 2, 3
), kept AS (
    SELECT owner, language::text AS language, lexeme, sum(df) AS df FROM (
        SELECT owner, language, lexeme, df FROM lexical_df
        UNION ALL SELECT owner, language, lexeme, delta FROM lexical_df_delta) AS s
    GROUP BY 1, 2, 3 HAVING sum(df) <> 0
)
SELECT (SELECT count(*) FROM truth FULL JOIN kept USING (owner, language, lexeme)
        WHERE truth.df IS DISTINCT FROM kept.df) AS df_wrong,
       (SELECT count(*) FROM (
            SELECT owner, language::text, count(*) AS n, sum(length(tsv)) AS len FROM entries
            WHERE deleted_at IS NULL GROUP BY 1, 2) AS t
        FULL JOIN (
            SELECT owner, language::text, sum(n_docs) AS n, sum(total_len) AS len FROM (
                SELECT owner, language, n_docs, total_len FROM lexical_docs
                UNION ALL SELECT owner, language, n_docs, total_len FROM lexical_docs_delta) AS s
            GROUP BY 1, 2 HAVING sum(n_docs) <> 0) AS k USING (owner, language)
        WHERE t.n IS DISTINCT FROM k.n OR t.len IS DISTINCT FROM k.len) AS docs_wrong,
       (SELECT count(*) FROM entries WHERE deleted_at IS NULL) AS live
"""
