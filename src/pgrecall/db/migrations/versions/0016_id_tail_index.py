"""An index on the end of each entry's id, for ids given by their last digits

Revision ID: 0016_id_tail_index
Revises: 0015_documents
Create Date: 2026-11-27

The CLI and the web page show an id's last 8 hex digits (a UUIDv7 starts with its creation time,
shared by everything written within a minute), and every tool takes them. Ids that start with a
part are a range of the primary key; ids that end with one had no index, so resolving a part
scanned all of the owner's ids (~40-70 ms at 100k entries). The id's text reversed, in the "C"
collation, turns "ends with" into a range (store/entries_sql.SQL_IDS_MATCHING).
"""

from alembic import op

revision = "0016_id_tail_index"
down_revision = "0015_documents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute('CREATE INDEX entries_id_tail ON entries (owner, (reverse(id::text) COLLATE "C"))')


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS entries_id_tail")
