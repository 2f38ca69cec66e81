import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from pgrecall.config import Settings, default_home


def test_defaults_and_env_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGRECALL_OWNER", "alice")
    monkeypatch.setenv("PGRECALL_MAX_TEXT_CHARS", "5000")
    s = Settings()
    assert s.owner == "alice" and s.max_text_chars == 5000 and s.embedded


def test_root_home_is_outside_root() -> None:
    home = default_home()
    if os.geteuid() == 0:
        assert home == Path("/var/lib/pgrecall")
    else:
        assert str(home).endswith("pgrecall")


def test_secrets_are_masked() -> None:
    s = Settings(database_url="postgresql://bob:hunter2@db:5432/x", embedding_api_key="sk-123")
    shown = s.masked()
    assert "hunter2" not in str(shown) and "sk-123" not in str(shown)
    assert shown["database_url"] == "postgresql://bob:********@db:5432/x"


def test_every_field_is_described() -> None:
    for name, field in Settings.model_fields.items():
        assert field.description, name


def test_bad_url_is_refused() -> None:
    with pytest.raises(ValidationError, match="must start with postgresql://"):
        Settings(database_url="mysql://x")
