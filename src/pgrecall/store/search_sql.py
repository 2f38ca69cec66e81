"""SQL of the hybrid search, as constants: the knobs statement and the one search statement."""

from __future__ import annotations

from psycopg import sql

MAX_QUERY_TERMS = 32

__all__ = ["FRAGMENTS", "MAX_QUERY_TERMS", "SQL_IS_CITUS", "SQL_SEARCH", "SQL_SET_KNOBS"]

# Per-transaction knobs. ef_search bounds the HNSW walk's candidate list;
# iterative_scan lets a filtered walk continue until LIMIT rows pass the filters (or
# max_scan_tuples were visited) instead of returning a short branch. With filters, the
# plan is made for the actual values (force_custom_plan): a generic plan of a prepared
# statement (psycopg prepares after 5 runs) cannot tell a tag on 1% of rows from one
# on 90%, and picks an exact scan or the HNSW walk blindly. Unfiltered, the generic
# plan keeps the HNSW index (the dimension is a literal) and saves ~1 ms of planning.
#
# ef_search follows the store's size: pgvector prices the walk by m × ef_search, so on a
# 10k store a long list makes the planner prefer an exact scan (10k TOASTed vectors, ~25 ms)
# over the walk (~2 ms), while 100k needs a longer one for recall@10 ≥ 0.98 (Tuning.ef_search),
# and 1M a longer one still (Tuning.ef_search_huge).
# The function (migrations 0012, 0018) sets the owner first, so that row-level security lets the
# size lookup see the owner's statistics, then the knobs: one round trip, SET LOCAL on every node.
SQL_IS_CITUS = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') AS citus"

SQL_SET_KNOBS = """
SELECT pgrecall_search_knobs(%(owner)s, %(large_store)s, %(ef_search)s, %(ef_search_small)s,
                             %(huge_store)s, %(ef_search_huge)s, %(max_scan_tuples)s, %(plan_cache_mode)s)
"""


# One BM25 term slot, i = 1..32: qtf_i · idf_i · (1 − norm / (tf_i + norm)) × (k1 + 1), written so
# that tf_i, hence ts_rank, appears once per slot. `@@` first: it costs a quarter of ts_rank and
# most terms are absent from most candidates. A slot past the language's last term holds NULL,
# which `@@` (strict) sends to ELSE. Each slot reads its own column of langterms (tq1, w1 … tq32,
# w32), not tqs[i]: subscripting an array of variable-length elements walks it from the start,
# 32 slots × 16 steps per candidate.
_SLOT = sql.SQL(
    "CASE WHEN c.tsv @@ t.tq{i} THEN t.w{i} * (1.0 - n.norm / (round(1.0 / (1.64493406685 * "
    "(1.0 - ts_rank('{{1,1,1,1}}', c.tsv, t.tq{i}))) - 0.5) + n.norm)) ELSE 0.0 END"
)
_SLOT_COLUMNS = sql.SQL("l.tqs[{i}] AS tq{i}, l.ws[{i}] AS w{i}")

# Document frequency of the lexemes of CTE {lexemes_of} in each of the owner's languages, as
# statistics plus not-yet-merged deltas (migration 0002), where it is above 0.
_LIVE_DF = sql.SQL(
    """SELECT s.lexeme, s.language, sum(s.df) AS df
    FROM (
        SELECT lexeme, language, df FROM lexical_df
        WHERE owner = %(owner)s AND lexeme = ANY (ARRAY(SELECT DISTINCT lexeme FROM {lexemes_of}))
        UNION ALL
        SELECT lexeme, language, delta FROM lexical_df_delta
        WHERE owner = %(owner)s AND lexeme = ANY (ARRAY(SELECT DISTINCT lexeme FROM {lexemes_of}))
    ) s
    GROUP BY s.lexeme, s.language
    HAVING sum(s.df) > 0"""
)


def _each(template: sql.SQL, first: int, last: int, sep: str) -> sql.Composed:
    return sql.SQL(sep).join(template.format(i=sql.SQL(str(i))) for i in range(first, last + 1))


# The statement's generated pieces, named as its placeholders.
FRAGMENTS: dict[str, sql.Composable] = {
    "slots1_8": _each(_SLOT, 1, 8, " + "),
    "slots9_16": _each(_SLOT, 9, 16, " + "),
    "slots17_32": _each(_SLOT, 17, MAX_QUERY_TERMS, " + "),
    "slot_columns": _each(_SLOT_COLUMNS, 1, MAX_QUERY_TERMS, ", "),
    "live_df_probe_stems": _LIVE_DF.format(lexemes_of=sql.SQL("probe_stems")),
    "live_df_qterms": _LIVE_DF.format(lexemes_of=sql.SQL("qterms")),
}


# The statement: one template for psycopg's sql.SQL.format (literal braces doubled), run with
# bound parameters. Placeholders, filled by store.search.build_statement:
#   {dim}        the vector dimension as a literal, so that the planner matches the partial
#                index `WHERE embedding_dim = <dim>`, also in a generic plan;
#   {n_vec}      the vector branch's LIMIT (a Tuning constant, never caller input), a literal so
#                that a generic plan prices the HNSW walk right;
#   {filters}    fixed fragments from store/filters.py (their values are bound parameters);
#   {slots1_8} {slots9_16} {slots17_32} {slot_columns} {live_df_probe_stems} {live_df_qterms}
#                the generated pieces in FRAGMENTS above.
# The bound parameters are store.search.bind's; `pgrecall debug search-sql "question"` prints one
# call's statement and parameters.
#
# Lexical branch, step by step:
#  qtext     the query as the tsv reads its text (pgrecall_lexical_text): CJK runs as bigrams,
#            dotted names as their parts.
#  langs     languages (regconfigs) this owner has live entries in, with N and total
#            length: base statistics plus not-yet-merged deltas (migration 0002).
#  probe     a query of more than probe_words distinct words is first stemmed in every
#            language by its longest probe_words words only (probe_stems); the languages
#  probed    whose vocabulary holds probe_ratio of what the best one holds of them are the
#            ones the whole query is stemmed in. Stemming costs ~1 µs per word and
#            language and every later step works per (language, query word): a 140-word
#            question in a 17-language store is stemmed 17 × 8 + ~3 × 140 times, not
#            17 × 140. A shorter query is stemmed in every language, as it costs little.
#  stemmed   the query stemmed once per searched language. to_tsvector(cfg, q) yields
#            exactly the lexemes plainto_tsquery(cfg, q) would AND, stop words gone, and
#            no tsquery syntax is ever parsed from user text.
#  stops     query positions that any searched language drops as a stop word. The
#            parser is shared, so positions line up across configs: "the" is dropped
#            by english, so it is dropped from the swedish and 'simple' stemmings too;
#            otherwise English function words match the English fragments of Swedish
#            or untranslated pages, which then win on their small collections' idf.
#  qterms    each language's remaining lexemes, with their count in the query (qtf).
#  lexdf     document frequency of each query lexeme in each of the owner's languages.
#  postings  each lexeme's posting-list length in the GIN index, which all languages
#            share (a French 'model' scans the English 'model' rows too), shortest
#            first, with the running total.
#  terms     ≤ 32 terms per language by idf; `picked` = the rarest lexemes whose
#            postings together fit the candidate budget (the rarest one always, the
#            cap bounds it). Lexemes become tsquery by quoting, never by parsing.
#  cand_rare one GIN scan for the OR of the picked lexemes, capped. The tsv is
#            detoasted once here ((ARRAY[tsv])[1]), not again in every ts_rank call.
#  cand_common only when the rare terms found fewer than top_k entries (a selective
#            filter, a query of common words): up to n_lex more entries holding the
#            other terms, rarest term first, so that the branch still fills top_k when
#            enough rows match.
#  scored    BM25 of each candidate over all terms of its own language (OR semantics;
#            an entry sharing no term of its language scores 0 and is dropped). tf is
#            recovered exactly from ts_rank on one lexeme with unit weights, which is
#            Σ_{j≤tf} 1/j² / (π²/6), one-to-one in tf (tsvectors keep ≤ 256 positions):
#            ~0.3 µs per (candidate, term) where unnest(tsv) costs ~12 µs per candidate.
#            The expression is unrolled in 32 slots, because a per-row subquery costs more
#            than the ranking itself; slots 9-16 and 17-32 sit in nested CASEs that a query
#            of fewer terms never enters. Nested, not three whole sums for 8, 16 and 32 terms:
#            the executor builds every expression of the plan on every run, even those it
#            never evaluates, and 56 slots cost ~0.35 ms more per search than 32. Document
#            length is length(tsv), distinct lexemes, as in the statistics: O(1).
SQL_SEARCH = """
WITH
qtext AS MATERIALIZED (
    -- The query as entries' tsv sees their text (migrations 0017, 0019): Han, kana and Hangul runs
    -- as overlapping bigrams, whatever the query's language; dotted names (smtplib.SMTP) as parts.
    SELECT pgrecall_lexical_text(%(query)s::text) AS q
),
langs AS MATERIALIZED (
    SELECT s.language AS cfg, sum(s.n_docs)::float8 AS n_docs, sum(s.total_len)::float8 AS total_len
    FROM (
        SELECT language, n_docs, total_len FROM lexical_docs WHERE owner = %(owner)s
        UNION ALL
        SELECT language, n_docs, total_len FROM lexical_docs_delta WHERE owner = %(owner)s
    ) s
    GROUP BY s.language
    HAVING sum(s.n_docs) > 0
),
probe AS MATERIALIZED (
    -- A query of more than probe_words distinct words: its longest ones (content words, the most
    -- telling of a language), to choose the languages the whole query is stemmed in.
    SELECT CASE WHEN count(*) > %(probe_words)s
                THEN string_agg(w, ' ' ORDER BY n) FILTER (WHERE n <= %(probe_words)s) END AS text
    FROM (SELECT t.lexeme AS w, row_number() OVER (ORDER BY length(t.lexeme) DESC, t.lexeme) AS n
          FROM unnest(to_tsvector('simple', (SELECT q FROM qtext))) AS t) s
),
probe_stems AS MATERIALIZED (
    SELECT l.cfg, t.lexeme
    FROM langs l
    CROSS JOIN LATERAL unnest(to_tsvector(l.cfg, (SELECT text FROM probe))) AS t
    WHERE %(lexical)s AND (SELECT text FROM probe) IS NOT NULL
      AND (%(language)s::regconfig IS NULL OR l.cfg = %(language)s::regconfig)
),
probed AS MATERIALIZED (
    -- How many probe words each language's vocabulary holds.
    SELECT p.cfg, count(*) AS hits
    FROM probe_stems p
    JOIN (
        {live_df_probe_stems}
    ) d ON d.lexeme = p.lexeme AND d.language = p.cfg
    GROUP BY p.cfg
),
stemmed AS MATERIALIZED (
    SELECT l.cfg, l.n_docs, greatest(l.total_len / l.n_docs, 1.0) AS avgdl, t.lexeme, t.positions
    FROM langs l
    CROSS JOIN LATERAL unnest(to_tsvector(l.cfg, (SELECT q FROM qtext))) AS t
    WHERE %(lexical)s AND (%(language)s::regconfig IS NULL OR l.cfg = %(language)s::regconfig)
      AND ((SELECT text FROM probe) IS NULL OR NOT EXISTS (SELECT FROM probed)
           OR l.cfg IN (SELECT cfg FROM probed
                        WHERE hits >= %(probe_ratio)s * (SELECT max(hits) FROM probed)))
),
stops AS MATERIALIZED (
    SELECT array_agg(w.pos) AS pos
    FROM (
        SELECT a.pos
        FROM (SELECT DISTINCT unnest(t.positions) AS pos
              FROM unnest(to_tsvector('simple', (SELECT q FROM qtext))) AS t) a
        LEFT JOIN (SELECT DISTINCT s.cfg, unnest(s.positions) AS pos FROM stemmed s) k ON k.pos = a.pos
        GROUP BY a.pos
        HAVING count(k.cfg) < (SELECT count(DISTINCT cfg) FROM stemmed)
    ) w
),
qterms AS MATERIALIZED (
    SELECT s.cfg, s.n_docs, s.avgdl, s.lexeme, k.qtf
    FROM stemmed s
    CROSS JOIN LATERAL (
        SELECT count(*) AS qtf FROM unnest(s.positions) AS p
        WHERE p <> ALL (coalesce((SELECT pos FROM stops), '{{}}'))
    ) k
    WHERE k.qtf > 0
),
lexdf AS MATERIALIZED (
    {live_df_qterms}
),
coverage AS MATERIALIZED (
    -- How many of the query's word positions each language's vocabulary (df > 0) holds.
    -- A join, not EXISTS per row: a CTE has no index, and a long query (the near-duplicate check
    -- passes a whole entry) has thousands of (language, lexeme) rows. lexdf holds each pair once.
    SELECT q.cfg, coalesce(sum(q.qtf) FILTER (WHERE d.lexeme IS NOT NULL), 0)::float8 AS hits
    FROM qterms q
    LEFT JOIN lexdf d ON d.lexeme = q.lexeme AND d.language = q.cfg
    GROUP BY q.cfg
),
covered AS MATERIALIZED (
    -- The languages the query can be written in, each with its share of the best one's coverage:
    -- below cover_ratio a language is not searched, and its BM25 counts share^cover_power. A German
    -- query stemmed as English finds few English words; searched in English at full weight, its
    -- stray matches (names, loan words) outrank the German entries on English idf.
    -- own: a language holding as many of the query's words as the best one (the query's language;
    -- several when they tie, as a name or a command in two vocabularies does).
    SELECT cfg, hits / nullif((SELECT max(hits) FROM coverage), 0.0) AS share,
           hits >= (SELECT max(hits) FROM coverage) AS own
    FROM coverage
    WHERE hits > 0 AND hits >= %(cover_ratio)s * (SELECT max(hits) FROM coverage)
),
postings AS MATERIALIZED (
    SELECT lexeme, posting, sum(posting) OVER (ORDER BY posting, lexeme) AS upto,
           row_number() OVER (ORDER BY posting, lexeme) AS nth
    FROM (
        -- Only lexemes that are a query term in a language that has them; counted over
        -- all languages, as the GIN scan will read them.
        SELECT d.lexeme, sum(d.df) AS posting FROM lexdf d
        WHERE d.lexeme IN (
            SELECT q.lexeme FROM qterms q JOIN lexdf x ON x.lexeme = q.lexeme AND x.language = q.cfg
            WHERE q.cfg IN (SELECT cfg FROM covered)
        )
        GROUP BY d.lexeme
    ) p
),
terms AS MATERIALIZED (
    SELECT cfg, lexeme, avgdl, idf, idf * qtf AS w, tq, picked, posting
    FROM (
        SELECT q.cfg, q.lexeme, q.avgdl, q.qtf, p.posting,
               ln(1.0 + (q.n_docs - d.df + 0.5) / (d.df + 0.5)) AS idf,
               ('''' || replace(replace(q.lexeme, '\\', '\\\\'), '''', '''''') || '''')::tsquery AS tq,
               (p.nth = 1 OR p.upto <= %(budget)s) AS picked,
               row_number() OVER (PARTITION BY q.cfg ORDER BY d.df, q.lexeme) AS n
        FROM qterms q
        JOIN lexdf d ON d.lexeme = q.lexeme AND d.language = q.cfg
        JOIN postings p ON p.lexeme = q.lexeme
        WHERE q.cfg IN (SELECT cfg FROM covered)
    ) s
    WHERE n <= %(max_terms)s
),
langterms AS MATERIALIZED (
    SELECT l.*, {slot_columns}
    FROM (
        SELECT cfg, min(avgdl) AS avgdl, count(*) AS n,
               array_agg(lexeme ORDER BY idf DESC, lexeme) AS lexemes,
               array_agg(w ORDER BY idf DESC, lexeme) AS ws,
               array_agg(tq ORDER BY idf DESC, lexeme) AS tqs
        FROM terms
        GROUP BY cfg
    ) l
),
cand_rare AS MATERIALIZED (
    SELECT e.id, e.language AS cfg, (ARRAY[e.tsv])[1] AS tsv, length(e.tsv)::float8 AS dl
    FROM entries e
    WHERE e.tsv @@ (SELECT string_agg(DISTINCT tq::text, ' | ')::tsquery FROM terms WHERE picked)
      AND e.owner = %(owner)s AND e.deleted_at IS NULL {filters}
    LIMIT %(cap)s
),
cand_common AS MATERIALIZED (
    -- Term by term, rarest first, each with the filters, until n_lex entries: the Limit stops the
    -- loop, so a 1%% filter never makes the GIN index list every entry holding a common word (an
    -- OR of 200 common lexemes read 78 000 postings, 60 ms at 100k, to keep 50 of them).
    SELECT DISTINCT ON (x.id) x.id, x.cfg, x.tsv, x.dl
    FROM (
        SELECT m.id, m.cfg, m.tsv, m.dl
        FROM (SELECT tq, min(posting) AS posting FROM terms WHERE NOT picked GROUP BY tq
              ORDER BY min(posting), tq::text) t
        CROSS JOIN LATERAL (
            SELECT e.id, e.language AS cfg, (ARRAY[e.tsv])[1] AS tsv, length(e.tsv)::float8 AS dl
            FROM entries e
            WHERE e.tsv @@ t.tq
              AND e.owner = %(owner)s AND e.deleted_at IS NULL {filters}
              AND e.id NOT IN (SELECT id FROM cand_rare)
            LIMIT %(n_lex)s
        ) m
        WHERE (SELECT count(*) FROM cand_rare) < %(top_k)s
        LIMIT %(n_lex)s
    ) x
),
cand AS (
    SELECT * FROM cand_rare UNION ALL SELECT * FROM cand_common
),
scored AS MATERIALIZED (
    SELECT c.id, c.cfg, power(v.share, %(cover_power)s) * (%(k1)s + 1.0) * (
               {slots1_8} + CASE WHEN t.n <= 8 THEN 0.0 ELSE
               {slots9_16} + CASE WHEN t.n <= 16 THEN 0.0 ELSE
               {slots17_32} END END) AS score
    FROM cand c
    JOIN langterms t ON t.cfg = c.cfg
    JOIN covered v ON v.cfg = c.cfg
    CROSS JOIN LATERAL (SELECT %(k1)s * (1.0 - %(b)s + %(b)s * c.dl / t.avgdl) AS norm) n
),
lex AS MATERIALIZED (
    SELECT id, cfg, score, row_number() OVER (ORDER BY score DESC, id) AS rank
    FROM scored
    WHERE score > 0
    ORDER BY score DESC, id
    LIMIT %(n_lex)s
),
vec_raw AS MATERIALIZED (
    SELECT e.id, e.language AS cfg, e.embedding::vector({dim}) <=> %(qvec)s::vector({dim}) AS dist
    FROM entries e
    WHERE %(qvec)s::text IS NOT NULL
      AND e.owner = %(owner)s AND e.deleted_at IS NULL
      AND e.embedding_dim = {dim} AND e.embedding_model = %(model)s {filters}
    ORDER BY e.embedding::vector({dim}) <=> %(qvec)s::vector({dim})
    LIMIT {n_vec}
),
vec AS MATERIALIZED (
    -- An iterative scan returns rows in relaxed order: rank here, ties by id. The
    -- similarity floor applies to the branch's rows, not inside the index scan.
    SELECT id, cfg, 1.0 - dist AS cos_sim, row_number() OVER (ORDER BY dist, id) AS rank
    FROM vec_raw
    WHERE 1.0 - dist >= %(min_sim)s
),
lexcos AS MATERIALIZED (
    -- Convex fusion scores every candidate on both scales: a hit found by words alone gets its
    -- cosine here (one vector read per such row, ≤ n_lex), as its place on the model's scale.
    SELECT l.id, 1.0 - (x.embedding::vector({dim}) <=> %(qvec)s::vector({dim})) AS cos_sim
    FROM lex l
    JOIN entries x ON x.owner = %(owner)s AND x.id = l.id
    WHERE %(convex)s AND %(qvec)s::text IS NOT NULL
      AND x.embedding_dim = {dim} AND x.embedding_model = %(model)s
      AND l.id NOT IN (SELECT id FROM vec)
),
branch_scale AS MATERIALIZED (
    SELECT (SELECT min(cos_sim) FROM vec) AS worst_cos, (SELECT max(score) FROM lex) AS best_lex,
           (SELECT avg(score) FROM lex) AS lex_mean, (SELECT stddev_pop(score) FROM lex) AS lex_sd
),
fused AS (
    -- rrf: 1 / (k + rank) per branch. convex: w × the cosine on the model's scale (0 at its
    -- typical unrelated pair, 1 at its typical related one) + (1 − w) × BM25 rescaled so that the
    -- lexical list's mean − 3 population standard deviations is 0 and mean + 3 sd is 1, floored at
    -- 0 (distribution-based score fusion, on the lexical branch only; docs/fusion-normalisation.md):
    -- a best hit weighs by how far it stands above the rest of its list, so one barely ahead of
    -- many similar scores (common words, a long question) no longer gets the whole lexical part
    -- and the cosine decides among them. The cosine needs no such rescaling: the model's scale
    -- already calibrates it across questions. A list without spread (one hit, equal scores) gives
    -- its hits 1 and every other candidate 0: a rare word found in one entry must still lift it;
    -- no list gives 0. A candidate one branch did not return counts as that branch's weakest:
    -- BM25 0, or, without a vector of its own, the lowest cosine the vector branch returned.
    -- Except an entry in another language than the query's (not an `own` language of covered):
    -- the query's words cannot be in it, so BM25 says nothing about it (0, or a stray match of a
    -- name or a command); its lexical part is its cosine on the model's scale instead, so a
    -- question answered in another language (an English question, a German manual) is ranked by
    -- meaning, not pushed under the query-language entries that share its words
    -- (docs/fusion-languages.md). Not when the lexical branch searched no language, nor without
    -- a query vector.
    SELECT coalesce(v.id, l.id) AS id, v.rank AS vec_rank, coalesce(v.cos_sim, c.cos_sim) AS cos_sim,
           l.rank AS lex_rank, l.score AS lex_score, l.cfg AS lex_cfg, m.imputed AS lex_imputed,
           coalesce(1.0 / (%(k)s + v.rank), 0.0) AS vec_rrf,
           coalesce(1.0 / (%(k)s + l.rank), 0.0) AS lex_rrf,
           CASE WHEN NOT %(convex)s THEN coalesce(1.0 / (%(k)s + v.rank), 0.0)
                WHEN s.worst_cos IS NULL THEN 0.0
                ELSE %(w_vec)s * m.on_scale END AS vec_part,
           CASE WHEN NOT %(convex)s THEN coalesce(1.0 / (%(k)s + l.rank), 0.0)
                ELSE (1.0 - %(w_vec)s) * CASE
                    WHEN m.imputed THEN greatest(0.0, m.on_scale)
                    WHEN s.lex_sd > 0.0
                    THEN greatest(0.0, (coalesce(l.score, 0.0) - s.lex_mean + 3.0 * s.lex_sd)
                                       / (6.0 * s.lex_sd))
                    WHEN l.id IS NOT NULL THEN 1.0
                    ELSE 0.0 END END AS lex_part
    FROM vec v FULL JOIN lex l ON v.id = l.id
    LEFT JOIN lexcos c ON c.id = l.id
    CROSS JOIN branch_scale s
    CROSS JOIN LATERAL (
        SELECT %(convex)s AND s.worst_cos IS NOT NULL AND EXISTS (SELECT FROM covered)
               AND coalesce(l.cfg, v.cfg) NOT IN (SELECT cfg FROM covered WHERE own) AS imputed,
               (coalesce(v.cos_sim, c.cos_sim, s.worst_cos) - %(cos_lo)s)
               / (%(cos_hi)s - %(cos_lo)s) AS on_scale
    ) m
),
recent AS (
    -- Opt-in recency (half_life set): 0.5^(age / half-life) × first_place, what a first place in
    -- one branch gives (1 / (k + 1) in rrf), so a just-updated entry gains that and one a
    -- half-life old half of it. Added, not multiplied: fused scores are close together
    -- (rank 1 and rank 20 differ by 1.3x in rrf), so any multiplicative decay over weeks would bury a
    -- strongly relevant old entry. It only reorders the branches' candidates.
    SELECT f.*,
           CASE WHEN %(half_life)s::float8 IS NULL THEN 0.0
                -- At most 1000 half-lives: 0.5^1000 is 1e-301, further would underflow float8.
                ELSE (SELECT power(0.5, least(1000.0, greatest(0.0, extract(epoch FROM
                                   statement_timestamp() - r.updated_at) / 86400.0) / %(half_life)s::float8))
                      FROM entries r WHERE r.owner = %(owner)s AND r.id = f.id) * %(first_place)s
           END AS recency_rrf
    FROM fused f
),
grouping AS MATERIALIZED (
    -- Grouped by document (per_document set): each candidate's document, one index read per
    -- candidate, only then.
    SELECT x.id, x.document_id
    FROM entries x
    WHERE %(per_document)s::int IS NOT NULL AND x.owner = %(owner)s
      AND x.id IN (SELECT id FROM vec UNION SELECT id FROM lex)
),
kept AS (
    -- A chunk stands for its document, a note for itself; ungrouped, every hit is its own group.
    SELECT f.*, f.vec_part + f.lex_part + f.recency_rrf AS fused, coalesce(g.document_id, f.id) AS grp
    FROM recent f
    LEFT JOIN grouping g ON g.id = f.id
    -- min_sim holds for every hit, not only the vector branch's: a hit found by the
    -- lexical branch alone is kept only if its own cosine reaches it too (one vector
    -- read per such row, and only when a floor is set and the query was embedded).
    WHERE %(min_sim)s <= -2.0 OR f.vec_rank IS NOT NULL OR %(qvec)s::text IS NULL
       OR EXISTS (
           SELECT 1 FROM entries x
           WHERE x.owner = %(owner)s AND x.id = f.id
             AND x.embedding_dim = {dim} AND x.embedding_model = %(model)s
             AND 1.0 - (x.embedding::vector({dim}) <=> %(qvec)s::vector({dim})) >= %(min_sim)s
       )
),
top AS (
    -- top_k groups, ranked by their best hit, each with at most per_document hits: a long
    -- document whose chunks all match takes one slot, not the whole list.
    SELECT g.*
    FROM (SELECT k.*, row_number() OVER (PARTITION BY k.grp ORDER BY k.fused DESC, k.id) AS in_grp,
                 max(k.fused) OVER (PARTITION BY k.grp) AS grp_best
          FROM kept k) g
    WHERE g.in_grp <= coalesce(%(per_document)s::int, 1)
    ORDER BY g.grp_best DESC, g.grp, g.fused DESC, g.id
    LIMIT %(top_k)s * coalesce(%(per_document)s::int, 1)
)
SELECT (SELECT coalesce(sum(n_docs), 0)::bigint FROM langs) AS live_entries,
       (SELECT count(*) FROM terms) AS query_terms,
       (SELECT count(*) FROM cand) AS lexical_candidates,
       (SELECT count(*) FROM vec) AS vector_candidates,
       -- Distinct candidates of both branches: what fusion ranked (trace, total_candidates).
       (SELECT count(*) FROM vec v FULL JOIN lex l ON v.id = l.id) AS fused_candidates,
       -- Each branch's own scale, for relevance relative to it (domain/relevance.py).
       (SELECT max(cos_sim) FROM vec) AS best_cos,
       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY cos_sim) FROM vec) AS mid_cos,
       (SELECT best_lex FROM branch_scale) AS best_lex,
       (SELECT lex_mean FROM branch_scale) AS lex_mean,
       (SELECT lex_sd FROM branch_scale) AS lex_sd,
       -- A hit found by words alone gets its cosine too (one vector read per such row of the
       -- top_k): relevance judges every hit's meaning on the model's scale.
       top.id, top.fused, top.vec_rank,
       CASE WHEN top.cos_sim IS NOT NULL THEN top.cos_sim
            WHEN e.embedding_dim = {dim} AND e.embedding_model = %(model)s
            THEN 1.0 - (e.embedding::vector({dim}) <=> %(qvec)s::vector({dim})) END AS cos_sim,
       top.vec_rrf, top.lex_rank, top.lex_score, top.recency_rrf,
       top.lex_rrf, top.vec_part, top.lex_part, top.lex_cfg::text AS lex_cfg, top.lex_imputed,
       ARRAY(SELECT u.lexeme FROM langterms t, unnest(t.lexemes, t.tqs) AS u(lexeme, tq)
             WHERE t.cfg = top.lex_cfg AND e.tsv @@ u.tq ORDER BY u.lexeme) AS matched,
       e.title, left(e.body, %(body_chars)s) AS body, e.tags, e.language::text AS language,
       e.content_hash, e.kind, e.source, e.created_at, e.updated_at,
       e.document_id, e.ordinal, e.section_path,
       d.title AS document_title, d.version_label AS document_version
FROM (SELECT 1) AS one
LEFT JOIN (top JOIN entries e ON e.owner = %(owner)s AND e.id = top.id
           LEFT JOIN documents d ON d.owner = %(owner)s AND d.id = e.document_id) ON true
ORDER BY top.fused DESC, top.id
"""
