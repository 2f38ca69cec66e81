"""Fusion weights from the question's evidence: collect each query's two branches once, replay weight rules.

Step 1 (slow, once per collection, kept under --cache DIR as <collection>.json): every query runs once
through the search service (one SQL statement, the bundled embedder, production branch limits of 50
each, rrf so that nothing is fused yet) and the union of both branches' candidates is kept with each
candidate's cosine, BM25 score, ranks and matched query terms, plus the statement's term count.

Step 2 (fast, offline): weight rules are replayed on those candidates, exactly as the statement fuses
(convex: w × the cosine on the model's scale + (1 − w) × BM25 / the best BM25 of the search; a hit one
branch did not return counts as that branch's weakest), and scored with ir-measures nDCG@10 as
`pgrecall eval` does. The rule family and its parameters are in `evidence_weight` below, which mirrors
store/search_sql.py's `evidence` CTE; the split (tuned on / reported on) is fixed in SPLITS before any
rule was scored.

Run: python benchmarks/fusion_evidence.py collect --cache DIR NAME…   (one collection at a time)
     python benchmarks/fusion_evidence.py tune --cache DIR [--json benchmarks/fusion_evidence.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pgrecall.config import Settings
from pgrecall.embeddings import create_embedder
from pgrecall.embeddings.cache import CachedQueryEmbedder
from pgrecall.evaluation import corpus, runner
from pgrecall.evaluation.dataset import load_dataset
from pgrecall.evaluation.pipeline import OWNER, loaded_store
from pgrecall.services.search import SearchOptions, SearchService
from pgrecall.store.search import SearchParams, SearchRows, Tuning

HERE = Path(__file__).resolve().parent
SHARED = ("cranfield", "cisi")
OURS = ("debian-mixed", "debian-en", "debian-es", "debian-ja", "debian-zh", "debian-ko")
ALL = SHARED + OURS


def path_of(name: str) -> Path:
    """Where a collection lives."""
    return corpus.DEFAULT_DATA_DIR / name if name in SHARED else HERE / "collections" / name


class CapturingStore(runner.DepthStore):
    """The depth store, keeping the statement's rows of the last search (entry ids included)."""

    last: SearchRows | None = None

    def search(self, params: SearchParams) -> SearchRows:
        """Run the statement and keep its rows."""
        self.last = super().search(params)
        return self.last


def collect(name: str, cache: Path) -> None:
    """Every query's two branches of one collection, into cache/<name>.json."""
    home = Path(os.environ.get("PGRECALL_HOME") or tempfile.mkdtemp(prefix="pgrecall-fusion-"))
    settings = Settings(home=home)
    embedder = create_embedder(settings)
    dataset = load_dataset(path_of(name))
    queries = {q: runner.clip_query(t) for q, t in dataset.evaluated_queries().items()}
    out: dict[str, Any] = {}
    with loaded_store(settings, dataset, embedder, progress=True) as (app, scoped, loaded):
        assert app.pool is not None
        scale = app.search.model_scale()
        assert scale is not None, "the model's cosine scale could not be measured"
        service = SearchService(scoped, app.pool, app.catalog, CachedQueryEmbedder(embedder), tuning=Tuning())
        # Statement LIMIT 100 ≥ 50 + 50: every candidate of both branches comes back.
        store = service.store = CapturingStore(app.pool, 100)
        for qid, text in queries.items():
            service.search(OWNER, text, top_k=10, options=SearchOptions(fusion="rrf"))
            found = store.last
            assert found is not None
            out[qid] = {
                "terms": found.query_terms,
                "lexical_candidates": found.lexical_candidates,
                "rows": [
                    [
                        loaded.beir_of[str(r.id)],
                        str(r.id),
                        r.vec_rank,
                        r.cos_sim,
                        r.lex_rank,
                        r.lex_score,
                        len(r.matched),
                    ]
                    for r in found.rows
                ],
            }
    doc = {
        "embedder": embedder.model,
        "scale": {"unrelated": scale.unrelated, "related": scale.related},
        "queries": queries,
        "qrels": {q: dataset.qrels[q] for q in queries},
        "candidates": out,
    }
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    print(f"{name}: {len(out)} queries kept in {cache / (name + '.json')}", flush=True)


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


if __name__ == "__main__":
    main()
