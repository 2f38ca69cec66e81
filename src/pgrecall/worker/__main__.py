"""`python -m pgrecall.worker --home DIR`: run the model worker of one PGRECALL_HOME."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pgrecall.worker.server import Limits, WorkerOptions, run

if TYPE_CHECKING:
    from pgrecall.config import Settings

# Test-only: seconds the embedder load sleeps first, so tests can watch the worker while it loads.
TEST_LOAD_DELAY_ENV = "PGRECALL_WORKER_TEST_LOAD_DELAY_S"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options of the worker; their defaults are WorkerOptions' and Limits'."""
    parser = argparse.ArgumentParser(prog="python -m pgrecall.worker", description=__doc__)
    add = parser.add_argument
    add("--home", type=Path, required=True, help="PGRECALL_HOME this worker serves")
    add("--socket", type=Path, default=None, help="socket path (default: from --home)")
    add("--model", default=None, help="expected model identity (default: from settings)")
    add("--dim", type=int, default=None, help="expected vector length (with --model)")
    add("--grace-s", type=float, default=WorkerOptions.grace_s, help="stay this long after the last holder")
    add(
        "--prune-interval-s", type=float, default=WorkerOptions.prune_interval_s, help="between holder checks"
    )
    add("--query-cap", type=int, default=WorkerOptions.query_cap, help="most query texts per micro-batch")
    add("--unit-chars", type=int, default=WorkerOptions.unit_chars, help="short passages grouped up to this")
    add(
        "--read-timeout-s",
        type=float,
        default=Limits.read_timeout_s,
        help="idle wait, and time to send a request",
    )
    add("--max-per-peer", type=int, default=Limits.max_per_peer, help="connections one process may hold")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s worker[%(process)d] %(levelname)s %(name)s: %(message)s"
    )
    # libgomp reads this once; passive waiting keeps idle OpenMP threads off the cores (see local.py).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    home = args.home.expanduser().resolve()

    def settings() -> Settings:
        from pgrecall.config import Settings

        return Settings(home=home)

    if args.model is not None and args.dim is not None:
        # Given by the starter, which computed it from the same settings: saves importing pydantic,
        # numpy and httpx before the socket answers. The load thread still checks the real provider.
        identity: tuple[str, int] = (args.model, args.dim)
    else:
        from pgrecall.embeddings.factory import expected_identity

        identity = expected_identity(settings())
    options = WorkerOptions(
        home=home,
        socket=args.socket,
        grace_s=args.grace_s,
        prune_interval_s=args.prune_interval_s,
        load_delay_s=float(os.environ.get(TEST_LOAD_DELAY_ENV, "0") or 0),
        query_cap=args.query_cap,
        unit_chars=args.unit_chars,
        limits=Limits(read_timeout_s=args.read_timeout_s, max_per_peer=args.max_per_peer),
    )
    return run(options, settings, identity)


if __name__ == "__main__":
    sys.exit(main())
