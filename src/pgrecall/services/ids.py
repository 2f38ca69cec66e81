"""Entry ids as callers give them: a whole UUID, or a unique part of one (what the front ends show).

Ids are UUIDv7: their first 12 hex digits are the creation millisecond, shared by everything
written within a minute for 8 digits, so the CLI and the web page show the random end (8 digits)
and a part may come from either end. A part that matches several entries is refused, naming them,
never guessed.
"""

from __future__ import annotations

import uuid

from pgrecall.errors import InvalidInputError, NotFoundError
from pgrecall.store.entries import EntryStore

# What the front ends show, and the shortest part a tool takes: 32 random bits, so a mistyped or
# foreign part almost never lands on another of the owner's entries.
SHORT_ID = 8
# Typed by hand at the CLI, where the person sees which entry it was: 4 digits (git's minimum too).
MIN_TYPED_PART = 4
_SHOWN_CANDIDATES = 5
_HEX = frozenset("0123456789abcdef")


def id_digits(given: str, field: str = "id", minimum: int = SHORT_ID) -> str:
    """The hex digits of a partial id (dashes dropped), or InvalidInputError naming the field."""
    digits = given.strip().replace("-", "").lower()
    rule = f"must be a UUID or at least {minimum} hex digits of its start or end"
    if not digits or not set(digits) <= _HEX or len(digits) > 32:
        raise InvalidInputError(field, f"{rule}, got {given[:60]!r}")
    if len(digits) < minimum:
        raise InvalidInputError(field, f"{rule}; {given!r} is too short")
    return digits


def resolve_id(
    store: EntryStore,
    owner: str,
    given: str | uuid.UUID,
    *,
    field: str = "id",
    include_deleted: bool = True,
    minimum: int = SHORT_ID,
) -> uuid.UUID:
    """The one entry of `owner` whose id is `given` or starts or ends with it (a UUID is taken as is)."""
    if isinstance(given, uuid.UUID):
        return given
    if not isinstance(given, str):
        raise InvalidInputError(field, "must be a UUID string")
    try:
        return uuid.UUID(given.strip())
    except ValueError:
        pass
    digits = id_digits(given, field, minimum)
    found = store.ids_matching(owner, digits, include_deleted=include_deleted, limit=_SHOWN_CANDIDATES + 1)
    if not found:
        raise NotFoundError(f"{field}: no entry whose id starts or ends with {given.strip()}")
    if len(found) > 1:
        shown = ", ".join(str(i) for i in found[:_SHOWN_CANDIDATES])
        more = ", …" if len(found) > _SHOWN_CANDIDATES else ""
        raise InvalidInputError(
            field, f"{given.strip()!r} matches several entries ({shown}{more}); give more digits"
        )
    return found[0]
