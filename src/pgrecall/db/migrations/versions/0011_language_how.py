"""language_how, language_confidence: how each entry's stemming language was chosen

Revision ID: 0011_language_how
Revises: 0010_entry_links
Create Date: 2026-11-25

A reader of an entry (the web page, an operator) asks why it is stemmed as it is: given by the
writer, detected (with lingua's confidence), 'simple' because the text was too short or unsure,
or 'simple' because the language is not stemmable here. Written with the language on every add,
on an update that changes the language, and by redetect. Existing and imported rows keep NULL
(not recorded). The table-wide grants of 0005 cover the new columns.
"""

from alembic import op

revision = "0011_language_how"
down_revision = "0010_entry_links"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE entries ADD COLUMN language_how text, ADD COLUMN language_confidence real")
    op.execute(
        "ALTER TABLE entries ADD CONSTRAINT entries_language_how_known "
        "CHECK (language_how IS NULL OR language_how IN ('explicit', 'detected', 'default', 'unsupported'))"
    )
    op.execute(
        "ALTER TABLE entries ADD CONSTRAINT entries_language_confidence_range "
        "CHECK (language_confidence IS NULL OR language_confidence BETWEEN 0 AND 1)"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE entries DROP COLUMN language_confidence, DROP COLUMN language_how")
