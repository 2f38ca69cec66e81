"""Presenting an evaluation: a text table, the JSON file, and a grouped bar chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pgrecall.evaluation.runner import MEASURE_NAMES

# Labels for the table and chart: ir-measures' RR@10 is what BEIR papers call MRR@10.
LABELS = {"nDCG@10": "nDCG@10", "R@100": "Recall@100", "RR@10": "MRR@10"}


def _fmt_ms(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, (int, float)) else "-"


def table(doc: dict[str, Any]) -> str:
    """The results as an aligned text table, one row per mode and one for bm25s, then the targets."""
    ds, emb = doc["dataset"], doc["embedder"]
    lines = [
        f"{ds['name']}: {doc['load']['loaded']} documents, {ds['queries_evaluated']} queries, "
        f"embedder {emb['model']}",
    ]
    lines.append(fusion_line(doc))
    header = (
        f"{'':11}" + "".join(f"{LABELS[m]:>12}" for m in MEASURE_NAMES) + f"{'mean ms':>10}{'p95 ms':>10}"
    )
    lines += [header, "-" * len(header)]
    for name, result in doc["results"].items():
        metrics = result["metrics"]
        lat = result.get("latency", {})
        mean = lat.get("mean_ms", lat.get("mean_ms_batched"))
        p95 = lat.get("p95_ms")
        lines.append(
            f"{name:11}"
            + "".join(f"{metrics[m]:>12.4f}" for m in MEASURE_NAMES)
            + f"{_fmt_ms(mean):>10}{_fmt_ms(p95):>10}"
        )
    lines.append(
        "latency: one whole SearchService.search call (query embedding + SQL); "
        "bm25s: in-memory batch, per query"
    )
    for target in doc["targets"].values():
        verdict = "met" if target["met"] else "MISSED"
        ratio = target.get("ratio")
        lines.append(f"target {target['rule']}: {verdict} (ratio {ratio})")
    load = doc["load"]
    lines.append(
        f"vectors: {load['embedded']} embedded, {load['cached']} from the cache ({load['cache_path']}); "
        f"skipped documents: {sum(len(v) for v in load['skipped'].values())}"
    )
    return "\n".join(lines)


def fusion_line(doc: dict[str, Any]) -> str:
    """How hybrid fused its branches in this evaluation, in one line."""
    fusion = doc["settings"].get("fusion", {})
    used = doc["results"].get("hybrid", {}).get("fusion_used", {})
    scale = fusion.get("model_scale")
    on_scale = (
        f", cosine scale {scale['unrelated']:.3f} (unrelated) to {scale['related']:.3f} (related)"
        if scale
        else ""
    )
    weight = fusion.get("vector_weight") or {}
    rule = f"{weight['base']} / (1 + {weight['length_factor']} ln(1 + words))" if weight else "-"
    if "code_cap" in weight:
        rule += f", at most {weight['code_cap']} naming code"
    lexical = "; BM25 over its list's mean ± 3 sd" if "rule" in fusion else ""
    return (
        f"fusion: {fusion.get('configured', 'rrf')} (vector weight {rule}{on_scale}{lexical}); "
        f"hybrid queries by fusion used: {used or '-'}"
    )


SUMMARY_SYSTEMS = ("hybrid", "hybrid_rrf", "vector", "lexical", "bm25s")


def summary(docs: list[dict[str, Any]]) -> str:
    """One row per collection: nDCG@10 of hybrid, hybrid with rrf, each branch and bm25s, and the margin."""
    header = f"{'collection':18}" + "".join(f"{s:>11}" for s in SUMMARY_SYSTEMS) + f"{'margin':>9}  target"
    lines = ["nDCG@10 per collection (margin: hybrid − max(vector, lexical))", header, "-" * len(header)]
    for doc in docs:
        results = doc["results"]
        cells = "".join(
            f"{results[s]['metrics']['nDCG@10']:>11.4f}" if s in results else f"{'-':>11}"
            for s in SUMMARY_SYSTEMS
        )
        target = doc["targets"].get("hybrid_vs_best_single")
        margin = f"{target['margin']:>+9.4f}" if target else f"{'-':>9}"
        verdict = ("met" if target["met"] else "MISSED") if target else "-"
        lines.append(f"{doc['dataset']['name'][:18]:18}{cells}{margin}  {verdict}")
    return "\n".join(lines)


def plot_collections(docs: list[dict[str, Any]], path: Path) -> None:
    """nDCG@10 per collection: one group per collection, one bar per system."""
    systems = [s for s in SUMMARY_SYSTEMS if any(s in d["results"] for d in docs)]
    series = {
        name: [d["results"][name]["metrics"]["nDCG@10"] if name in d["results"] else 0.0 for d in docs]
        for name in systems
    }
    fusion = docs[0]["settings"].get("fusion", {}).get("configured", "rrf")
    _grouped_bars(
        [d["dataset"]["name"] for d in docs],
        series,
        title=f"pgrecall eval: hybrid ({fusion}) vs hybrid (rrf), each branch and bm25s",
        ylabel="nDCG@10",
        top=1.1,
        path=path,
        width_in=max(7, 3 * len(docs)),
        upright_labels=False,
    )


def plot(doc: dict[str, Any], path: Path) -> None:
    """A grouped bar chart: one group per measure, one bar per mode and bm25s, values on the bars."""
    series = {name: [r["metrics"][m] for m in MEASURE_NAMES] for name, r in doc["results"].items()}
    highest = max(v for values in series.values() for v in values)
    ds = doc["dataset"]
    counts = f"{doc['load']['loaded']} docs, {ds['queries_evaluated']} queries"
    _grouped_bars(
        [LABELS[m] for m in MEASURE_NAMES],
        series,
        title=f"pgrecall eval: {ds['name']} ({counts}), {doc['embedder']['model']}",
        ylabel="score",
        # Head room for the value labels above the tallest bar.
        top=max(0.1, min(1.12, highest * 1.18)),
        path=path,
    )


def _grouped_bars(
    groups: list[str],
    series: dict[str, list[float]],
    *,
    title: str,
    ylabel: str,
    top: float,
    path: Path,
    width_in: float = 9,
    upright_labels: bool = True,
) -> None:
    import matplotlib

    # Agg: no display needed (servers, CI); set before pyplot is imported.
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(width_in, 5), dpi=120)
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, values, width * 0.95, label=name)
        labels = [f"{v:.3f}" for v in values]
        ax.bar_label(
            bars,
            labels=labels,
            fontsize=8 if upright_labels else 7,
            padding=2,
            rotation=0 if upright_labels else 90,
        )
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, top)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), fontsize=9, ncols=len(series), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
