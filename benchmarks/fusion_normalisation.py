"""Published, label-free score normalisations for hybrid fusion, replayed on each question's two branches.

Issue 37, point 2 asks for fusion weights from what the branches say about the question itself, or
another published method that needs no labels at query time. The evidence rules of
docs/fusion-evidence.md were not ahead everywhere; this study replays the normalisations that search
engines and the metasearch literature publish, each on the same candidates:

- best (shipped until dbsf-lex): w × the cosine on the model's scale + (1 − w) × BM25 / the best BM25
  of the search;
- minmax: each branch min-max normalised over its own returned list (Weaviate's relativeScoreFusion;
  Lee 1997);
- dbsf: each branch normalised to its list's mean ± 3 standard deviations (Qdrant's distribution-based
  score fusion; a clipped z-score, Montague & Aslam 2001);
- bound: BM25 over the largest score the query's terms can reach (Σ idf × qtf × (k1 + 1), times the
  language's coverage factor, as the statement weighs it), not over the best hit: a question whose best
  hit holds few of its words keeps a small lexical part;
- mnz-best, mnz-minmax: CombMNZ (Fox & Shaw 1994) on the shipped or min-max scores: the sum times the
  number of branches that returned the hit.

A hit the lexical branch did not return scores BM25 0, normalised as the others and floored at 0; a hit
the vector branch did not return has its own cosine (as in the statement), floored at 0 once normalised.
A branch whose list has a single value (no spread) gives every candidate 1: it orders nothing.

Each normalisation is scored with equal weights (w = 0.5, the published default of the sum), with the
shipped length prior w = 1 / (1 + 0.2 ln(1 + words)) within 0.1–0.9, and with the prior (base, factor)
tuned on one half of the collections and reported on the other (HALVES, both directions, fixed before
any of these rules was scored); a second round (SECOND_ROUND) was declared after the first was read,
one rule frozen (FROZEN) and checked on a collection built afterwards (FRESH).

Step 1 (slow, once per collection): `collect` runs every query once through the search service as
benchmarks/fusion_evidence.py does, and keeps in addition each hit's language and the query's BM25 bound
per language (the statement's own terms and weights, read by one more output column).
Step 2 (fast, offline): `replay` scores every rule on every collection and writes the JSON.

Step 3 (a check of the replay): `statement` runs the previous (length) and the frozen rule through the
search statement itself, top 10 per query. The frozen rule now ships; the previous one is the shipped
statement with its old lexical part swapped back in (`previous_statement`). The statement's fusion
has changed since (f4d3817, 4778b02): run this step from commit 22296fc, where it was written.

Run: python benchmarks/fusion_normalisation.py collect --cache DIR NAME…
     python benchmarks/fusion_normalisation.py replay --cache DIR [--json FILE]
     (FILE: benchmarks/fusion_normalisation.json)
     python benchmarks/fusion_normalisation.py statement NAME… [--json FILE]
     (FILE: benchmarks/fusion_normalisation-statement.json)
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from fusion_evidence import candidate_row, collection, write_cache
from psycopg import sql

from pgrecall.config import Settings
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.cache import CachedQueryEmbedder
from pgrecall.embeddings.calibration import ModelScale
from pgrecall.evaluation import runner
from pgrecall.evaluation.dataset import BeirDataset
from pgrecall.evaluation.loader import Loaded
from pgrecall.evaluation.pipeline import OWNER, loaded_store
from pgrecall.services.search import SearchOptions, SearchService
from pgrecall.store.filters import compile_filters, has_filters
from pgrecall.store.search import SearchParams, SearchRows, Tuning, bind, knobs, to_rows
from pgrecall.store.search_sql import FRAGMENTS, SQL_SEARCH, SQL_SET_KNOBS

# The statement's first output column; the bound goes just before it. Per searched language: the
# BM25 a document would score with every term of the language at unbounded frequency.
_FIRST_COLUMN = "SELECT (SELECT coalesce(sum(n_docs), 0)::bigint FROM langs) AS live_entries,"
_BOUND_COLUMN = """SELECT (SELECT json_object_agg(b.cfg::text,
                                  power(v.share, %(cover_power)s) * (%(k1)s + 1.0) * b.mass)
        FROM (SELECT cfg, sum(w) AS mass FROM terms GROUP BY cfg) b
        JOIN covered v ON v.cfg = b.cfg) AS lex_bounds,
       (SELECT coalesce(sum(n_docs), 0)::bigint FROM langs) AS live_entries,"""


class BoundStore(runner.DepthStore):
    """The depth store running the statement with one more column, the query's BM25 bounds."""

    last: SearchRows | None = None
    bounds: dict[str, float] | None = None

    def search(self, params: SearchParams) -> SearchRows:
        """The statement at depth, keeping its rows and the bounds."""
        params = replace(params, top_k=self.depth)
        assert _FIRST_COLUMN in SQL_SEARCH, "the statement's output list changed"
        text = SQL_SEARCH.replace(_FIRST_COLUMN, _BOUND_COLUMN)
        filters, _ = compile_filters(params.filters)
        dim = params.dim if params.dim is not None and params.vector is not None else 384
        statement = sql.SQL(text).format(  # type: ignore[arg-type]
            dim=sql.Literal(int(dim)),
            filters=filters,
            n_vec=sql.Literal(int(params.tuning.n_vec)),
            **FRAGMENTS,
        )
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(SQL_SET_KNOBS, knobs(params.tuning, has_filters(params.filters), params.owner))
            rows = conn.execute(statement, bind(params)).fetchall()
        self.bounds = (rows[0]["lex_bounds"] if rows else None) or {}
        self.last = to_rows(rows)
        return self.last


# The previous rule (length prior 1.0 / 0.2, BM25 / the best BM25) as the statement computed it before
# the frozen rule shipped: the shipped fragments swapped back, so that `statement` still compares the two.
_SCALE = """SELECT (SELECT min(cos_sim) FROM vec) AS worst_cos, (SELECT max(score) FROM lex) AS best_lex,
           (SELECT avg(score) FROM lex) AS lex_mean, (SELECT stddev_pop(score) FROM lex) AS lex_sd"""
_LEX_PART = """ELSE (1.0 - %(w_vec)s) * CASE
                    WHEN s.lex_sd > 0.0
                    THEN greatest(0.0, (coalesce(l.score, 0.0) - s.lex_mean + 3.0 * s.lex_sd)
                                       / (6.0 * s.lex_sd))
                    WHEN s.best_lex IS NOT NULL THEN 1.0
                    ELSE 0.0 END END AS lex_part"""
_LEX_PART_BEST = "ELSE (1.0 - %(w_vec)s) * coalesce(l.score / nullif(s.best_lex, 0.0), 0.0) END AS lex_part"
PREVIOUS = (1.0, 0.2)


def previous_statement() -> str:
    """The search statement with the previous rule's lexical part (BM25 / the best BM25)."""
    if _SCALE not in SQL_SEARCH or _LEX_PART not in SQL_SEARCH:
        raise SystemExit(
            "statement: the search statement's fusion changed after this study (f4d3817, 4778b02); "
            "run this step from the commit it was written for: git worktree add DIR 22296fc"
        )
    return SQL_SEARCH.replace(_LEX_PART, _LEX_PART_BEST)


class TextStore(runner.DepthStore):
    """The depth store running a given statement text (the shipped one, or the frozen rule's)."""

    last: SearchRows | None = None

    def __init__(self, pool: Any, depth: int, text: str) -> None:
        super().__init__(pool, depth)
        self.text = text

    def search(self, params: SearchParams) -> SearchRows:
        """The statement at depth."""
        params = replace(params, top_k=self.depth)
        filters, _ = compile_filters(params.filters)
        dim = params.dim if params.dim is not None and params.vector is not None else 384
        statement = sql.SQL(self.text).format(  # type: ignore[arg-type]
            dim=sql.Literal(int(dim)),
            filters=filters,
            n_vec=sql.Literal(int(params.tuning.n_vec)),
            **FRAGMENTS,
        )
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(SQL_SET_KNOBS, knobs(params.tuning, has_filters(params.filters), params.owner))
            self.last = to_rows(conn.execute(statement, bind(params)).fetchall())
        return self.last


def through_statement(name: str, out: Path | None) -> None:
    """The previous (length) and the shipped (dbsf-lex) rule run by the search statement itself."""
    settings, embedder, dataset, queries = collection(name)
    # The statement ships the frozen rule (Tuning's defaults are its prior); the previous one is
    # swapped back in. Before it shipped, the committed JSON named them "shipped" and "frozen".
    assert (Tuning().vector_weight_base, Tuning().vector_weight_length_factor) == FROZEN[1]
    rules = {
        "length": (
            previous_statement(),
            Tuning(vector_weight_base=PREVIOUS[0], vector_weight_length_factor=PREVIOUS[1]),
        ),
        "dbsf-lex": (SQL_SEARCH, Tuning()),
    }
    result: dict[str, Any] = {}
    with loaded_store(settings, dataset, embedder, progress=True) as (app, scoped, loaded):
        assert app.pool is not None
        for label, (text, tuning) in rules.items():
            service = SearchService(
                scoped, app.pool, app.catalog, CachedQueryEmbedder(embedder), tuning=tuning
            )
            store = service.store = TextStore(app.pool, 10, text)
            run: dict[str, list[str]] = {}
            for qid, query in queries.items():
                service.search(OWNER, query, top_k=10, options=SearchOptions(fusion="convex"))
                assert store.last is not None
                run[qid] = [loaded.beir_of[str(r.id)] for r in store.last.rows][:10]
            value = runner.score(run, {q: dataset.qrels[q] for q in queries})[0]["nDCG@10"]
            result[label] = {"nDCG@10": value}
            print(f"{name} {label} through the statement: nDCG@10 {value:.4f}", flush=True)
    if out:
        doc = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
        doc["command"] = "python benchmarks/fusion_normalisation.py statement NAME --json FILE"
        doc.setdefault("collections", {})[name] = result
        out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


@contextmanager
def bound_searches(
    settings: Settings, dataset: BeirDataset, embedder: Embedder
) -> Iterator[tuple[Callable[[str], tuple[SearchRows, dict[str, float]]], Loaded, ModelScale]]:
    """`dataset` loaded as the product loads it; a function returning one rrf search's rows and bounds."""
    with loaded_store(settings, dataset, embedder, progress=True) as (app, scoped, loaded):
        assert app.pool is not None
        scale = app.search.model_scale()
        assert scale is not None, "the model's cosine scale could not be measured"
        service = SearchService(scoped, app.pool, app.catalog, CachedQueryEmbedder(embedder), tuning=Tuning())
        store = service.store = BoundStore(app.pool, 100)

        def rows(text: str) -> tuple[SearchRows, dict[str, float]]:
            service.search(OWNER, text, top_k=10, options=SearchOptions(fusion="rrf"))
            assert store.last is not None and store.bounds is not None
            return store.last, store.bounds

        yield rows, loaded, scale


def collect(name: str, cache: Path) -> None:
    """Every query's two branches of one collection with their bounds, into cache/<name>.json.

    The rows are fusion_evidence's (so its replay reads this cache too) plus each hit's language.
    """
    settings, embedder, dataset, queries = collection(name)
    out: dict[str, Any] = {}
    with bound_searches(settings, dataset, embedder) as (rows_of, loaded, scale):
        for qid, text in queries.items():
            found, bounds = rows_of(text)
            out[qid] = {
                "terms": found.query_terms,
                "lexical_candidates": found.lexical_candidates,
                "bounds": bounds,
                "rows": [[*candidate_row(r, loaded), r.lex_cfg] for r in found.rows],
            }
    write_cache(name, cache, embedder.model, scale, dataset, queries, out)


# Roles, fixed before any rule of this study was scored (every collection had been read by the
# earlier studies, with other rules). Two halves, each with a CJK collection, a Western Debian one
# and a shared classic one; debian-ja (the CJK target) and debian-it-sentences (the one sentence
# collection, nearest to the reviewers' held-out one) on the same half, so that the other direction
# reports on them. FRESH collections are built after a rule is frozen and never tuned on.
HALVES = {
    "A": ("cranfield", "debian-ja", "debian-es", "debian-it-sentences"),
    "B": ("cisi", "debian-en", "debian-zh", "debian-ko", "debian-mixed"),
}
SPLITS = {"A→B": ("A", "B"), "B→A": ("B", "A")}
FRESH = ("debian-pt-sentences",)
# Frozen after the second round, before any FRESH collection existed: the one rule that passed the
# gate in both directions, with its prior tuned on all the halves' collections.
FROZEN = ("dbsf-lex", (1.3, 0.3))
FIRST_ROUND = ("best", "minmax", "dbsf", "bound", "mnz-best", "mnz-minmax")
# Declared after the first round was read on every collection (dbsf ahead on both halves but for
# debian-ko): the distribution normalisation on one branch only, the other keeping the shipped
# scale, which for the cosine is the model's own calibration, the same for every question.
SECOND_ROUND = ("dbsf-lex", "dbsf-vec")
NORMALISATIONS = FIRST_ROUND + SECOND_ROUND
BASES = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3)
FACTORS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)
LENGTH = (1.0, 0.2)
EQUAL = (0.5, 0.0)
# A rule beats the shipped one on a side when its objective is higher there and it loses no more
# than this on any collection of the side.
MAX_LOSS = 0.003


def prior(setting: tuple[float, float], words: int) -> float:
    """The length prior's cosine weight (store.search.Tuning.vector_weight)."""
    base, factor = setting
    return min(0.9, max(0.1, base / (1.0 + factor * math.log1p(words))))


def _minmax(values: list[float | None], own: list[bool]) -> list[float]:
    listed = [v for v, o in zip(values, own, strict=True) if o and v is not None]
    if not listed:
        return [0.0] * len(values)
    lo, hi = min(listed), max(listed)
    span = hi - lo
    return [0.0 if v is None else (1.0 if span <= 0 else max(0.0, (v - lo) / span)) for v in values]


def _dbsf(values: list[float | None], own: list[bool]) -> list[float]:
    listed = [v for v, o in zip(values, own, strict=True) if o and v is not None]
    if not listed:
        return [0.0] * len(values)
    mean = statistics.fmean(listed)
    sd = statistics.pstdev(listed)
    if sd <= 0:
        return [0.0 if v is None else 1.0 for v in values]
    return [0.0 if v is None else max(0.0, (v - mean + 3 * sd) / (6 * sd)) for v in values]


class Question:
    """One question's candidates, each normalisation's two parts precomputed."""

    def __init__(self, text: str, found: dict[str, Any], qrels: dict[str, int], scale: dict[str, float]):
        lo, hi = scale["unrelated"], scale["related"]
        rows = found["rows"]
        self.qrels = qrels
        self.ids = [r[1] for r in rows]
        self.beir = [r[0] for r in rows]
        self.words = len(text.split())
        in_vec = [r[2] is not None for r in rows]
        in_lex = [r[4] is not None for r in rows]
        self.n_vec, self.n_lex = sum(in_vec), sum(in_lex)
        self.hits = [int(a) + int(b) for a, b in zip(in_vec, in_lex, strict=True)]
        self.vector_run = [r[0] for r in sorted((r for r in rows if r[2] is not None), key=lambda r: r[2])]
        self.lexical_run = [r[0] for r in sorted((r for r in rows if r[4] is not None), key=lambda r: r[4])]
        worst = min((r[3] for r in rows if r[2] is not None), default=None)
        # As the statement: a hit without a cosine of its own counts as the vector branch's weakest.
        cos: list[float | None] = [r[3] if r[3] is not None else worst for r in rows]
        bm25: list[float | None] = [r[5] if r[4] is not None else 0.0 for r in rows]
        best_lex = max((r[5] for r in rows if r[4] is not None), default=0.0)
        bounds = found.get("bounds")
        self.parts: dict[str, tuple[list[float], list[float]]] = {
            "best": (
                [0.0 if c is None else (c - lo) / (hi - lo) for c in cos],
                [b / best_lex if best_lex > 0 and b is not None else 0.0 for b in bm25],
            ),
            "minmax": (_minmax(cos, in_vec), _minmax(bm25, in_lex)),
            "dbsf": (_dbsf(cos, in_vec), _dbsf(bm25, in_lex)),
        }
        self.parts["dbsf-lex"] = (self.parts["best"][0], self.parts["dbsf"][1])
        self.parts["dbsf-vec"] = (self.parts["dbsf"][0], self.parts["best"][1])
        if bounds is not None:
            self.parts["bound"] = (
                self.parts["best"][0],
                [(r[5] / bounds[r[7]]) if r[4] is not None and bounds.get(r[7]) else 0.0 for r in rows],
            )

    def fused(self, norm: str, setting: tuple[float, float]) -> list[str]:
        """BEIR ids by one normalisation's convex score under the prior, ties by entry id."""
        mnz = norm.startswith("mnz-")
        vec, lex = self.parts[norm.removeprefix("mnz-")]
        if self.n_lex == 0:
            w = 1.0
        elif self.n_vec == 0:
            w = 0.0
        else:
            w = prior(setting, self.words)
        scores = [w * v + (1 - w) * x for v, x in zip(vec, lex, strict=True)]
        if mnz:
            scores = [s * n for s, n in zip(scores, self.hits, strict=True)]
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], self.ids[i]))
        return [self.beir[i] for i in order]


def load(cache: Path, name: str) -> list[Question]:
    """A collected collection's questions."""
    doc = json.loads((cache / f"{name}.json").read_text(encoding="utf-8"))
    return [
        Question(doc["queries"][q], found, doc["qrels"][q], doc["scale"])
        for q, found in doc["candidates"].items()
    ]


def ndcg(questions: list[Question], run_of: Callable[[Question], list[str]]) -> float:
    """Mean nDCG@10 (ir-measures, as `pgrecall eval`)."""
    run = {str(i): run_of(q)[:10] for i, q in enumerate(questions)}
    return float(runner.score(run, {str(i): q.qrels for i, q in enumerate(questions)})[0]["nDCG@10"])


def paired(
    questions: list[Question], a: tuple[str, tuple[float, float]], b: tuple[str, tuple[float, float]]
) -> dict[str, Any]:
    """Rule a against rule b question by question: wins, losses, and a two-sided paired randomisation
    test of the mean nDCG@10 difference (signs flipped at random, fixed seed)."""
    qrels = {str(i): q.qrels for i, q in enumerate(questions)}
    per = [
        runner.score({str(i): q.fused(*rule)[:10] for i, q in enumerate(questions)}, qrels)[1]
        for rule in (a, b)
    ]
    diffs = [per[0][k]["nDCG@10"] - per[1][k]["nDCG@10"] for k in qrels]
    observed = abs(statistics.fmean(diffs))
    rng = random.Random(0)  # noqa: S311 (a reproducible test, not a secret)
    rounds = 10000
    extreme = sum(
        abs(statistics.fmean(d if rng.random() < 0.5 else -d for d in diffs)) >= observed - 1e-12
        for _ in range(rounds)
    )
    return {
        "mean_difference": statistics.fmean(diffs),
        "better": sum(d > 0 for d in diffs),
        "worse": sum(d < 0 for d in diffs),
        "p_two_sided": (extreme + 1) / (rounds + 1),
    }


def branch_runs(questions: list[Question]) -> dict[str, float]:
    """Each branch alone, in its own rank order."""
    return {
        "vector": ndcg(questions, lambda q: q.vector_run),
        "lexical": ndcg(questions, lambda q: q.lexical_run),
    }


def objective(margins: list[float]) -> float:
    """The worst margin over the best branch first, the mean second (as fusion_evidence)."""
    return min(margins) + 0.5 * statistics.fmean(margins)


def key(setting: tuple[float, float]) -> str:
    """A grid point as a JSON key."""
    return f"{setting[0]:g},{setting[1]:g}"


def tuned(
    grid: dict[str, dict[str, float]], best: dict[str, float], names: tuple[str, ...]
) -> tuple[float, float]:
    """The grid point with the best objective over `names` (ties: the one nearer the shipped prior)."""
    points = [(b, f) for b in BASES for f in FACTORS]

    def score(p: tuple[float, float]) -> tuple[float, float]:
        got = objective([grid[n][key(p)] - best[n] for n in names])
        return (round(got, 6), -abs(p[0] - LENGTH[0]) - abs(p[1] - LENGTH[1]))

    return max(points, key=score)


def side(
    grid: dict[str, dict[str, float]],
    best: dict[str, float],
    names: tuple[str, ...],
    setting: tuple[float, float],
) -> dict[str, Any]:
    """A rule's margins over one side's collections and its objective there."""
    margins = {n: grid[n][key(setting)] - best[n] for n in names}
    return {
        "margins": margins,
        "objective": objective(list(margins.values())),
        "worst": min(margins.values()),
        "mean": statistics.fmean(margins.values()),
    }


def beats(rule: dict[str, Any], shipped: dict[str, Any]) -> bool:
    """Higher objective, and no collection more than MAX_LOSS below the shipped rule."""
    return rule["objective"] > shipped["objective"] and all(
        rule["margins"][n] >= shipped["margins"][n] - MAX_LOSS for n in rule["margins"]
    )


def replay(cache: Path, out: Path | None) -> None:
    """Every normalisation at every grid point on every collection, then the splits."""
    names = tuple(n for h in HALVES.values() for n in h)
    missing = [n for n in names if not (cache / f"{n}.json").exists()]
    assert not missing, f"not collected: {missing}"
    sets = {n: load(cache, n) for n in names + FRESH}
    alone = {n: branch_runs(qs) for n, qs in sets.items()}
    best = {n: max(b.values()) for n, b in alone.items()}
    points = [(b, f) for b in BASES for f in FACTORS]
    grid: dict[str, dict[str, dict[str, float]]] = {}
    for norm in NORMALISATIONS:
        grid[norm] = {
            n: {key(p): ndcg(qs, lambda q, p=p, m=norm: q.fused(m, p)) for p in points}
            for n, qs in sets.items()
        }
        print(f"{norm}: scored", flush=True)
    shipped_all = side(grid["best"], best, names, LENGTH)
    doc: dict[str, Any] = {
        "command": "python benchmarks/fusion_normalisation.py replay --cache DIR --json "
        "benchmarks/fusion_normalisation.json",
        "halves": HALVES,
        "first_round": FIRST_ROUND,
        "second_round": SECOND_ROUND,
        "fresh": FRESH,
        "max_loss": MAX_LOSS,
        "collections": {n: {**alone[n], "best": best[n]} for n in sets},
        "grid": grid,
        "splits": {},
        "named": {},
    }
    for label, (tune_on, report_on) in SPLITS.items():
        t_names, r_names = HALVES[tune_on], HALVES[report_on]
        shipped_t = side(grid["best"], best, t_names, LENGTH)
        shipped_r = side(grid["best"], best, r_names, LENGTH)
        doc["splits"][label] = {"shipped": {"tuned": shipped_t, "reported": shipped_r}, "rules": {}}
        print(
            f"split {label}: shipped objective {shipped_t['objective']:+.4f} / {shipped_r['objective']:+.4f}"
        )
        for norm in NORMALISATIONS:
            setting = tuned(grid[norm], best, t_names)
            t = side(grid[norm], best, t_names, setting)
            r = side(grid[norm], best, r_names, setting)
            won = beats(t, shipped_t) and beats(r, shipped_r)
            doc["splits"][label]["rules"][norm] = {
                "setting": setting,
                "tuned": t,
                "reported": r,
                "beats": won,
            }
            print(
                f"  {norm:11} {setting}  tuned {t['objective']:+.4f} (worst {t['worst']:+.4f})"
                f"  reported {r['objective']:+.4f} (worst {r['worst']:+.4f})  {'BEATS' if won else ''}",
                flush=True,
            )
    for norm in NORMALISATIONS:
        everywhere = tuned(grid[norm], best, names)
        if norm == FROZEN[0]:
            assert everywhere == FROZEN[1], "the frozen rule is no longer what the halves choose"
        for label, setting in (("equal", EQUAL), ("length", LENGTH), ("tuned on all", everywhere)):
            row = side(grid[norm], best, names, setting)
            row["setting"] = setting
            row["beats shipped"] = beats(row, shipped_all)
            doc["named"][f"{norm} / {label}"] = row
            cells = "  ".join(f"{n} {m:+.4f}" for n, m in row["margins"].items())
            print(f"{norm:11} {label:13} {setting}: {cells}  mean {row['mean']:+.4f}", flush=True)
    doc["frozen_vs_shipped"] = {}
    for n, qs in sets.items():
        doc["frozen_vs_shipped"][n] = paired(qs, FROZEN, ("best", LENGTH))
        c = doc["frozen_vs_shipped"][n]
        print(
            f"frozen vs shipped, {n}: {c['mean_difference']:+.4f}, better on {c['better']}, worse on "
            f"{c['worse']}, p {c['p_two_sided']:.3f}",
            flush=True,
        )
    # The fresh collections: the shipped rule against the frozen one, then every rule above for the
    # record (only the frozen one was decided on before they were built).
    doc["fresh_results"] = {}
    for n in FRESH:
        rows: dict[str, Any] = {}
        rules = {"shipped (best / length)": ("best", LENGTH), f"frozen ({FROZEN[0]})": FROZEN}
        for norm in NORMALISATIONS:
            rules[f"{norm} / equal"] = (norm, EQUAL)
            rules[f"{norm} / tuned on all"] = (norm, tuned(grid[norm], best, names))
            for label in SPLITS:
                rules[f"{norm} / split {label}"] = (norm, doc["splits"][label]["rules"][norm]["setting"])
        for label, (norm, setting) in rules.items():
            value = grid[norm][n][key(setting)]
            rows[label] = {"rule": norm, "setting": setting, "nDCG@10": value, "margin": value - best[n]}
        doc["fresh_results"][n] = {**alone[n], "best": best[n], "rules": rows}
        shipped, frozen = rows["shipped (best / length)"], rows[f"frozen ({FROZEN[0]})"]
        print(
            f"fresh {n}: vector {alone[n]['vector']:.4f} lexical {alone[n]['lexical']:.4f}"
            f"  shipped {shipped['nDCG@10']:.4f} ({shipped['margin']:+.4f})"
            f"  frozen {frozen['nDCG@10']:.4f} ({frozen['margin']:+.4f})",
            flush=True,
        )
    if out:
        out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out}")


def main() -> None:
    """collect or replay."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("step", choices=("collect", "replay", "statement"))
    parser.add_argument("names", nargs="*")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_intermixed_args()
    if args.step == "collect":
        for name in args.names:
            collect(name, args.cache)
    elif args.step == "statement":
        for name in args.names:
            through_statement(name, args.json)
    else:
        replay(args.cache, args.json)


if __name__ == "__main__":
    main()
