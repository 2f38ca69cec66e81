"""`pgrecall` commands run in the test's own process, for tests about what a command answers.

The same Typer app `python -m pgrecall` runs, given the same arguments and exactly the PGRECALL_*
variables of `env`, without the interpreter start and imports (about a second) a subprocess pays per
command. What the command logs reaches its stderr as the command's own log handler (WARNING, INFO
with --verbose) would print it there. Tests about the process itself (a terminal, a pipe, signals,
an embedded server a command starts) use tests.helpers.subprocess_server.run_pgrecall instead.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from typer.testing import CliRunner

from pgrecall.cli.root import PROG_NAME
from pgrecall.cli.root import app as cli_app


@dataclass(frozen=True)
class Ran:
    """What a command run in this process left, named as subprocess.run names it."""

    returncode: int
    stdout: str
    stderr: str


class _OnStderr(logging.Handler):
    """Each record on sys.stderr as it is when the record is logged: the command's own, in order."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(f"{record.levelname} {record.name}: {record.getMessage()}\n")


@contextmanager
def _logged(level: int) -> Iterator[None]:
    """Records logged meanwhile at `level` and above go to stderr, as the command's log handler sends them."""
    root = logging.getLogger()
    handler, before = _OnStderr(level), root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(before)


def run_here(env: dict[str, str], *args: str) -> Ran:
    """`pgrecall ARGS` in this process with `env`'s PGRECALL_* variables: its exit code, stdout and stderr.

    An exception the command lets escape, a traceback in a process of its own, is raised here.
    """
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("PGRECALL_") and k not in env}
    level = logging.INFO if {"-v", "--verbose"} & set(args) else logging.WARNING
    with _logged(level):
        result = CliRunner().invoke(cli_app, list(args), env={**unset, **env}, prog_name=PROG_NAME)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


def new_token(env: dict[str, str], owner: str) -> str:
    """A new token for `owner` in `env`'s database, made as `pgrecall token create` makes it."""
    made = run_here(env, "token", "create", "--owner", owner)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()
