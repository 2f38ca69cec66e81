"""`pgrecall bench`: search speed at scale against the plain anchor CTE, as JSON and a plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from pgrecall.cli.common import fail

_MODES = ("hybrid", "vector", "lexical", "hybrid_filtered", "vector_filtered", "lexical_filtered")


def plot_benchmark(result: dict[str, Any], out: Path) -> None:
    """Grouped bars per store size: p50/p95 of each mode, pgrecall vs the anchor CTE (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(result["sizes"])
    fig, axes = plt.subplots(1, len(sizes), figsize=(7 * len(sizes), 5), squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        latency = result["sizes"][size]["latency"]
        modes = [m for m in _MODES if m in latency]
        xs = range(len(modes))
        width = 0.2
        series = [
            ("pgrecall p50", [latency[m]["search_ms"]["p50"] for m in modes], -1.5),
            ("pgrecall p95", [latency[m]["search_ms"]["p95"] for m in modes], -0.5),
            ("anchor p50", [latency[m]["anchor_ms"]["p50"] for m in modes], 0.5),
            ("anchor p95", [latency[m]["anchor_ms"]["p95"] for m in modes], 1.5),
        ]
        for label, values, shift in series:
            bars = ax.bar([x + shift * width for x in xs], values, width, label=label)
            ax.bar_label(bars, fmt="%.1f", fontsize=6, rotation=90, padding=2)
        ax.axhline(15, color="red", linestyle="--", linewidth=0.8, label="15 ms goal")
        ax.set_yscale("log")
        ax.set_xticks(list(xs), [m.replace("_", "\n") for m in modes], fontsize=8)
        recall = result["sizes"][size].get("hnsw_recall_at_10", {})
        ax.set_title(f"{int(size):,} entries — HNSW recall@10 {recall.get('unfiltered', '?')}")
        ax.set_ylabel("search statement latency (ms)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def bench(
    entries: Annotated[str, typer.Option(help="Comma-separated store sizes.")] = "10000,100000",
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure here.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write a PNG comparing modes and the anchor.")] = None,
    ef_sweep: Annotated[
        str,
        typer.Option(help="Also measure HNSW recall@10 at these comma-separated ef_search values."),
    ] = "",
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Folder with the BEIR collections cranfield/ and cisi/ (default: $PGRECALL_BENCH_DATA, "
            "else the copies shipped with pgrecall)."
        ),
    ] = None,
    pins_only: Annotated[
        bool,
        typer.Option(
            "--pins-only", help="Only pinned retrieval (20 hashes), over stores of texts without vectors."
        ),
    ] = False,
) -> None:
    """Build reproducible stores of N real-text entries on a private embedded server and time search.

    Reports per N: import throughput, HNSW build time, p50/p95/p99 of the search statement for
    hybrid, vector and lexical (unfiltered and with a 1%-selective tag filter), HNSW recall@10
    against exact search, write latency, pinned retrieval of 20 hashes, and the same latencies of
    the plain anchor CTE (vector + ts_rank_cd over plainto_tsquery('simple'), 50 per branch,
    k = 60) as ratios.
    """
    from pgrecall.evaluation import corpus
    from pgrecall.evaluation.speed import run_search_benchmark

    corpus.set_data_dir(data_dir)

    try:
        sizes = [int(x) for x in entries.split(",") if x.strip()]
    except ValueError:
        fail("--entries: a comma-separated list of integers, e.g. 10000,100000")
    if not sizes or min(sizes) < 100:
        fail("--entries: every size must be at least 100")
    if pins_only:
        from pgrecall.evaluation.speed import run_pins_benchmark

        pins = run_pins_benchmark(sizes, json_out, progress=lambda line: typer.echo(line, err=True))
        typer.echo(json.dumps(pins, indent=2, default=str))
        return
    try:
        sweep = [int(x) for x in ef_sweep.split(",") if x.strip()]
    except ValueError:
        fail("--ef-sweep: a comma-separated list of integers, e.g. 400,800")
    if any(not 10 <= ef <= 1000 for ef in sweep):
        fail("--ef-sweep: every value must be between 10 and 1000 (pgvector's range)")
    result = run_search_benchmark(
        sizes, json_out, progress=lambda line: typer.echo(line, err=True), ef_sweep=sweep
    )
    if plot is not None:
        plot_benchmark(result, plot)
    typer.echo(json.dumps(result, indent=2, default=str))


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("bench")(bench)
