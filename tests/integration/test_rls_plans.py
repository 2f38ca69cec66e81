"""Row-level security must not cost the text and tag indexes their use (LEAKPROOF operators)."""

from __future__ import annotations

import psycopg

from pgrecall.db.database import APP_ROLE

QUERIES = {
    "entries_tsv_gin": "SELECT id FROM entries WHERE tsv @@ to_tsquery('english', 'harbour')",
    "entries_tags_gin": "SELECT id FROM entries WHERE tags @> ARRAY['t7']",
}


def test_gin_indexes_serve_the_restricted_role(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        conn.execute(
            """
            INSERT INTO entries (owner, body, tags, language, content_hash)
            SELECT CASE WHEN i % 2 = 0 THEN 'alice' ELSE 'bob' END,
                   'note ' || i || CASE WHEN i % 97 = 0 THEN ' about the harbour' ELSE '' END,
                   ARRAY['t' || (i % 50)], 'english', 'sha256:' || repeat('0', 64)
            FROM generate_series(1, 4000) AS i
            """
        )
        # Leave the planner only two ways in: a sequential scan (disabled below) or the GIN
        # index, which it may use under the policy only if the operator is LEAKPROOF.
        for index in (
            "entries_owner_created",
            "entries_owner_kind",
            "entries_owner_source",
            "entries_owner_hash",
            "entries_pending",
            "entries_pkey",
        ):
            if index == "entries_pkey":
                conn.execute("ALTER TABLE entries DROP CONSTRAINT entries_pkey")
            else:
                conn.execute(f"DROP INDEX {index}")
        conn.execute("ANALYZE entries")
        conn.commit()
        conn.execute(f"SET ROLE {APP_ROLE}")
        conn.execute("SELECT set_config('pgrecall.owner', 'alice', false)")
        conn.execute("SET enable_seqscan = off")
        for index, query in QUERIES.items():
            plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {query}").fetchall())
            assert index in plan, plan
        hits = conn.execute(QUERIES["entries_tsv_gin"]).fetchall()
        assert len(hits) == len([i for i in range(1, 4001) if i % 97 == 0 and i % 2 == 0])
