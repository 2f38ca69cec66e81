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
    """Command-line options of the worker."""
    parser = argparse.ArgumentParser(prog="python -m pgrecall.worker", description=__doc__)
    parser.add_argument("--home", type=Path, required=True, help="PGRECALL_HOME this worker serves")
    parser.add_argument("--socket", type=Path, default=None, help="socket path (default: from --home)")
    parser.add_argument("--model", default=None, help="expected model identity (default: from settings)")
    parser.add_argument("--dim", type=int, default=None, help="expected vector length (with --model)")
    parser.add_argument("--grace-s", type=float, default=10.0, help="stay this long after the last holder")
    parser.add_argument("--prune-interval-s", type=float, default=1.0, help="seconds between holder checks")
    parser.add_argument("--query-cap", type=int, default=64, help="most query texts per micro-batch")
    parser.add_argument("--unit-chars", type=int, default=2000, help="short passages grouped up to this")
    parser.add_argument(
        "--read-timeout-s",
        type=float,
        default=10.0,
        help="idle wait for a request, and time to send one whole",
    )
    parser.add_argument("--max-per-peer", type=int, default=16, help="connections one process may hold")
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
