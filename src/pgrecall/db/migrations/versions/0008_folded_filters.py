"""folded filters: tags, kind and source match whatever their case; source prefixes

Revision ID: 0008_folded_filters
Revises: 0007_detected_language
Create Date: 2026-11-25

Entries keep their tags, kind and source as written; the filters compare lower-case forms, so
`tags=["Postgres"]` finds an entry tagged "postgres" and `kind="Decision"` one of kind
"decision". The folded tags are a stored generated column: the tag filters stay plain
`|@>` / `|&&` on a column (LEAKPROOF, migration 0006), so under row-level security the GIN
index still serves them. kind and source are folded in the filter itself (lower() is not
LEAKPROOF, so under the policy these filters apply after the owner's rows are found, as
other non-indexed filters do); the expression indexes serve the operator's queries.

lower() follows the database's LC_CTYPE: the embedded database is C.UTF-8, which folds every
Unicode letter; a database created with LC_CTYPE C folds ASCII letters only.
"""

from alembic import op

revision = "0008_folded_filters"
down_revision = "0007_detected_language"
branch_labels = None
depends_on = None

ROLE = "pgrecall_app"
OPCLASS = "pgrecall_tags_ops"


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION pgrecall_fold_tags(tags text[]) RETURNS text[]
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN ARRAY(SELECT lower(t) FROM unnest(tags) AS t)
        """
    )
    op.execute(f"GRANT EXECUTE ON FUNCTION pgrecall_fold_tags(text[]) TO {ROLE}")
    op.execute(
        "ALTER TABLE entries ADD COLUMN tags_folded text[] "
        "GENERATED ALWAYS AS (pgrecall_fold_tags(tags)) STORED"
    )
    # The narrow operator class exists where 0006 ran as a superuser; elsewhere the core one.
    op.execute(
        f"""
        DO $$
        BEGIN
            IF EXISTS (SELECT 1 FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
                       WHERE c.opcname = '{OPCLASS}' AND a.amname = 'gin'
                         AND c.opcnamespace = current_schema()::regnamespace) THEN
                CREATE INDEX entries_tags_folded_gin ON entries USING gin (tags_folded {OPCLASS});
            ELSE
                CREATE INDEX entries_tags_folded_gin ON entries USING gin (tags_folded);
            END IF;
        END
        $$
        """
    )
    op.execute("CREATE INDEX entries_owner_kind_folded ON entries (owner, lower(kind))")
    op.execute("CREATE INDEX entries_owner_source_folded ON entries (owner, lower(source) text_pattern_ops)")


def downgrade() -> None:
    op.execute("DROP INDEX entries_owner_source_folded")
    op.execute("DROP INDEX entries_owner_kind_folded")
    op.execute("ALTER TABLE entries DROP COLUMN tags_folded")
    op.execute("DROP FUNCTION pgrecall_fold_tags(text[])")
