"""`pgrecall debug search-sql`: the exact statement and parameters a search runs, and its plan."""

from __future__ import annotations

import json
import os

from tests.helpers.cli import run_here


def test_search_sql_prints_the_statement_its_parameters_and_its_plan(db_url: str) -> None:
    env = {**os.environ, "PGRECALL_DATABASE_URL": db_url, "PGRECALL_MODELS": "in-process"}
    shown = run_here(env, "debug", "search-sql", "backups at night", "--mode", "lexical", "--top-k", "3")
    assert shown.returncode == 0, shown.stderr
    statement, parameters = shown.stdout.split("-- parameters\n")
    assert statement.lstrip().upper().startswith("WITH") and "FROM entries e" in statement
    bound = json.loads(parameters)
    assert bound["query"] == "backups at night" and bound["top_k"] == 3 and bound["qvec"] is None
    assert "f_document" in bound and "f_version" in bound  # every filter of the compiler is bound
    planned = run_here(env, "debug", "search-sql", "backups at night", "--mode", "lexical", "--explain")
    assert planned.returncode == 0, planned.stderr
    assert "Execution Time" in planned.stdout
    bad = run_here(env, "debug", "search-sql", "x", "--mode", "fast")
    assert bad.returncode != 0 and bad.stderr.startswith("pgrecall: mode:"), bad.stderr
