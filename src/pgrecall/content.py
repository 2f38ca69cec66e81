"""Text normalization and the content hash that citations pin."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WHITESPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Unicode NFC, every whitespace run folded to one space, trimmed."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(text: str) -> str:
    """'sha256:' + hex digest of the normalized text (the entry body)."""
    return "sha256:" + hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()
