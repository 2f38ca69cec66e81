"""row-level security: owner isolation inside PostgreSQL

Revision ID: 0005_row_level_security
Revises: 0004_api_tokens
Create Date: 2026-11-22

The MCP server runs its statements as the NOLOGIN role pgrecall_app (SET ROLE right after
connecting). For that role every owner-scoped table has a FORCE'd policy
`owner = current_setting('pgrecall.owner', true)`, a setting each transaction makes local
to itself, so a statement that forgot `WHERE owner = …` still sees and touches only its
owner's rows. The role that ran this migration (the operator: migrations, export/import,
reembed across owners) keeps a policy that sees everything. api_tokens is not owner-scoped
data but authentication configuration: the server role may read it and stamp last_used_at,
never insert or delete (tokens are made with the CLI).
"""

from alembic import op

revision = "0005_row_level_security"
down_revision = "0004_api_tokens"
branch_labels = None
depends_on = None

# Operators the search uses inside the policy-filtered tables. Without LEAKPROOF the planner
# must check the policy before them, so it cannot use the GIN indexes (tsv @@, tags @> / &&):
# a search at 100k entries went from 16 ms to 190 ms. They reveal nothing about their
# arguments through errors. Only a superuser may mark them; elsewhere search stays correct, slower.
LEAKPROOF = (
    "ts_match_vq(tsvector, tsquery)",
    "arraycontains(anyarray, anyarray)",
    "arrayoverlap(anyarray, anyarray)",
)

OWNER_TABLES = ("entries", "lexical_df", "lexical_df_delta", "lexical_docs", "lexical_docs_delta")
ROLE = "pgrecall_app"


def upgrade() -> None:
    op.execute(
        f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}') THEN
                CREATE ROLE {ROLE} NOLOGIN;
            END IF;
        END
        $$
        """
    )
    # The operator's login role must be able to SET ROLE to it (it already can as superuser).
    op.execute(
        f"""
        DO $$
        BEGIN
            IF NOT pg_has_role(current_user, '{ROLE}', 'MEMBER') THEN
                EXECUTE format('GRANT {ROLE} TO %I', current_user);
            END IF;
        END
        $$
        """
    )
    op.execute(f"GRANT USAGE ON SCHEMA public TO {ROLE}")
    op.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {ROLE}")
    op.execute(f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO {ROLE}")
    op.execute(f"GRANT SELECT ON alembic_version TO {ROLE}")
    op.execute(f"GRANT SELECT, UPDATE (last_used_at) ON api_tokens TO {ROLE}")
    for table in OWNER_TABLES:
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {ROLE}")
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY {table}_owner_isolation ON {table} TO {ROLE} "
            "USING (owner = current_setting('pgrecall.owner', true)) "
            "WITH CHECK (owner = current_setting('pgrecall.owner', true))"
        )
        op.execute(
            f"CREATE POLICY {table}_operator ON {table} TO CURRENT_USER USING (true) WITH CHECK (true)"
        )
    _set_leakproof("LEAKPROOF")


def _set_leakproof(flag: str) -> None:
    executes = " ".join(f"EXECUTE 'ALTER FUNCTION pg_catalog.{fn} {flag}';" for fn in LEAKPROOF)
    op.execute(
        f"""
        DO $$
        BEGIN
            IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
                {executes}
            ELSE
                RAISE NOTICE 'not a superuser: under row-level security the text and tag filters cannot '
                             'use their GIN indexes until a superuser marks {", ".join(LEAKPROOF)} {flag}';
            END IF;
        END
        $$
        """
    )


def downgrade() -> None:
    _set_leakproof("NOT LEAKPROOF")
    for table in OWNER_TABLES:
        op.execute(f"DROP POLICY {table}_operator ON {table}")
        op.execute(f"DROP POLICY {table}_owner_isolation ON {table}")
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
        op.execute(f"REVOKE ALL ON {table} FROM {ROLE}")
    op.execute(f"REVOKE ALL ON api_tokens FROM {ROLE}")
    op.execute(f"REVOKE ALL ON alembic_version FROM {ROLE}")
    op.execute(f"REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM {ROLE}")
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {ROLE}")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {ROLE}")
    # The role itself stays: it is cluster-wide and other databases of this cluster may use it.
