"""tag filters: text[]-only LEAKPROOF operators instead of marking arraycontains/arrayoverlap

Revision ID: 0006_narrow_tag_operators
Revises: 0005_row_level_security
Create Date: 2026-11-23

Migration 0005 marked pg_catalog.arraycontains and arrayoverlap LEAKPROOF so that the tag
GIN index serves `tags @> …` / `tags && …` under row-level security. Those functions are
polymorphic: they call the element type's equality, which for a custom element type (any
type in this database, also other applications') may raise an error that shows the value,
so the mark was unsound for every array type but ours. This revision unmarks them and
gives the tag filters their own operators `|@>` and `|&&`, defined for text[] only
(text equality, texteq, is LEAKPROOF in core), with a GIN operator class that indexes
entries.tags for both them and the core operators. The store's SQL uses the new operators.

Creating a LANGUAGE internal function, marking it LEAKPROOF and creating an operator class
all need a superuser (always the case on the embedded database). Run by another role the
operators are plain SQL functions over the core ones: results are the same, and under
row-level security the tag filters are applied after the policy instead of through the
index, as before this revision on such a database.
"""

from alembic import op

revision = "0006_narrow_tag_operators"
down_revision = "0005_row_level_security"
branch_labels = None
depends_on = None

ROLE = "pgrecall_app"
BROAD = ("arraycontains(anyarray, anyarray)", "arrayoverlap(anyarray, anyarray)")
# (function, core function it runs, operator, commutator)
OPERATORS = (
    ("pgrecall_tags_contain", "arraycontains", "|@>", None),
    ("pgrecall_tags_overlap", "arrayoverlap", "|&&", "|&&"),
)
OPCLASS = "pgrecall_tags_ops"

# The core GIN array support functions, shared by pg_catalog.array_ops: one index answers
# the narrow operators (the server, under the policy) and the core ones (operator queries).
_OPCLASS_SQL = f"""
CREATE OPERATOR CLASS {OPCLASS} FOR TYPE text[] USING gin AS
    OPERATOR 1 |&& (text[], text[]),
    OPERATOR 2 |@> (text[], text[]),
    OPERATOR 1 pg_catalog.&& (anyarray, anyarray),
    OPERATOR 2 pg_catalog.@> (anyarray, anyarray),
    FUNCTION 2 pg_catalog.ginarrayextract(anyarray, internal, internal),
    FUNCTION 3 pg_catalog.ginqueryarrayextract(anyarray, internal, smallint, internal, internal, internal,
                                               internal),
    FUNCTION 4 pg_catalog.ginarrayconsistent(internal, smallint, anyarray, integer, internal, internal,
                                             internal, internal),
    FUNCTION 6 pg_catalog.ginarraytriconsistent(internal, smallint, anyarray, integer, internal, internal,
                                                internal),
    STORAGE text
"""


def _quoted(sql: str) -> str:
    return "'" + sql.replace("'", "''") + "'"


def _superuser_sql() -> list[str]:
    statements = []
    for fn, core, _, _ in OPERATORS:
        statements.append(
            f"CREATE FUNCTION {fn}(text[], text[]) RETURNS boolean LANGUAGE internal "
            f"IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF AS '{core}'"
        )
    statements += _operator_sql()
    statements.append(_OPCLASS_SQL)
    statements.append("DROP INDEX entries_tags_gin")
    statements.append(f"CREATE INDEX entries_tags_gin ON entries USING gin (tags {OPCLASS})")
    statements += [f"ALTER FUNCTION pg_catalog.{fn} NOT LEAKPROOF" for fn in BROAD]
    return statements


def _fallback_sql() -> list[str]:
    # SQL-language bodies are inlined into the core operator, so the core GIN index still
    # serves queries that no policy restricts (the operator's role).
    statements = [
        f"CREATE FUNCTION {fn}(a text[], b text[]) RETURNS boolean LANGUAGE sql "
        f"IMMUTABLE STRICT PARALLEL SAFE RETURN a OPERATOR(pg_catalog.{op_[1:]}) b"
        for fn, _, op_, _ in OPERATORS
    ]
    return statements + _operator_sql()


def _operator_sql() -> list[str]:
    # matchingsel: arraycontsel, the core operators' estimator, refuses other operators.
    statements = []
    for fn, _, name, commutator in OPERATORS:
        extra = f", COMMUTATOR = {name}" if commutator else ""
        statements.append(
            f"CREATE OPERATOR {name} (LEFTARG = text[], RIGHTARG = text[], FUNCTION = {fn}, "
            f"RESTRICT = matchingsel, JOIN = matchingjoinsel{extra})"
        )
        statements.append(f"GRANT EXECUTE ON FUNCTION {fn}(text[], text[]) TO {ROLE}")
    return statements


def upgrade() -> None:
    superuser = " ".join(f"EXECUTE {_quoted(s)};" for s in _superuser_sql())
    fallback = " ".join(f"EXECUTE {_quoted(s)};" for s in _fallback_sql())
    op.execute(
        f"""
        DO $$
        BEGIN
            IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
                {superuser}
            ELSE
                {fallback}
                RAISE NOTICE 'not a superuser: the tag operators |@> and |&& are plain SQL, so under '
                             'row-level security tag filters cannot use the GIN index; a superuser can '
                             'run `pgrecall migrate downgrade 0005_row_level_security` and `upgrade head`';
            END IF;
        END
        $$
        """
    )


def downgrade() -> None:
    restore = " ".join(f"EXECUTE 'ALTER FUNCTION pg_catalog.{fn} LEAKPROOF';" for fn in BROAD)
    op.execute(
        f"""
        DO $$
        BEGIN
            IF EXISTS (SELECT 1 FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
                       WHERE c.opcname = '{OPCLASS}' AND a.amname = 'gin'
                         AND c.opcnamespace = current_schema()::regnamespace) THEN
                DROP INDEX entries_tags_gin;
                CREATE INDEX entries_tags_gin ON entries USING gin (tags);
                DROP OPERATOR FAMILY {OPCLASS} USING gin;
            END IF;
            IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
                {restore}
            END IF;
        END
        $$
        """
    )
    for fn, _, name, _ in OPERATORS:
        op.execute(f"DROP OPERATOR {name} (text[], text[])")
        op.execute(f"DROP FUNCTION {fn}(text[], text[])")
