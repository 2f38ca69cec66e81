"""The Citus-safe statistics trigger (db/citus_sql.py) counts what migration 0002's trigger counts.

The two bodies differ in form only (transition tables read into arrays first, random() for the
sequence); which rows count, with which sign, and how the deltas are grouped must be the same
text. tests/integration/test_citus.py checks the Citus form's counts against a recount.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from pgrecall.db import citus_sql

MIGRATION = Path(__file__).resolve().parents[2] / "src/pgrecall/db/migrations/versions/0002_lexical_stats.py"


def _migration_trigger() -> str:
    spec = importlib.util.spec_from_file_location("lexical_stats_0002", MIGRATION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module._TRIGGER_FN)


def _flat(text: str) -> str:
    # One line, single spaces, the changed rows named alike: the migration reads them from a CTE,
    # the Citus form from arrays.
    text = " ".join(text.split())
    text = text.replace(
        "FROM unnest(owners, languages, tsvs, signs) AS c(owner, language, tsv, sign)", "FROM <changes>"
    )
    text = re.sub(r"FROM changes( c)?\b", "FROM <changes>", text)
    return re.sub(r"\bc\.", "", text)


def _between(text: str, start: str, end: str) -> str:
    found = re.search(re.escape(start) + r".*?" + re.escape(end), text)
    assert found is not None, (start, end)
    return found.group(0)


def test_both_triggers_count_the_same_rows_the_same_way() -> None:
    migration, citus = _flat(_migration_trigger()), _flat(citus_sql.STATS_TRIGGER)
    # An UPDATE counts a row out and in again only when its language, text or liveness changed.
    update = _between(
        migration, "SELECT o.owner, o.language, o.tsv, -1 AS sign FROM old_rows o", "o.tsv = n.tsv)"
    )
    assert update in citus
    # INSERT counts the live new rows in, DELETE the live old rows out.
    assert "SELECT owner, language, tsv, 1 AS sign FROM new_rows WHERE deleted_at IS NULL" in migration
    assert "array_agg(1) INTO owners, languages, tsvs, signs FROM new_rows WHERE deleted_at IS NULL" in citus
    assert "SELECT owner, language, tsv, -1 AS sign FROM old_rows WHERE deleted_at IS NULL" in migration
    assert "array_agg(-1) INTO owners, languages, tsvs, signs FROM old_rows WHERE deleted_at IS NULL" in citus
    # The same deltas: per lexeme and per (owner, language), the zero sums left out.
    for start, end in (
        ("INSERT INTO lexical_df_delta", "HAVING sum(sign) <> 0"),
        ("INSERT INTO lexical_docs_delta", "HAVING sum(sign) <> 0 OR sum(sign * length(tsv)) <> 0"),
    ):
        assert _between(migration, start, end) == _between(citus, start, end)
    # Deltas are merged under READ COMMITTED only, after 256+ rows or every 64th statement.
    for text in (migration, citus):
        assert "current_setting('transaction_isolation') = 'read committed'" in text
        assert ">= 256" in text and "64" in text
