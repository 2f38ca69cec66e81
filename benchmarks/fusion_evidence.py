"""Fusion weights from the question's evidence: collect each query's two branches once, replay weight rules.

Step 1 (slow, once per collection, kept under --cache DIR as <collection>.json): every query runs once
through the search service (one SQL statement, the bundled embedder, production branch limits of 50
each, rrf so that nothing is fused yet) and the union of both branches' candidates is kept with each
candidate's cosine, BM25 score, ranks and matched query terms, plus the statement's term count.

Step 2 (fast, offline): weight rules are replayed on those candidates, exactly as the statement fuses
(convex: w × the cosine on the model's scale + (1 − w) × BM25 / the best BM25 of the search; a hit one
branch did not return counts as that branch's weakest), and scored with ir-measures nDCG@10 as
`pgrecall eval` does. The rule family is `Query.weight` below, which mirrors the `evidence` and `weight`
CTEs the search statement had in commit 27a4ade (measured, not shipped: docs/fusion-evidence.md); the
split (tuned on / reported on) is fixed in SPLITS before any rule was scored. The replay of the old rule
gives the shipped statement's `pgrecall eval` figures, of the variant those of 27a4ade.

Run: python benchmarks/fusion_evidence.py collect --cache DIR NAME…   (one collection at a time)
     python benchmarks/fusion_evidence.py tune --cache DIR [--json benchmarks/fusion_evidence.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from fusion import captured_searches

from pgrecall.config import Settings
from pgrecall.embeddings import create_embedder
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.calibration import ModelScale
from pgrecall.evaluation import corpus, runner
from pgrecall.evaluation.dataset import BeirDataset, load_dataset
from pgrecall.evaluation.loader import Loaded
from pgrecall.store.search import SearchRow

HERE = Path(__file__).resolve().parent
SHARED = ("cranfield", "cisi")
OURS = (
    "debian-mixed",
    "debian-en",
    "debian-es",
    "debian-ja",
    "debian-zh",
    "debian-ko",
    "debian-it-sentences",
)
ALL = SHARED + OURS


def path_of(name: str) -> Path:
    """Where a collection lives."""
    return corpus.DEFAULT_DATA_DIR / name if name in SHARED else HERE / "collections" / name


def collection(name: str) -> tuple[Settings, Embedder, BeirDataset, dict[str, str]]:
    """A scratch home's settings (PGRECALL_HOME if set), the embedder, a collection and its queries."""
    home = Path(os.environ.get("PGRECALL_HOME") or tempfile.mkdtemp(prefix="pgrecall-fusion-"))
    settings = Settings(home=home)
    dataset = load_dataset(path_of(name))
    queries = {q: runner.clip_query(t) for q, t in dataset.evaluated_queries().items()}
    return settings, create_embedder(settings), dataset, queries


def candidate_row(r: SearchRow, loaded: Loaded) -> list[Any]:
    """One candidate as the cache keeps it (the replays read these fields by position)."""
    return [
        loaded.beir_of[str(r.id)],
        str(r.id),
        r.vec_rank,
        r.cos_sim,
        r.lex_rank,
        r.lex_score,
        len(r.matched),
    ]


def write_cache(
    name: str,
    cache: Path,
    model: str,
    scale: ModelScale,
    dataset: BeirDataset,
    queries: dict[str, str],
    candidates: dict[str, Any],
) -> None:
    """cache/<name>.json: the queries, their judgements, the model's scale and each query's candidates."""
    doc = {
        "embedder": model,
        "scale": {"unrelated": scale.unrelated, "related": scale.related},
        "queries": queries,
        "qrels": {q: dataset.qrels[q] for q in queries},
        "candidates": candidates,
    }
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    print(f"{name}: {len(candidates)} queries kept in {cache / (name + '.json')}", flush=True)


def collect(name: str, cache: Path) -> None:
    """Every query's two branches of one collection, into cache/<name>.json."""
    settings, embedder, dataset, queries = collection(name)
    out: dict[str, Any] = {}
    with captured_searches(settings, dataset, embedder, progress=True) as (rows_of, loaded, scale):
        for qid, text in queries.items():
            found = rows_of(text)
            out[qid] = {
                "terms": found.query_terms,
                "lexical_candidates": found.lexical_candidates,
                "rows": [candidate_row(r, loaded) for r in found.rows],
            }
    write_cache(name, cache, embedder.model, scale, dataset, queries, out)


# Fixed before any rule was scored on cranfield, cisi, debian-en, debian-mixed or debian-es (the
# CJK collections had been looked at while the rule family was explored): two directions over four
# collections, then the shipped rule from all four; what none of them saw is reported untouched.
SPLITS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "A": (("cranfield", "debian-ja"), ("debian-en", "debian-zh")),
    "B": (("debian-en", "debian-zh"), ("cranfield", "debian-ja")),
    "shipped": (("cranfield", "debian-ja", "debian-en", "debian-zh"), ()),
}
UNTOUCHED = ("cisi", "debian-ko", "debian-mixed", "debian-es")
# Built after the variant below was committed, never read before it was measured (issue 37, point 2).
FRESH = ("debian-it-sentences",)
# Each evidence's typical value (its median over the collected questions, rounded), so that a
# coefficient moves the weight away from the length prior only for an unusual question.
TYPICAL = {"agreement": 0.3, "vector_gap": 0.3, "lexical_gap": 0.65, "coverage": 0.75, "vector_top": 1.0}
GRID: dict[str, tuple[float, ...]] = {
    "base": (0.8, 0.9, 1.0, 1.1, 1.2),
    "factor": (0.0, 0.1, 0.2, 0.3),
    "agreement": (-4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0),
    "vector_gap": (-4.0, -2.0, 0.0, 2.0, 4.0, 8.0),
    "lexical_gap": (-8.0, -4.0, -2.0, 0.0, 2.0, 4.0),
    "coverage": (-4.0, -2.0, -1.0, 0.0, 1.0, 2.0),
    "vector_top": (-4.0, -2.0, -1.0, 0.0, 1.0, 2.0),
}
Rule = dict[str, float]
OLD: Rule = {"base": 1.0, "factor": 0.2}
FIRST_STUDY: Rule = {"base": 0.9, "factor": 0.1, "vector_top": -2.0}
VARIANT: Rule = OLD | {"vector_top": -2.0}


class Query:
    """One question's candidates, as arrays the replay fuses quickly."""

    def __init__(self, text: str, found: dict[str, Any], qrels: dict[str, int], scale: dict[str, float]):
        lo, hi = scale["unrelated"], scale["related"]
        rows = found["rows"]
        vec = sorted((r for r in rows if r[2] is not None), key=lambda r: r[2])
        lex = sorted((r for r in rows if r[4] is not None), key=lambda r: r[4])
        worst = min((r[3] for r in vec), default=None)
        best_lex = max((r[5] for r in lex), default=0.0)
        self.rows = rows
        self.qrels = qrels
        # As the statement: a hit without a cosine of its own counts as the vector branch's weakest.
        self.vec_part = [
            ((r[3] if r[3] is not None else worst) - lo) / (hi - lo)
            if (r[3] is not None or worst is not None)
            else 0.0
            for r in rows
        ]
        self.lex_part = [r[5] / best_lex if r[4] is not None and best_lex > 0 else 0.0 for r in rows]
        self.vector_run = [r[0] for r in vec]
        self.lexical_run = [r[0] for r in lex]
        top_v, top_l = {r[1] for r in vec[:10]}, {r[1] for r in lex[:10]}
        self.words = len(text.split())
        self.n_vec, self.n_lex = len(vec), len(lex)
        self.evidence = {
            "agreement": len(top_v & top_l) / max(1, min(10, len(vec), len(lex))),
            "vector_gap": (vec[0][3] - min(r[3] for r in vec[:10])) / (hi - lo) if vec else 0.0,
            "lexical_gap": 1.0 - min(r[5] for r in lex[:10]) / lex[0][5] if lex and lex[0][5] else 0.0,
            # The statement counts the terms of the best hit's language; the collected count is of
            # every searched language (the same for a query searched in one).
            "coverage": lex[0][6] / found["terms"] if lex and found["terms"] else 0.0,
            "vector_top": (vec[0][3] - lo) / (hi - lo) if vec else 0.0,
        }

    def weight(self, rule: Rule) -> float:
        """The cosine weight the rule gives this question (the `weight` CTE of 27a4ade)."""
        if self.n_lex == 0:
            return 1.0
        if self.n_vec == 0:
            return 0.0
        prior = min(0.9, max(0.1, rule["base"] / (1.0 + rule["factor"] * math.log1p(self.words))))
        z = math.log(prior / (1 - prior)) + sum(
            rule.get(name, 0.0) * (value - TYPICAL[name]) for name, value in self.evidence.items()
        )
        return min(0.95, max(0.05, 1.0 / (1.0 + math.exp(-z))))

    def fused(self, rule: Rule) -> list[str]:
        """BEIR ids by the convex score with the rule's weight, ties by entry id."""
        w = self.weight(rule)
        scores = [w * v + (1 - w) * x for v, x in zip(self.vec_part, self.lex_part, strict=True)]
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], self.rows[i][1]))
        return [self.rows[i][0] for i in order]


def load(cache: Path, name: str) -> list[Query]:
    """A collected collection's questions."""
    doc = json.loads((cache / f"{name}.json").read_text(encoding="utf-8"))
    return [
        Query(doc["queries"][q], found, doc["qrels"][q], doc["scale"])
        for q, found in doc["candidates"].items()
    ]


def ndcg(queries: list[Query], run_of: Any) -> float:
    """Mean nDCG@10 (ir-measures, as `pgrecall eval`) of the rankings run_of(query) gives."""
    run = {str(i): run_of(q)[:10] for i, q in enumerate(queries)}
    return float(runner.score(run, {str(i): q.qrels for i, q in enumerate(queries)})[0]["nDCG@10"])


def branches(queries: list[Query]) -> dict[str, float]:
    """Each branch alone."""
    return {
        "vector": ndcg(queries, lambda q: q.vector_run),
        "lexical": ndcg(queries, lambda q: q.lexical_run),
    }


def objective(margins: list[float]) -> float:
    """The worst margin over the best branch first, the mean second."""
    return min(margins) + 0.5 * statistics.fmean(margins)


def tune(sets: dict[str, list[Query]], best: dict[str, float]) -> Rule:
    """Coordinate search over GRID from the old rule, at most three passes."""

    def score(rule: Rule) -> float:
        return objective([ndcg(qs, lambda q: q.fused(rule)) - best[n] for n, qs in sets.items()])

    rule, current = dict(OLD), score(OLD)
    for _ in range(3):
        moved = False
        for key, values in GRID.items():
            for value in values:
                trial = rule | {key: value}
                got = score(trial)
                if got > current + 1e-9:
                    rule, current, moved = trial, got, True
        if not moved:
            break
    return {k: v for k, v in rule.items() if v or k in OLD}


def tune_all(cache: Path, out: Path | None) -> None:
    """Every split: tuned, then reported on its own collections and on the others."""
    names = [n for n in ALL if (cache / f"{n}.json").exists()]
    sets = {n: load(cache, n) for n in names}
    alone = {n: branches(qs) for n, qs in sets.items()}
    best = {n: max(b.values()) for n, b in alone.items()}
    doc: dict[str, Any] = {"collections": {}, "splits": {}, "typical": TYPICAL, "grid": GRID}
    for n in names:
        old = ndcg(sets[n], lambda q: q.fused(OLD))
        doc["collections"][n] = {**alone[n], "best": best[n], "old": old, "old_margin": old - best[n]}
    for label, (tuned_on, reported_on) in SPLITS.items():
        if not all(n in sets for n in tuned_on):
            print(f"split {label}: not every collection of {tuned_on} was collected", flush=True)
            continue
        rule = tune({n: sets[n] for n in tuned_on}, best)
        rows = {}
        for n in names:
            value = ndcg(sets[n], lambda q, r=rule: q.fused(r))
            role = "tuned" if n in tuned_on else ("reported" if n in reported_on else "other")
            rows[n] = {"nDCG@10": value, "margin": value - best[n], "role": role}
        doc["splits"][label] = {
            "tuned_on": tuned_on,
            "reported_on": reported_on,
            "rule": rule,
            "results": rows,
        }
        print(f"split {label}: tuned on {', '.join(tuned_on)} -> {rule}")
        for n, row in rows.items():
            old = doc["collections"][n]["old_margin"]
            print(f"  {n:13} {row['role']:8} old {old:+.4f}  new {row['margin']:+.4f}", flush=True)
    # The rules compared on every collection: the length rule (shipped), the first study's rule
    # (re-fitted prior + vector_top: lost on CISI) and the variant frozen in commit 27a4ade before
    # debian-it-sentences was built (the old prior + the vector_top term).
    named: dict[str, Rule] = {"old": OLD, "first study": FIRST_STUDY, "variant": VARIANT}
    doc["named"] = {}
    for label, rule in named.items():
        value = {n: ndcg(sets[n], lambda q, r=rule: q.fused(r)) for n in names}
        row = {n: value[n] - best[n] for n in names}
        mean = statistics.fmean(row.values())
        doc["named"][label] = {"rule": rule, "nDCG@10": value, "margins": row, "mean_margin": mean}
        print(f"{label:26} " + "  ".join(f"{n} {v:+.4f}" for n, v in row.items()) + f"  mean {mean:+.4f}")
    if out:
        out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {out}")


def main() -> None:
    """collect or tune."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("collect", "tune"))
    parser.add_argument("names", nargs="*")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_intermixed_args()
    if args.step == "collect":
        for name in args.names or ALL:
            collect(name, args.cache)
    else:
        tune_all(args.cache, args.json)


if __name__ == "__main__":
    main()
