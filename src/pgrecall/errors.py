"""Typed exceptions for failures the caller can act on."""

from __future__ import annotations


class PgrecallError(Exception):
    """Base class of every error pgrecall raises on purpose."""


class InvalidInputError(PgrecallError, ValueError):
    """The caller's input breaks a rule; the message names the field and the rule."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


class NotFoundError(PgrecallError, LookupError):
    """No live entry with that id for this owner."""


class DatabaseUnavailableError(PgrecallError):
    """PostgreSQL could not be started or reached."""


class SchemaNotAtHeadError(PgrecallError):
    """The database schema is not at the revision this code needs; the message says what to run."""


class SchemaChangeRefusedError(PgrecallError):
    """A migration refused to run on this database; the message says what to do first."""


class ConfigurationError(PgrecallError, ValueError):
    """A setting is missing or inconsistent; the message names the PGRECALL_ variable."""
