"""Rules of what is current: when an entry expires, and which entry supersedes which."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pgrecall.domain.activity import time_or_span
from pgrecall.errors import InvalidInputError

# How far a supersedes chain is followed (get_entry, the cycle check): chains are short in
# practice; the bound keeps a corrupted or imported loop from running away.
MAX_CHAIN_DEPTH = 50
MAX_EXPIRY_YEARS = 100

_EXPIRY_RULE = (
    'an ISO 8601 time (e.g. 2027-01-31T00:00:00Z) or a duration from now: 30m, 24h, 7d, 2w; "" clears it'
)
_MAX_AHEAD = timedelta(days=365 * MAX_EXPIRY_YEARS)


def parse_expiry(value: str | datetime, now: datetime) -> datetime:
    """When an entry expires: an ISO 8601 time (no offset = UTC) or a duration after `now`."""
    given: datetime | timedelta | None
    if isinstance(value, datetime):
        given = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    else:
        given = time_or_span(value, "expires_at", _EXPIRY_RULE)
    if given is None:
        raise InvalidInputError("expires_at", f"must be {_EXPIRY_RULE}")
    if isinstance(given, timedelta):
        if given > _MAX_AHEAD:
            raise InvalidInputError("expires_at", f"at most {MAX_EXPIRY_YEARS} years ahead")
        return now + given
    try:
        too_far = given - now > _MAX_AHEAD
    except OverflowError:
        too_far = True
    if too_far:
        raise InvalidInputError("expires_at", f"at most {MAX_EXPIRY_YEARS} years ahead")
    return given


@dataclass(frozen=True)
class ChainLink:
    """One entry in a supersedes chain, `depth` steps from the entry asked about."""

    id: str
    title: str | None
    depth: int
    created_at: datetime
    deleted: bool
    expired: bool
