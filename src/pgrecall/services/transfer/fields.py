"""Reading the fields of an import line: optional strings, timestamps, versions, vectors."""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Any

from pgrecall.domain.validation import parse_id
from pgrecall.errors import InvalidInputError

MAX_MODEL_CHARS = 200
MAX_VECTOR_DIM = 16_000


def opt_str(obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(name, f"must be a string or null, got {type(value).__name__}")
    return value


def timestamp(obj: dict[str, Any], name: str) -> datetime | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(name, "must be an ISO 8601 timestamp string or null")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(name, f"not an ISO 8601 timestamp: {value[:60]!r}") from None
    if parsed.tzinfo is None:
        raise InvalidInputError(name, "needs a UTC offset (e.g. +00:00)")
    return parsed


def version(obj: dict[str, Any]) -> int | None:
    value = obj.get("version")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**31 - 1:
        raise InvalidInputError("version", f"must be a positive integer, got {value!r}")
    return value


def vector(obj: dict[str, Any]) -> tuple[list[float] | None, str | None, int | None]:
    values, model, dim = obj.get("embedding"), obj.get("embedding_model"), obj.get("embedding_dim")
    if values is None:
        if model is not None:
            raise InvalidInputError("embedding_model", "is set but embedding is null")
        return None, None, None
    if not isinstance(values, list) or not 1 <= len(values) <= MAX_VECTOR_DIM:
        raise InvalidInputError("embedding", f"must be a list of 1 to {MAX_VECTOR_DIM} numbers")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values):
        raise InvalidInputError("embedding", "must hold only finite numbers")
    if not isinstance(model, str) or not model.strip() or len(model) > MAX_MODEL_CHARS:
        raise InvalidInputError("embedding_model", "is required with embedding (the model that made it)")
    if dim is not None and dim != len(values):
        raise InvalidInputError("embedding_dim", f"is {dim!r} but embedding has {len(values)} numbers")
    return [float(v) for v in values], model, len(values)


def opt_id(obj: dict[str, Any], name: str) -> uuid.UUID | None:
    """An optional UUID field."""
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(name, f"must be a UUID string or null, got {type(value).__name__}")
    return parse_id(value, name)
