"""Alembic operations behind `pgrecall migrate`, and the start-up schema check."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import psycopg
import sqlalchemy.exc
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.script.revision import RevisionError
from alembic.util import CommandError
from sqlalchemy import create_engine, pool

from pgrecall.db.conninfo import describe_failure
from pgrecall.errors import (
    DatabaseUnavailableError,
    InvalidInputError,
    SchemaChangeRefusedError,
    SchemaNotAtHeadError,
)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def _sqlalchemy_url(url: str) -> str:
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    return "postgresql+psycopg://" + url[len("postgresql://") :]


@contextmanager
def _reachable(url: str, revision: str | None = None) -> Iterator[None]:
    # Alembic surfaces a down server or an unknown revision as a traceback; operators need one line.
    try:
        yield
    except sqlalchemy.exc.OperationalError as exc:
        reason = str(exc.orig) if exc.orig else str(exc)
        raise DatabaseUnavailableError(describe_failure(reason, url)) from exc
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailableError(describe_failure(str(exc), url)) from exc
    except sqlalchemy.exc.DBAPIError as exc:
        # A migration's own refusal (RAISE EXCEPTION in its SQL): its message says what to run.
        if isinstance(exc.orig, psycopg.errors.RaiseException):
            raise SchemaChangeRefusedError(str(exc.orig).strip().splitlines()[0]) from exc
        raise
    except (CommandError, RevisionError) as exc:
        if revision is None:
            raise
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidInputError(
            "revision", f"{revision!r} cannot be used: {detail} (see: pgrecall migrate history)"
        ) from exc


def alembic_config(url: str, stdout: TextIO | None = None) -> Config:
    """An Alembic Config pointing at the migrations shipped inside the package."""
    cfg = Config(stdout=stdout) if stdout is not None else Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["url"] = url
    return cfg


def head_revision() -> str:
    """The newest revision this code ships."""
    head = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
    assert head is not None
    return head


@contextmanager
def _quiet_alembic() -> Iterator[None]:
    # Reading the revision makes Alembic log "Context impl PostgresqlImpl." and "Will assume
    # transactional DDL." at INFO: noise at every start of every process, nothing was changed.
    logger = logging.getLogger("alembic")
    before = logger.level
    if logger.getEffectiveLevel() < logging.WARNING:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(before)


def current_revision(url: str) -> str | None:
    """The revision the database is at (None for an empty database)."""
    engine = create_engine(_sqlalchemy_url(url), poolclass=pool.NullPool)
    try:
        with _quiet_alembic(), _reachable(url), engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


# One schema change at a time per database. Servers started together after an upgrade of pgrecall
# (one per window, all on the same embedded PostgreSQL) all find the schema behind; unserialised,
# each ran the migration, and all but the first failed (a deadlock, or Alembic finding the version
# row already moved) and served "database: not available" until restarted. Each waits here instead,
# then Alembic reads the revision afresh and finds nothing left to do. A session lock: released
# when its connection closes, also if the process dies.
_SCHEMA_LOCK = "SELECT pg_advisory_lock(hashtextextended('pgrecall schema change', 0))"


@contextmanager
def _schema_lock(url: str) -> Iterator[None]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(_SCHEMA_LOCK)
        yield


def upgrade(url: str, revision: str = "head") -> None:
    """Move the schema forward to `revision`."""
    with _reachable(url, revision), _schema_lock(url):
        command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    """Move the schema back to `revision` ('base' drops everything pgrecall made)."""
    with _reachable(url, revision), _schema_lock(url):
        command.downgrade(alembic_config(url), revision)


def stamp(url: str, revision: str) -> None:
    """Record `revision` as current without running migrations."""
    with _reachable(url, revision), _schema_lock(url):
        command.stamp(alembic_config(url), revision)


def history() -> list[tuple[str, str | None, str]]:
    """(revision, down_revision, message) from oldest to newest."""
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    revs = list(script.walk_revisions("base", "heads"))
    revs.reverse()
    out: list[tuple[str, str | None, str]] = []
    for rev in revs:
        down = rev.down_revision
        out.append((rev.revision, down if isinstance(down, str) or down is None else ",".join(down), rev.doc))
    return out


def require_head(url: str, *, embedded: bool, migrate_command: str = "pgrecall migrate upgrade head") -> None:
    """Raise SchemaNotAtHeadError unless the database is at head; an embedded database is upgraded instead."""
    current = current_revision(url)
    head = head_revision()
    if current == head:
        return
    if embedded:
        upgrade(url, "head")
        return
    where = "an empty database" if current is None else f"revision {current}"
    raise SchemaNotAtHeadError(
        f"the database is at {where}, this pgrecall needs revision {head}. "
        f"Run: PGRECALL_DATABASE_URL=<the same URL> {migrate_command}"
    )
