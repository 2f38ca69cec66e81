"""The statements `pgrecall bench` measures ours against: the plain anchor and the exact scan."""

# The plain anchor: vector top 50 + ts_rank_cd over an AND query in 'simple', RRF k = 60.
SQL_ANCHOR = """
WITH v AS (
    SELECT id, row_number() OVER (ORDER BY d, id) AS r FROM (
        SELECT e.id, e.embedding::vector(384) <=> %(qvec)s::vector(384) AS d
        FROM entries e
        WHERE %(qvec)s::text IS NOT NULL
          AND e.owner = %(owner)s AND e.deleted_at IS NULL AND e.embedding_dim = 384 {filters}
        ORDER BY e.embedding::vector(384) <=> %(qvec)s::vector(384)
        LIMIT 50) s
), l AS (
    SELECT e.id, row_number() OVER (ORDER BY ts_rank_cd(e.tsv, q) DESC, e.id) AS r
    FROM entries e, plainto_tsquery('simple', %(query)s) q
    WHERE e.tsv @@ q AND e.owner = %(owner)s AND e.deleted_at IS NULL {filters}
    ORDER BY ts_rank_cd(e.tsv, q) DESC, e.id
    LIMIT 50
)
SELECT coalesce(v.id, l.id) AS id, coalesce(1.0 / (60 + v.r), 0) + coalesce(1.0 / (60 + l.r), 0) AS s
FROM v FULL JOIN l ON v.id = l.id
ORDER BY s DESC, id
LIMIT %(top_k)s
"""
SQL_EXACT = """
SELECT e.id FROM entries e
WHERE e.owner = %(owner)s AND e.deleted_at IS NULL AND e.embedding_dim = 384 {filters}
ORDER BY (e.embedding::vector(384) <=> %(qvec)s::vector(384)) + 0, e.id
LIMIT %(top_k)s
"""
