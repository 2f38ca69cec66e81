"""The package's shape: layers import only downward, no cycles, small modules, a small root."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "pgrecall"
# Higher number = higher layer; a module may import its own layer or lower ones.
LAYERS = {
    "errors": 0,
    "config": 0,
    "domain": 1,
    "db": 1,
    "embeddings": 2,
    "chunking": 2,
    "store": 2,
    "worker": 2,
    "services": 3,
    "app": 4,
    "mcp": 5,
    "web": 5,
    "cli": 6,
    "evaluation": 6,
}
ALLOWED_SIDEWAYS = {("cli", "mcp"), ("cli", "evaluation")}  # serve starts the server; eval/bench run it


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = path
    return out


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pgrecall"):
            # `from pkg import submodule` imports the submodule, not the package's own code.
            submodules = {f"{node.module}.{a.name}" for a in node.names} & set(_modules())
            found.update(submodules or {node.module})
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("pgrecall"))
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_layers_import_only_downward() -> None:
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        mine = _layer(name)
        if mine not in LAYERS:
            continue
        for imported in _imports(path):
            theirs = _layer(imported)
            if theirs not in LAYERS or theirs == mine or (mine, theirs) in ALLOWED_SIDEWAYS:
                continue
            if LAYERS[theirs] > LAYERS[mine] or (theirs == "evaluation" and mine != "cli"):
                wrong.append(f"{name} imports {imported}")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {
        name: {i for i in _imports(path) if i in modules and i != name} for name, path in modules.items()
    }
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                pytest.fail("import cycle: " + " -> ".join([*trail, node, nxt]))
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


# Module size follows concepts: past WARN_LINES a module is worth a look (a warning), past
# MAX_LINES it holds more than one concept (a failure).
WARN_LINES, MAX_LINES = 400, 600


def test_small_modules_and_a_small_root() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in _modules().items()}
    long = {name: n for name, n in sizes.items() if n > WARN_LINES}
    if long:
        warnings.warn(f"modules over {WARN_LINES} lines, worth a look: {long}", stacklevel=1)
    assert not {name: n for name, n in long.items() if n > MAX_LINES}
    root = [p.name for p in SRC.glob("*.py")]
    assert len(root) <= 6, root
