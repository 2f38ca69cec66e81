"""Start, share and stop the worker of one PGRECALL_HOME.

`ensure_worker` registers the calling process as a holder and starts the worker if its socket does
not answer, under the worker lock, so processes starting together start exactly one. The worker
prunes dead holders and exits a grace period after the last one left.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from pgrecall.config import Settings
from pgrecall.daemon import log_tail
from pgrecall.daemon import wait_gone as wait_gone
from pgrecall.embeddings.base import EmbeddingError
from pgrecall.embeddings.factory import expected_identity
from pgrecall.worker import (
    DEFAULT_GRACE_S,
    PROTOCOL_VERSION,
    ensure_worker_dir,
    holders_file,
    socket_path,
    worker_dir,
)

log = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0
_PING_TIMEOUT_S = 2.0
_MAX_LOG_BYTES = 5 * 1024 * 1024
_JSON = {"Content-Type": "application/json"}


# Settings the worker needs to build the same embedder as its starter. Passed explicitly in the
# child's environment: the starter may have built Settings from arguments rather than from env.
_FORWARDED = (
    "embedder",
    "embedding_url",
    "embedding_model",
    "embedding_dim",
    "embedding_timeout_s",
    "embedding_total_timeout_s",
    "embedding_prefix_mode",
    "embedding_retries",
    "embedding_batch_size",
    "embedding_threads",
    "detector",
)


def worker_env(settings: Settings, base: dict[str, str]) -> dict[str, str]:
    """The environment of a worker started for these settings: base plus the provider's settings."""
    import pgrecall

    env = dict(base)
    env["PGRECALL_HOME"] = str(Path(settings.home).expanduser().resolve())
    for name in _FORWARDED:
        key = f"PGRECALL_{name.upper()}"
        value = getattr(settings, name)
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    if settings.embedding_api_key is not None:
        env["PGRECALL_EMBEDDING_API_KEY"] = settings.embedding_api_key.get_secret_value()
    else:
        env.pop("PGRECALL_EMBEDDING_API_KEY", None)
    # The worker runs from its own directory and must import this very pgrecall, not whatever a
    # relative PYTHONPATH entry would resolve to there: put this package's root first, absolutely.
    root = str(Path(pgrecall.__file__).resolve().parent.parent)
    entries = [str(Path(p).resolve()) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([root, *entries]))
    return env


class WorkerUnavailableError(EmbeddingError):
    """The worker could not be reached, died mid-request, or refused the request."""


class NotRunningError(WorkerUnavailableError):
    """Nothing listens on the socket (safe to start a worker and retry: nothing was sent)."""


def http_client(path: Path) -> httpx.Client:
    """An HTTP client of the worker at `path` (thread-safe; keeps a few connections open)."""
    # As many connections as the worker admits from one process (more would be refused as busy:
    # they wait for a free one instead); idle ones are dropped before the worker's idle timeout
    # (10 s) could close one under a request.
    limits = httpx.Limits(max_connections=16, max_keepalive_connections=8, keepalive_expiry=5.0)
    # Plain HTTP on a unix socket: no TLS context (loading the CA bundle costs 7 MB and 0.2 s per
    # client), and no proxy from the environment, which would otherwise be sent these requests.
    transport = httpx.HTTPTransport(uds=str(path), limits=limits, verify=False)
    return httpx.Client(transport=transport, base_url="http://worker", trust_env=False)


def call(
    http: httpx.Client, route: str, payload: dict[str, Any] | None = None, *, timeout: float
) -> httpx.Response:
    """One request (GET without a payload, else POST of JSON); the 200 response.

    Raises NotRunningError if nothing accepts the connection, and WorkerUnavailableError if the
    exchange fails after connecting (the worker died, hung up or timed out) or the worker refused it.
    """
    try:
        if payload is None:
            response = http.get(route, timeout=timeout)
        else:
            body = json.dumps(payload, ensure_ascii=False).encode()
            response = http.post(route, content=body, timeout=timeout, headers=_JSON)
    except UnicodeEncodeError as exc:
        # A lone surrogate (from a broken decode upstream) has no UTF-8 form; no engine could embed it.
        raise WorkerUnavailableError(f"text is not valid Unicode: {exc.reason} at {exc.start}") from exc
    except httpx.ConnectError as exc:
        raise NotRunningError(f"no worker listens: {exc}", reason="connection refused") from exc
    except httpx.HTTPError as exc:
        reason = "timeout" if isinstance(exc, httpx.TimeoutException) else None
        raise WorkerUnavailableError(f"worker request {route} failed: {exc!r}", reason=reason) from exc
    if response.status_code != 200:
        try:
            reply = response.json()
            kind, error = reply["kind"], reply["error"]
        except (ValueError, KeyError, TypeError):
            kind, error = response.status_code, response.text[:200]
        raise WorkerUnavailableError(f"worker refused {route} ({kind}): {error}")
    return response


def home_of(settings: Settings) -> Path:
    """The resolved PGRECALL_HOME."""
    return Path(settings.home).expanduser().resolve()


def ping(path: Path | None, timeout: float = _PING_TIMEOUT_S) -> dict[str, Any] | None:
    """The worker's status reply, or None if nothing answers at path."""
    if path is None:
        return None
    with http_client(path) as http:
        try:
            status: dict[str, Any] = call(http, "/status", timeout=timeout).json()
        except (WorkerUnavailableError, ValueError):
            return None
    return status if status.get("ok") is True else None


def worker_status(settings: Settings) -> dict[str, Any] | None:
    """Status of the running worker of this home, or None (never starts one)."""
    return ping(socket_path(home_of(settings), create=False))


def _shutdown(path: Path, timeout: float) -> None:
    with http_client(path) as http, contextlib.suppress(WorkerUnavailableError):
        call(http, "/shutdown", {}, timeout=timeout)


def _spawn(settings: Settings, path: Path, grace_s: float) -> subprocess.Popen[bytes]:
    home = home_of(settings)
    wdir = worker_dir(home)
    model, dim = expected_identity(settings)
    options = {"--home": home, "--socket": path, "--grace-s": grace_s, "--model": model, "--dim": dim}
    cmd = [sys.executable, "-m", "pgrecall.worker", *(str(item) for pair in options.items() for item in pair)]
    log_file = wdir / "worker.log"
    with contextlib.suppress(OSError):
        # One previous log is kept; workers come and go with every CLI command.
        if log_file.stat().st_size > _MAX_LOG_BYTES:
            log_file.replace(log_file.with_suffix(".log.1"))
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            cwd=wdir,
            env=worker_env(settings, dict(os.environ)),
            # Its own session: a Ctrl-C or a closed terminal of the starter must not reach the worker,
            # which other processes share.
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(fd)
    # Reap it when it exits, so a long-lived starter does not collect zombies.
    threading.Thread(target=proc.wait, name="worker-reaper", daemon=True).start()
    return proc


def _serves(status: dict[str, Any], wanted: tuple[str, int]) -> bool:
    return status.get("protocol") == PROTOCOL_VERSION and (status.get("model"), status.get("dim")) == wanted


def ensure_worker(
    settings: Settings, *, grace_s: float = DEFAULT_GRACE_S, start_timeout_s: float = START_TIMEOUT_S
) -> Path:
    """Register this process as a holder and make sure the worker answers; its socket path.

    Returns as soon as the worker answers `status` (models load later, on first need or `warm`).
    """
    home = home_of(settings)
    ensure_worker_dir(home)
    holders = holders_file(home)
    with holders.locked():
        path = socket_path(home, create=True)
        assert path is not None
        holders.hold()
        status = ping(path)
        wanted = expected_identity(settings)
        if status is not None and _serves(status, wanted):
            return path
        if status is not None:
            # An older pgrecall's worker (the package was upgraded under running clients), or one
            # serving another model (PGRECALL_EMBEDDER changed): the newest configuration wins.
            log.info(
                "replacing worker %s (protocol %s, model %s; wanted %s)",
                status.get("pid"),
                status.get("protocol"),
                status.get("model"),
                wanted[0],
            )
            _shutdown(path, timeout=10)
            pid, started = status.get("pid"), status.get("started")
            if isinstance(pid, int) and isinstance(started, int | float):
                wait_gone(pid, float(started), 10)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # stale socket of a dead worker
        proc = _spawn(settings, path, grace_s)
        log.info("started model worker %d for %s", proc.pid, home)
        # Waited for under the lock: another starter must find this worker, not start a second one.
        deadline = time.monotonic() + start_timeout_s
        while time.monotonic() < deadline:
            if ping(path, timeout=1.0) is not None:
                return path
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    tail = log_tail(worker_dir(home) / "worker.log", 15)
    raise WorkerUnavailableError(
        f"the model worker did not start (log {worker_dir(home)}/worker.log):\n{tail}"
    )


def release(settings: Settings) -> None:
    """Unregister this process; the worker exits after its grace period if nobody else holds it."""
    home = home_of(settings)
    if not worker_dir(home).is_dir():
        return
    holders = holders_file(home)
    with holders.locked():
        holders.let_go()


def stop_worker(settings: Settings, timeout: float = 10.0) -> bool:
    """Ask the worker to exit now, whoever holds it; True once it is gone (or was not running)."""
    path = socket_path(home_of(settings), create=False)
    status = ping(path)
    if status is None or path is None:
        return True
    _shutdown(path, timeout)
    return wait_gone(int(status["pid"]), float(status["started"]), timeout)
