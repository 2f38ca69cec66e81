"""Rules of what is current: when an entry expires, and which entry supersedes which."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pgrecall.errors import InvalidInputError

# How far a supersedes chain is followed (get_entry, the cycle check): chains are short in
# practice; the bound keeps a corrupted or imported loop from running away.
MAX_CHAIN_DEPTH = 50
MAX_EXPIRY_YEARS = 100

_DURATION = re.compile(r"(\d{1,6})\s*([mhdw])")
_UNIT = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
_EXPIRY_RULE = (
    'an ISO 8601 time (e.g. 2027-01-31T00:00:00Z) or a duration from now: 30m, 24h, 7d, 2w; "" clears it'
)


def parse_expiry(value: str | datetime, now: datetime) -> datetime:
    """When an entry expires: an ISO 8601 time (no offset = UTC) or a duration after `now`."""
    if isinstance(value, datetime):
        moment = value
    else:
        text = value.strip().lower() if isinstance(value, str) else ""
        if not text:
            raise InvalidInputError("expires_at", f"must be {_EXPIRY_RULE}")
        duration = _DURATION.fullmatch(text)
        if duration is not None:
            span = int(duration.group(1)) * _UNIT[duration.group(2)]
            if span > timedelta(days=365 * MAX_EXPIRY_YEARS):
                raise InvalidInputError("expires_at", f"at most {MAX_EXPIRY_YEARS} years ahead")
            return now + span
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise InvalidInputError(
                "expires_at", f"not understood ({value.strip()[:40]!r}): {_EXPIRY_RULE}"
            ) from None
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    try:
        if moment - now > timedelta(days=365 * MAX_EXPIRY_YEARS):
            raise InvalidInputError("expires_at", f"at most {MAX_EXPIRY_YEARS} years ahead")
    except OverflowError:
        raise InvalidInputError("expires_at", f"at most {MAX_EXPIRY_YEARS} years ahead") from None
    return moment


@dataclass(frozen=True)
class ChainLink:
    """One entry in a supersedes chain, `depth` steps from the entry asked about."""

    id: str
    title: str | None
    depth: int
    created_at: datetime
    deleted: bool
    expired: bool
