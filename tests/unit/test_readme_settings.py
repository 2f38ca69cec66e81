"""Issue 16: the configuration table (docs/configuration.md, linked from the README) documents every
PGRECALL_* variable pgrecall reads."""

from __future__ import annotations

import re
from pathlib import Path

from pgrecall.config import Settings

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def _table_rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in CONFIGURATION.splitlines():
        match = re.match(r"\| `(PGRECALL_[A-Z0-9_]+)` \| ([^|]*) \|", line)
        if match:
            rows[match.group(1)] = match.group(2).strip()
    return rows


def test_every_setting_has_its_own_row_with_its_default() -> None:
    rows = _table_rows()
    for name, field in Settings.model_fields.items():
        variable = f"PGRECALL_{name.upper()}"
        assert variable in rows, f"{variable} is missing from docs/configuration.md's table"
        default = field.default
        if name == "home":
            continue  # depends on the user; the row names both cases
        shown = rows[variable].strip("`")
        if default is None:
            assert shown in ("unset", "empty"), (variable, shown)
        elif isinstance(default, bool):
            assert shown == str(default).lower(), (variable, shown)
        elif isinstance(default, float) and default.is_integer():
            assert shown == str(int(default)), (variable, shown)
        elif default == "":
            assert shown == "empty", (variable, shown)
        else:
            assert shown == str(default), (variable, shown)


def test_every_variable_the_code_reads_is_documented() -> None:
    code = "\n".join(
        path.read_text(encoding="utf-8")
        for folder in ("src/pgrecall", "docker")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".sh") and path.is_file()
    )
    # A hook that only tests set, never a user.
    test_only = {"PGRECALL_WORKER_TEST_LOAD_DELAY_S"}
    # A name followed by `_` or `{` is a prefix the code completes (f"PGRECALL_DETECT_{…}").
    named = set(re.findall(r"PGRECALL_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_{])", code)) - test_only
    missing = sorted(v for v in named if f"`{v}`" not in CONFIGURATION)
    assert not missing, f"read by the code but not in docs/configuration.md: {missing}"
