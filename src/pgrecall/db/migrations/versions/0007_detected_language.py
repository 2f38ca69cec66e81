"""detected_language: the language of an entry stored as 'simple' because it cannot be stemmed

Revision ID: 0007_detected_language
Revises: 0006_narrow_tag_operators
Create Date: 2026-11-23

A Japanese, Chinese, Korean or Thai text (or one a caller declares in a language PostgreSQL
has no config for) is stored with the 'simple' config. The column keeps the ISO 639-1 code
that was recognised, so get/list show it and stats counts such entries: an operator sees
when a text-search config for that language would help. Existing rows keep NULL (unknown).
The table-wide grants of 0005 cover the new column; the row-level policy is unchanged.
"""

from alembic import op

revision = "0007_detected_language"
down_revision = "0006_narrow_tag_operators"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE entries ADD COLUMN detected_language text")
    op.execute(
        "ALTER TABLE entries ADD CONSTRAINT entries_detected_language_iso "
        "CHECK (detected_language IS NULL OR detected_language ~ '^[a-z]{2}$')"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE entries DROP COLUMN detected_language")
