"""Rules of the activity views: the `since` of a window (ISO time or a duration) and their cursors."""

from __future__ import annotations

import base64
import json
import re
import uuid
from datetime import UTC, datetime, timedelta

from pgrecall.errors import InvalidInputError

MAX_WINDOW_DAYS = 3650
MAX_ACTIVITY_LIMIT = 100
MAX_TAG_LIMIT = 500
MAX_TAG_PREFIX_CHARS = 100
MAX_CURSOR_CHARS = 512
CHANGES = ("added", "updated", "deleted", "linked")

_DURATION = re.compile(r"(\d{1,6})\s*([mhdw])")
_UNIT = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
_SINCE_RULE = "an ISO 8601 time (e.g. 2026-11-01T09:00:00Z) or a duration back from now: 30m, 24h, 7d, 2w"


def time_or_span(value: object, field: str, rule: str) -> datetime | timedelta | None:
    """An ISO 8601 time (no offset = UTC) or a span such as 30m, 24h, 7d, 2w; None when blank."""
    text = value.strip().lower() if isinstance(value, str) else ""
    if not text:
        return None
    duration = _DURATION.fullmatch(text)
    if duration is not None:
        return int(duration.group(1)) * _UNIT[duration.group(2)]
    assert isinstance(value, str)
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInputError(field, f"not understood ({value.strip()[:40]!r}): {rule}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_since(value: str, now: datetime) -> datetime:
    """The start of a window: an ISO 8601 time (no offset = UTC) or a duration before `now`."""
    given = time_or_span(value, "since", _SINCE_RULE)
    if given is None:
        raise InvalidInputError("since", f"is required: {_SINCE_RULE}")
    if isinstance(given, timedelta):
        if given > timedelta(days=MAX_WINDOW_DAYS):
            raise InvalidInputError("since", f"at most {MAX_WINDOW_DAYS} days back")
        return now - given
    return given


def encode_activity_cursor(at: datetime, entry_id: uuid.UUID, change: str) -> str:
    """Opaque cursor after one change, in (at, id, change) descending order."""
    raw = json.dumps([at.isoformat(), str(entry_id), change], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_activity_cursor(cursor: str) -> tuple[datetime, uuid.UUID, str]:
    """Inverse of encode_activity_cursor; InvalidInputError on anything else."""
    try:
        if len(cursor) > MAX_CURSOR_CHARS:
            raise ValueError("too long")
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, entry_id, change = json.loads(raw)
        decoded = datetime.fromisoformat(at), uuid.UUID(entry_id), str(change)
    except (ValueError, TypeError, AttributeError):  # any shape of garbage: not one of ours
        decoded = None
    if decoded is None or decoded[2] not in CHANGES or decoded[0].tzinfo is None:
        raise InvalidInputError("cursor", "not a cursor returned by recent_activity; omit it to start over")
    return decoded
