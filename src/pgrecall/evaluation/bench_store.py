"""The search bench's store on a throwaway embedded server, for the benchmark scripts that study one knob."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgrecall.db.database import register_vector_adapter
from pgrecall.evaluation.private_server import fresh_database, private_server
from pgrecall.evaluation.speed import load_store, warm_up
from pgrecall.evaluation.speed_inputs import BenchInputs, bench_inputs


@dataclass(frozen=True)
class BenchStore:
    """A loaded bench store: where it is, what it was built from, and what loading it cost."""

    url: str
    inputs: BenchInputs
    load: dict[str, Any]


@contextmanager
def temporary_bench_store(size: int, seed: int, name: str) -> Iterator[BenchStore]:
    """Build `pgrecall bench`'s store of `size` entries in database `name`; gone again on exit."""
    inputs = bench_inputs(size, seed)
    with private_server(name) as server:
        url = fresh_database(server, name)
        yield BenchStore(url, inputs, load_store(url, inputs.docs, inputs.vectors, seed))


def measure_on_bench_store(
    size: int,
    seed: int,
    name: str,
    measure: Callable[[psycopg.Connection[Any], BenchInputs], dict[str, Any]],
) -> dict[str, Any]:
    """Build the bench store, warm it up, run `measure` on it: its figures with the store's size and load."""
    started = time.perf_counter()
    with temporary_bench_store(size, seed, name) as bench:
        print(f"loaded {size} entries ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        inputs = bench.inputs
        with psycopg.connect(bench.url, row_factory=dict_row) as conn:
            register_vector_adapter(conn)
            warm_up(conn, inputs.queries, inputs.qvecs, inputs.scale)
            result = {
                "size": size,
                "queries": len(inputs.queries),
                "load": bench.load,
                **measure(conn, inputs),
            }
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    return result
