"""Chinese, Japanese and Korean runs indexed as overlapping character bigrams

Revision ID: 0017_cjk_bigrams
Revises: 0016_id_tail_index
Create Date: 2026-11-27

PostgreSQL's parser splits words at spaces and punctuation, so an unspaced Chinese or Japanese
sentence became one token and a word inside it was never matched; Korean particles glued to a noun
(데이터베이스를) hid the noun the same way. The rule of Lucene's CJKAnalyzer fixes this without a
dictionary: every run of Han, kana and Hangul becomes its overlapping bigrams (a lone character
stays a unigram), everything else is left as it was. pgrecall_cjk_bigrams() rewrites a text that
way, before the entry's own regconfig parses it, in the generated `tsv`; the search statement
rewrites the query with the same function, whatever its language, so a Latin word inside Japanese
("PostgreSQLです") and the Japanese word beside it both become tokens on both sides.

A text without any of those characters is returned unchanged (one regex test), so every other
entry keeps the exact tsv it had. Texts with them are also NFKC-folded first, as CJKAnalyzer folds
widths: full-width Latin letters and digits, half-width kana.

Changing the generated expression rewrites the table, which fires no row or statement trigger: the
lexical statistics (migration 0002) are rebuilt from the new tsv under the same lock.
"""

from alembic import op

revision = "0017_cjk_bigrams"
down_revision = "0016_id_tail_index"
branch_labels = None
depends_on = None

ROLE = "pgrecall_app"

# Han (with iteration marks 々〆〇), hiragana, katakana (and half-width), Hangul syllables and jamo.
_CJK = (
    r"\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    r"\uff66-\uff9f\U00020000-\U0003134f\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af"
)

_FUNCTION = f"""
CREATE FUNCTION pgrecall_cjk_bigrams(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN t !~ '[{_CJK}]' THEN t ELSE (
    SELECT string_agg(
        CASE WHEN m.run !~ '^[{_CJK}]' OR length(m.run) = 1 THEN m.run
             ELSE (SELECT string_agg(substr(m.run, i, 2), ' ' ORDER BY i)
                   FROM generate_series(1, length(m.run) - 1) AS i)
        END, ' ' ORDER BY m.n)
    FROM regexp_matches(normalize(t, NFKC), '[{_CJK}]+|[^{_CJK}]+', 'g') WITH ORDINALITY AS r(parts, n),
         LATERAL (SELECT r.parts[1] AS run, r.n) AS m
) END
"""

_TSV_BIGRAMS = """
    setweight(to_tsvector(language, pgrecall_cjk_bigrams(coalesce(title, ''))), 'A')
 || setweight(to_tsvector(language, pgrecall_cjk_bigrams(body)), 'B')
 || setweight(to_tsvector(language, pgrecall_cjk_bigrams(pgrecall_tags_text(tags))), 'C')
"""
_TSV_BEFORE = """
    setweight(to_tsvector(language, coalesce(title, '')), 'A')
 || setweight(to_tsvector(language, body), 'B')
 || setweight(to_tsvector(language, pgrecall_tags_text(tags)), 'C')
"""

# The statistics of migration 0002, recounted from the rewritten tsv.
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
    op.execute(_FUNCTION)
    # The server's role runs it on every write (the generated tsv) and search (the query).
    op.execute(f"GRANT EXECUTE ON FUNCTION pgrecall_cjk_bigrams(text) TO {ROLE}")
    op.execute("LOCK TABLE entries IN ACCESS EXCLUSIVE MODE")
    op.execute(f"ALTER TABLE entries ALTER COLUMN tsv SET EXPRESSION AS ({_TSV_BIGRAMS})")
    op.execute(_REBUILD_STATISTICS)


def downgrade() -> None:
    op.execute("LOCK TABLE entries IN ACCESS EXCLUSIVE MODE")
    op.execute(f"ALTER TABLE entries ALTER COLUMN tsv SET EXPRESSION AS ({_TSV_BEFORE})")
    op.execute(_REBUILD_STATISTICS)
    op.execute("DROP FUNCTION pgrecall_cjk_bigrams(text)")
