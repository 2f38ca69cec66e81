"""The text-search configurations the connected PostgreSQL has (pg_ts_config), read once at start."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pgrecall.domain.language import LanguageCatalog

SQL_TS_CONFIGS = "SELECT cfgname::text AS name FROM pg_catalog.pg_ts_config ORDER BY 1"


def read_catalog(pool: ConnectionPool[psycopg.Connection[dict[str, Any]]]) -> LanguageCatalog:
    """The languages this server can stem."""
    with pool.connection() as conn:
        rows = conn.execute(SQL_TS_CONFIGS).fetchall()
    return LanguageCatalog({r["name"] for r in rows})
