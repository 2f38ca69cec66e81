"""The database: connection pool, the embedded PostgreSQL, and schema migrations (Alembic)."""
