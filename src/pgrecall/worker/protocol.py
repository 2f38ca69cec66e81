"""Wire format of the model worker: length-prefixed frames with a JSON header and a binary body.

A frame is ``MAGIC | header length (u32 BE) | body length (u32 BE) | header | body``. The header is a
UTF-8 JSON object; the body carries vectors as little-endian float32 rows. Nothing is ever unpickled:
the socket is private to one user, but every frame is validated as if it came from a stranger.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

# A detect request carries the domain's thresholds; re-exported for the worker's modules.
from pgrecall.domain.language import Thresholds as Thresholds

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAGIC = b"PGW1"
# Reported by `status`; a starter replaces a worker that speaks another version (after an upgrade).
PROTOCOL_VERSION = 1
_PREFIX = struct.Struct(">4sII")
MAX_HEADER_BYTES = 32 * 1024 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
# Per request: bounds the memory one request can pin in the worker.
MAX_TEXTS = 4096
MAX_TEXT_CHARS = 1_000_000
MAX_CODES = 200
VECTOR_DTYPE = "<f4"

EMBED_OPS = frozenset({"queries", "passages"})
OPS = frozenset({"status", "warm", "queries", "passages", "detect", "shutdown"})


class ProtocolError(Exception):
    """The peer sent a frame that breaks the protocol; the connection cannot be trusted further."""


class BusyError(ProtocolError):
    """The worker is at a cap (connections or frame bytes) for this peer; retry later."""


class PeerClosedError(ProtocolError):
    """The peer closed the connection in the middle of a frame."""


@dataclass(frozen=True)
class Frame:
    """One decoded frame."""

    header: dict[str, Any]
    body: bytes = b""


def encode_frame(header: dict[str, Any], body: bytes = b"") -> bytes:
    """Serialize one frame; refuses what the receiving side would refuse."""
    try:
        raw = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError as exc:
        # A lone surrogate (from a broken decode upstream) has no UTF-8 form; the engine could not
        # embed it either.
        raise ProtocolError(f"text is not valid Unicode: {exc.reason} at {exc.start}") from exc
    if len(raw) > MAX_HEADER_BYTES:
        raise ProtocolError(f"header of {len(raw)} bytes exceeds {MAX_HEADER_BYTES}")
    if len(body) > MAX_BODY_BYTES:
        raise ProtocolError(f"body of {len(body)} bytes exceeds {MAX_BODY_BYTES}")
    return _PREFIX.pack(MAGIC, len(raw), len(body)) + raw + body


def _read_exactly(read: Callable[[int], bytes], n: int, started: bool) -> bytes | None:
    chunks: list[bytes] = []
    got = 0
    while got < n:
        chunk = read(min(n - got, 1 << 20))
        if not chunk:
            if not started and got == 0:
                return None
            raise PeerClosedError(f"connection closed after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(
    read: Callable[[int], bytes],
    *,
    max_header: int = MAX_HEADER_BYTES,
    max_body: int = MAX_BODY_BYTES,
    admit: Callable[[int], None] | None = None,
) -> Frame | None:
    """Read one frame through `read` (socket.recv or a pipe's read); None on a clean end of stream.

    `admit(size)` is called with the frame's announced size once it is within the caps and before
    any of it is read: it may claim memory for it, or refuse by raising (BusyError).
    """
    prefix = _read_exactly(read, _PREFIX.size, started=False)
    if prefix is None:
        return None
    magic, header_len, body_len = _PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise ProtocolError("bad magic: not a pgrecall worker frame")
    # Checked before reading, so a hostile length never makes us allocate it.
    if header_len > max_header:
        raise ProtocolError(f"header of {header_len} bytes exceeds {max_header}")
    if body_len > max_body:
        raise ProtocolError(f"body of {body_len} bytes exceeds {max_body}")
    if admit is not None:
        admit(header_len + body_len)
    raw = _read_exactly(read, header_len, started=True) or b""
    body = (_read_exactly(read, body_len, started=True) or b"") if body_len else b""
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"header is not UTF-8 JSON: {exc}") from exc
    except RecursionError as exc:
        raise ProtocolError("header is nested too deeply") from exc
    if not isinstance(header, dict):
        raise ProtocolError("header must be a JSON object")
    return Frame(header, body)


# -- vectors -----------------------------------------------------------------------


def encode_vectors(matrix: npt.ArrayLike) -> tuple[dict[str, Any], bytes]:
    """Header fields and body for an (n, dim) matrix of vectors."""
    import numpy as np  # imported on use: a fresh worker answers `status` before numpy is loaded

    arr = np.ascontiguousarray(np.asarray(matrix, dtype=VECTOR_DTYPE))
    if arr.ndim != 2:
        raise ValueError(f"expected an (n, dim) matrix, got shape {arr.shape}")
    return {"n": int(arr.shape[0]), "dim": int(arr.shape[1]), "dtype": VECTOR_DTYPE}, arr.tobytes()


def decode_vectors(header: dict[str, Any], body: bytes) -> npt.NDArray[np.float32]:
    """The (n, dim) float32 matrix a reply carries; ProtocolError if header and body disagree."""
    import numpy as np

    n, dim = header.get("n"), header.get("dim")
    if not isinstance(n, int) or not isinstance(dim, int) or isinstance(n, bool) or isinstance(dim, bool):
        raise ProtocolError("vector reply needs integer n and dim")
    if n < 0 or dim < 1 or header.get("dtype") != VECTOR_DTYPE:
        raise ProtocolError("vector reply needs integer n >= 0, dim >= 1 and dtype <f4")
    if len(body) != n * dim * 4:
        raise ProtocolError(f"vector body has {len(body)} bytes, expected {n * dim * 4}")
    return np.frombuffer(body, dtype=VECTOR_DTYPE).reshape(n, dim).astype(np.float32)


# -- request validation ---------------------------------------------------------------


def _is_int(value: object) -> bool:
    # bool is an int subclass; true/false must not pass for a count.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (isinstance(value, int | float)) and not isinstance(value, bool)


def check_texts(value: object, field: str = "texts") -> list[str]:
    """A list of at most MAX_TEXTS strings of at most MAX_TEXT_CHARS each."""
    if not isinstance(value, list):
        raise ProtocolError(f"{field} must be a list of strings")
    if len(value) > MAX_TEXTS:
        raise ProtocolError(f"{field} has {len(value)} items, at most {MAX_TEXTS} per request")
    for item in value:
        if not isinstance(item, str):
            raise ProtocolError(f"{field} must contain strings only")
        if len(item) > MAX_TEXT_CHARS:
            raise ProtocolError(f"a text of {len(item)} characters exceeds {MAX_TEXT_CHARS}")
    return value


def check_codes(value: object) -> tuple[str, ...]:
    """ISO 639-1 codes: a list of 2-3 lowercase ASCII letters, sorted and deduplicated."""
    if not isinstance(value, list) or len(value) > MAX_CODES:
        raise ProtocolError(f"codes must be a list of at most {MAX_CODES} ISO 639-1 codes")
    for code in value:
        if not (isinstance(code, str) and 2 <= len(code) <= 3 and code.isascii() and code.isalpha()):
            raise ProtocolError(f"bad language code {code!r}")
    return tuple(sorted({code.lower() for code in value}))


def check_thresholds(header: dict[str, Any]) -> Thresholds:
    """The detection thresholds of a request (defaults where absent), range-checked."""
    raw = header.get("thresholds", {})
    if not isinstance(raw, dict):
        raise ProtocolError("thresholds must be an object")
    unknown = set(raw) - set(Thresholds().as_dict())
    if unknown:
        raise ProtocolError(f"unknown thresholds {sorted(unknown)}")
    merged = {**Thresholds().as_dict(), **raw}
    min_letters, min_conf = merged["min_letters"], merged["min_confidence"]
    min_ratio, max_chars = merged["min_ratio"], merged["max_chars"]
    if not _is_int(min_letters) or not 0 <= min_letters <= 100_000:
        raise ProtocolError("min_letters must be an integer in [0, 100000]")
    if not _is_number(min_conf) or not 0.0 <= min_conf <= 1.0:
        raise ProtocolError("min_confidence must be a number in [0, 1]")
    if not _is_number(min_ratio) or not 1.0 <= min_ratio <= 1000.0:
        raise ProtocolError("min_ratio must be a number in [1, 1000]")
    if not _is_int(max_chars) or not 1 <= max_chars <= MAX_TEXT_CHARS:
        raise ProtocolError(f"max_chars must be an integer in [1, {MAX_TEXT_CHARS}]")
    return Thresholds(int(min_letters), float(min_conf), float(min_ratio), int(max_chars))


def check_request(header: dict[str, Any]) -> str:
    """The request's op, after checking the fields that op needs; ProtocolError otherwise."""
    op = header.get("op")
    if not isinstance(op, str) or op not in OPS:
        raise ProtocolError(f"unknown op {op!r}; expected one of {sorted(OPS)}")
    if op in EMBED_OPS or op == "detect":
        check_texts(header.get("texts"))
    if op in EMBED_OPS and header.get("model") is not None and not isinstance(header["model"], str):
        raise ProtocolError("model must be a string")
    if op == "detect" or (op == "warm" and "codes" in header):
        check_codes(header.get("codes"))
        check_thresholds(header)
    if op == "warm":
        what = header.get("what", ["embedder"])
        if not isinstance(what, list) or not set(what) <= {"embedder", "detector"}:
            raise ProtocolError("warm.what must be a list among 'embedder', 'detector'")
    return op


def error_reply(message: str, kind: str = "bad_request") -> dict[str, Any]:
    """Header of an error reply."""
    return {"ok": False, "kind": kind, "error": message}
