"""The package's shape: small modules and a small root.

The layers and the absence of import cycles are import-linter contracts in pyproject.toml
(`lint-imports`, run by .ci/run).
"""

from __future__ import annotations

import warnings
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "pgrecall"


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = path
    return out


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
