"""pgvector's psycopg adapter: numpy arrays in and out, and no harm where the type does not exist yet."""

from __future__ import annotations

import numpy as np
import psycopg
from psycopg.pq import TransactionStatus

from pgrecall.db.database import register_vector_adapter
from pgrecall.store.entries import as_vector


def test_a_database_before_the_vector_extension_keeps_a_usable_connection(empty_db_url: str) -> None:
    with psycopg.connect(empty_db_url) as conn:
        assert not register_vector_adapter(conn)
        assert conn.info.transaction_status == TransactionStatus.IDLE
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_vectors_go_out_and_come_back_as_float32_arrays(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        assert register_vector_adapter(conn)
        sent = as_vector([0.1, -2.5, 3.0, 1e-7])
        assert sent is not None
        # The stored numbers are the float4 the text form '[0.1,-2.5,3,1e-07]' gave.
        text = conn.execute("SELECT %s::vector::text", (sent,)).fetchone()
        assert text == ("[0.1,-2.5,3,1e-07]",)
        row = conn.execute("SELECT %s::vector", (sent,), binary=True).fetchone()
        assert row is not None
        back = row[0]
        assert isinstance(back, np.ndarray) and back.dtype == np.float32
        assert np.array_equal(back, sent)
