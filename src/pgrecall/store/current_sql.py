"""What "current" means in SQL (migration 0009), one definition for every statement that asks.

Fragments over an entries row alias; the alias is a constant of the calling statement, never input.
"""

from __future__ import annotations


def not_expired(alias: str) -> str:
    """The entry has no expiry, or it is still ahead."""
    return f"({alias}.expires_at IS NULL OR {alias}.expires_at > statement_timestamp())"


def not_superseded(alias: str) -> str:
    """No live entry of the owner (bound as %(owner)s) supersedes the entry."""
    return (
        f"NOT EXISTS (SELECT 1 FROM entries s WHERE s.owner = %(owner)s "
        f"AND s.supersedes = {alias}.id AND s.deleted_at IS NULL)"
    )
